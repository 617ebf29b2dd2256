#!/usr/bin/env bash
# config_round_trip.sh IPU-SIM DIR [OPTIONS...]: the configuration `ipu-sim --config-dump
# OPTIONS` prints, read back with --config (from the default preset), dumps the same text, and
# a run reads it (issue 14: the dump's preset line and units were refused).
set -eu
sim=$1 dir=$2
shift 2
"$sim" --config-dump "$@" > "$dir/dumped.cfg"
"$sim" --config-dump --config "$dir/dumped.cfg" > "$dir/reread.cfg"
diff "$dir/dumped.cfg" "$dir/reread.cfg"
grep -q "^preset = " "$dir/dumped.cfg"
"$sim" demo --config "$dir/dumped.cfg" | grep -q "^tile cycles"
echo "round trip ok: $(wc -l < "$dir/dumped.cfg") lines"

#!/usr/bin/env bash
# same_for_threads.sh OUT_PREFIX COMMAND [ARGS...]: runs COMMAND with --threads 1, 2 and 4 (and
# --stats) and fails unless every run prints the same output (host timings aside), exits with
# the same status and writes the same statistics: tile compute on host threads changes nothing
# but the host time.
set -u
out=$1
shift
for t in 1 2 4; do
  "$@" --threads "$t" --stats "$out.t$t.json" > "$out.t$t.raw" 2>&1
  echo "exit status $?" >> "$out.t$t.raw"
  # Host timings: ipu-sim's summary lines, the examples' "host"/"simulator" lines and columns.
  grep -vE "^(host time|simulator speed|host wall time) |^(host|simulator) +[0-9]" "$out.t$t.raw" |
    sed -E 's/ +[0-9.]+ s$//' > "$out.t$t.txt"
done
grep -q "tile cycles\|cycles" "$out.t1.txt" || { echo "the run printed no cycle count:"; cat "$out.t1.raw"; exit 1; }
status=0
for t in 2 4; do
  if ! cmp -s "$out.t1.txt" "$out.t$t.txt"; then
    echo "output differs between --threads 1 and --threads $t:"; diff "$out.t1.txt" "$out.t$t.txt" | head -20
    status=1
  fi
  if [[ -s $out.t1.json ]] && ! cmp -s "$out.t1.json" "$out.t$t.json"; then
    echo "statistics differ between --threads 1 and --threads $t"; status=1
  fi
done
cat "$out.t1.txt"
exit $status

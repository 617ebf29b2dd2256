#!/usr/bin/env bash
# same_for.sh OUT_PREFIX OPTION "VALUE..." COMMAND [ARGS...]: runs COMMAND with OPTION set to
# each VALUE in turn (and --stats) and fails unless every run prints the same output (host
# timings aside), exits with the same status and writes the same statistics. For options that
# change nothing but the host time: --threads, --interpreter.
set -u
out=$1 option=$2 values=($3)
shift 3
for v in "${values[@]}"; do
  "$@" "$option" "$v" --stats "$out.$v.json" > "$out.$v.raw" 2>&1
  echo "exit status $?" >> "$out.$v.raw"
  # Host timings: ipu-sim's summary lines, the examples' "host"/"simulator" lines and columns.
  grep -vE "^(host time|simulator speed|host wall time) |^(host|simulator) +[0-9]" "$out.$v.raw" |
    sed -E 's/ +[0-9.]+ s$//' > "$out.$v.txt"
done
first=${values[0]}
grep -q "tile cycles\|cycles" "$out.$first.txt" || { echo "the run printed no cycle count:"; cat "$out.$first.raw"; exit 1; }
status=0
for v in "${values[@]:1}"; do
  if ! cmp -s "$out.$first.txt" "$out.$v.txt"; then
    echo "output differs between $option $first and $option $v:"; diff "$out.$first.txt" "$out.$v.txt" | head -20
    status=1
  fi
  if [[ -s $out.$first.json ]] && ! cmp -s "$out.$first.json" "$out.$v.json"; then
    echo "statistics differ between $option $first and $option $v"; status=1
  fi
done
cat "$out.$first.txt"
exit $status

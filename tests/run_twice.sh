#!/bin/sh
# Runs an ipu-sim command twice with --memory-hash, --stats and --trace and checks the two runs
# agree: the same statistics file, memory hash and tile cycles. The statistics and the trace
# must be valid JSON, and CHECK (a Python expression over s, the statistics) must hold.
# usage: run_twice.sh OUT_PREFIX CHECK IPU-SIM run IMAGE [OPTION...]
set -e
out=$1
check=$2
shift 2
for i in 1 2; do
  "$@" --memory-hash --stats "$out$i.json" --trace "$out$i.trace.json" |
    grep -E 'memory hash|tile cycles' > "$out$i.txt"
done
python3 -c "import json, sys
s = json.load(open(sys.argv[1]))
json.load(open(sys.argv[2]))
assert $check, 'does not hold: ' + sys.argv[3]" "${out}1.json" "${out}1.trace.json" "$check"
cmp "${out}1.json" "${out}2.json"
cmp "${out}1.txt" "${out}2.txt"
grep -q 'memory hash' "${out}1.txt"

#!/usr/bin/env bash
# sweep_check.sh IPU-SIM IMAGE DIR: sweeps sync.internal-cycles over 150 and 600 on the 64-tile
# reduction tree (7 supersteps) and checks the CSV against the hand-derived difference: each
# superstep's sync takes 450 cycles more, so the run takes 7 x 450 = 3150 cycles more; the JSON
# lists both points with their values, and --jobs 2 gives the same table as --jobs 1.
set -eu
sim=$1 image=$2 dir=$3
"$sim" sweep --vary sync.internal-cycles=150,600 --csv "$dir/sweep1.csv" --json "$dir/sweep.json" \
  "$image" --chip.tiles 64 > "$dir/sweep1.txt"
"$sim" sweep -j 2 --vary sync.internal-cycles=150,600 --csv "$dir/sweep2.csv" \
  "$image" --chip.tiles 64 > "$dir/sweep2.txt"
cat "$dir/sweep1.txt"
cmp "$dir/sweep1.csv" "$dir/sweep2.csv"
cmp "$dir/sweep1.txt" "$dir/sweep2.txt"
python3 - "$dir/sweep1.csv" "$dir/sweep.json" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r["sync.internal-cycles"] for r in rows] == ["150", "600"], rows
assert all(r["supersteps"] == "7" and r["exit_status"] == "0" for r in rows), rows
assert int(rows[1]["cycles"]) - int(rows[0]["cycles"]) == 7 * 450, rows
j = json.load(open(sys.argv[2]))
assert [p["values"]["sync.internal-cycles"] for p in j["points"]] == ["150", "600"], j
assert j["points"][1]["summary"]["cycles"] == int(rows[1]["cycles"]), j
PY

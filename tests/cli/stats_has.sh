#!/usr/bin/env bash
# stats_has.sh FILE CHECK COMMAND...: runs COMMAND, which writes the statistics JSON FILE; the
# file must parse and CHECK (a Python expression over s, the statistics) must hold.
set -eu
file=$1 check=$2
shift 2
rm -f "$file"
"$@" > /dev/null
python3 - "$file" "$check" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
assert eval(sys.argv[2]), "does not hold: " + sys.argv[2]
PY
echo "ok: $check"

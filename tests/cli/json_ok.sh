#!/usr/bin/env bash
# json_ok.sh FILE KEY...: FILE must parse as JSON and contain every top-level KEY.
set -u
file=$1
shift
python3 - "$file" "$@" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
missing = [k for k in sys.argv[2:] if k not in data]
if missing:
    sys.exit(f"{sys.argv[1]}: missing keys {missing}")
PY

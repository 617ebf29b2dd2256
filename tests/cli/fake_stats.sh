#!/usr/bin/env bash
# fake_stats.sh KIND [ARGS...]: a sweep point's program that writes statistics of a bad shape
# to the file after --stats (issue 39, item 12): wrong-type, missing-key or deeply nested; or
# one that fails saying why on stdout alone, or on stdout after a warning on stderr (issue 38,
# item 11).
# --config-dump (the sweep's check of each point before any runs) is accepted: it exits 0.
kind=$1
shift
stats=
while [[ $# -gt 0 ]]; do
  [[ $1 == --config-dump ]] && exit 0
  [[ $1 == --stats ]] && stats=$2
  shift
done
case $kind in
  stdout_reason) echo "step 1"; echo "loss did not fall"; exit 1 ;;
  both_streams) echo "warning: a slow path" >&2; echo "loss did not fall, 5.1 > 5.0"; exit 1 ;;
  types) echo '{"summary": {"cycles": "many", "tflops": [1], "streaming_bytes_read": "x", "streaming_bytes_written": 1}}' > "$stats" ;;
  missing) echo '{"summary": {"streaming_bytes_read": 5}}' > "$stats" ;;
  not_object) echo '["summary"]' > "$stats" ;;
  deep) python3 -c 'import sys; n = 200000; sys.stdout.write("{\"summary\": " + "[" * n + "]" * n + "}")' > "$stats" ;;
esac

#!/usr/bin/env bash
# same_twice.sh COMMAND [ARGS...]: runs COMMAND twice and fails unless both runs print the same
# cycles and memory hash (determinism: same image, same configuration, same results).
set -u
first=$("$@" 2>&1 | grep -E "^(tile cycles|memory hash|result|supersteps) ")
second=$("$@" 2>&1 | grep -E "^(tile cycles|memory hash|result|supersteps) ")
if [[ -z $first || $first != "$second" ]]; then
  echo "runs differ or printed nothing:"; echo "--- first"; echo "$first"; echo "--- second"; echo "$second"
  exit 1
fi
grep -q "memory hash" <<<"$first" || { echo "no memory hash printed"; exit 1; }
echo "$first"

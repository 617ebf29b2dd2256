#!/usr/bin/env bash
# check.sh EXPECTED_STATUS PATTERN [PATTERN...] -- COMMAND [ARGS...]
# Runs COMMAND and fails unless it exits with EXPECTED_STATUS and its combined stdout+stderr
# matches every PATTERN (grep -E). Prints the output on failure.
set -u
expected=$1
shift
patterns=()
while [[ $# -gt 0 && $1 != -- ]]; do patterns+=("$1"); shift; done
shift
output=$("$@" 2>&1)
status=$?
ok=1
if [[ $status -ne $expected ]]; then
  echo "exit status $status, expected $expected"
  ok=0
fi
for p in "${patterns[@]}"; do
  if ! grep -qE -- "$p" <<<"$output"; then
    echo "output does not match: $p"
    ok=0
  fi
done
if [[ $ok -eq 0 ]]; then
  echo "---- command: $*"
  echo "$output"
  exit 1
fi

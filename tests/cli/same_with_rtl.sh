#!/usr/bin/env bash
# same_with_rtl.sh "BLOCKS" COMMAND [ARGS...]: runs COMMAND with --rtl none and with --rtl all
# and fails unless both exit with the same status and print the same output (results, cycle
# counts, memory hash, error reports; only the host's time and speed may differ), and the RTL
# run computed with each of BLOCKS (its "rtl blocks" line counts transactions for them).
set -u
blocks=$1
shift
host_lines="^(host time|host wall time|simulator speed|rtl blocks) "
model=$("$@" --rtl none 2>&1)
model_status=$?
rtl=$("$@" --rtl all 2>&1)
rtl_status=$?
if [[ $model_status != "$rtl_status" ]]; then
  echo "exit status $model_status with the C++ models, $rtl_status with --rtl all"
  echo "--- --rtl all"; echo "$rtl"
  exit 1
fi
if ! diff <(grep -v -E "$host_lines" <<<"$model") <(grep -v -E "$host_lines" <<<"$rtl"); then
  echo "outputs differ (< C++ models, > --rtl all)"
  exit 1
fi
grep -q -E "^(memory hash|.*cycles)" <<<"$model" || { echo "no cycles or memory hash printed"; exit 1; }
stats=$(grep -E "^rtl blocks " <<<"$rtl")
for block in $blocks; do
  grep -q -E "[ ,]$block [1-9][0-9]* transactions" <<<"$stats" ||
    { echo "--rtl all did not use the $block RTL: $stats"; exit 1; }
done
echo "same output and status ($model_status) with --rtl all; $stats"

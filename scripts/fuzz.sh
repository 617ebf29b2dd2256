#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang, build-fuzz/) and runs each for a bounded time,
# side by side, printing each one's executions and findings.
#   scripts/fuzz.sh [--seconds N] [TARGET...]   N per target (60 by default); every target
#                                               (fuzz_image fuzz_config fuzz_iss fuzz_runtime
#                                               fuzz_gdb fuzz_sweep_stats) unless named
# Each target starts from its seed corpus (fuzz/corpus/<target>) plus what earlier runs here
# found (build-fuzz/corpus/<target>). A finding (a crash, a sanitizer report, a timeout, a leak)
# is kept in build-fuzz/findings/ and makes the exit status 1.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seconds=60
targets=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --seconds) seconds=$2; shift 2 ;;
    -h|--help) sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[[ ${#targets[@]} -gt 0 ]] || targets=(fuzz_image fuzz_config fuzz_iss fuzz_runtime fuzz_gdb fuzz_sweep_stats)

bash "$root/scripts/setup.sh"
build="$root/build-fuzz"
# -O1 -g1, as libFuzzer's docs build: the interpreter's two loops took 4 CPU-minutes at -O2 -g.
flags="-O1 -g1 -DNDEBUG"
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$flags" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$flags" \
  -DIPU_FUZZ=ON -DIPU_WERROR=OFF \
  "-DCMAKE_UNITY_BUILD=$([[ ${IPU_UNITY:-1} == 0 ]] && echo OFF || echo ON)" -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 \
  > /dev/null  # clang's warnings differ from the gcc build's; unity builds as scripts/build.sh
cmake --build "$build" --target "${targets[@]}"

# The targets run side by side, each for N seconds of wall time, and share the host's cores.
mkdir -p "$build/findings"
declare -A pids
for target in "${targets[@]}"; do
  corpus="$build/corpus/$target"
  mkdir -p "$corpus"
  # -rss_limit_mb and -timeout turn unbounded memory and hangs into findings; -max_len
  # bounds an input (an image or program of 64 KiB is plenty to reach every path).
  ASAN_OPTIONS=detect_leaks=1 "$build/fuzz/$target" "$corpus" "$root/fuzz/corpus/$target" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$build/findings/$target-" > "$build/$target.log" 2>&1 &
  pids[$target]=$!
done
failures=0
for target in "${targets[@]}"; do
  log="$build/$target.log"
  status=0
  wait "${pids[$target]}" || status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if [[ $status -ne 0 ]]; then
    failures=$((failures + 1))
    echo "$target: FINDING after ${runs:-?} executions (exit $status); see $log and $build/findings/"
    grep -m3 -E "ERROR|SUMMARY|runtime error" "$log" || true
  else
    echo "$target: ${runs:-?} executions in ${seconds} s, no finding ($(ls "$build/corpus/$target" | wc -l) corpus inputs)"
  fi
done
exit $((failures > 0))

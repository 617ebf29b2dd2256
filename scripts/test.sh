#!/usr/bin/env bash
# Set everything up, build, and run the whole test suite through ctest.
#   scripts/test.sh              Release build
#   scripts/test.sh --sanitize   the unit, block and end-to-end suites under AddressSanitizer +
#                                UndefinedBehaviorSanitizer, without the release_only repeats
# The Release run then runs each libFuzzer target for a bounded time (scripts/fuzz.sh;
# IPU_FUZZ_SECONDS per target, 20 by default, 0 to skip).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/build.sh" "$@"
build_dir="$root/build"
[[ ${1:-} == --sanitize ]] && build_dir="$root/build-sanitize"
# The sanitizer half leaves out the release_only checks (tests/cli/CMakeLists.txt says which and
# why); the Release half runs everything.
exclude=()
[[ ${1:-} == --sanitize ]] && exclude=(-LE release_only)
# A fresh build directory starts from the tests' recorded costs (tests/ctest_costs/, ctest's own
# CTestCostData format), so ctest starts the longest first instead of finding one at the end of
# its list with a core idle; ctest keeps the file up to date from then on.
costs="$build_dir/Testing/Temporary/CTestCostData.txt"
if [[ ! -f $costs ]]; then
  mkdir -p "$(dirname "$costs")"
  cp "$root/tests/ctest_costs/$([[ ${1:-} == --sanitize ]] && echo sanitize || echo release).txt" "$costs"
fi
# --timeout: a test that hangs fails in 10 minutes instead of holding CI to its limit.
ctest --test-dir "$build_dir" --output-on-failure --timeout 600 -j"$(nproc)" "${exclude[@]}"
seconds=${IPU_FUZZ_SECONDS:-20}
if [[ ${1:-} != --sanitize && $seconds != 0 ]]; then
  bash "$root/scripts/fuzz.sh" --seconds "$seconds"
fi

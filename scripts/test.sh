#!/usr/bin/env bash
# Set everything up, build, and run the whole test suite through ctest.
#   scripts/test.sh              Release build
#   scripts/test.sh --sanitize   the same suite under AddressSanitizer + UndefinedBehaviorSanitizer
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/build.sh" "$@"
build_dir="$root/build"
[[ ${1:-} == --sanitize ]] && build_dir="$root/build-sanitize"
ctest --test-dir "$build_dir" --output-on-failure -j"$(nproc)"

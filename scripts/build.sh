#!/usr/bin/env bash
# Installs the dependencies (scripts/setup.sh), then configures and builds.
#   scripts/build.sh              Release build in build/
#   scripts/build.sh --sanitize   ASan + UBSan build in build-sanitize/
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/setup.sh"

build_dir="$root/build"
extra=()
if [[ ${1:-} == --sanitize ]]; then
  build_dir="$root/build-sanitize"
  # -O1 -g1 (line tables only), as the sanitizers' own docs suggest: reports still name files
  # and lines. On 2 cores the build took 12.6 minutes (21.3 CPU-minutes), where -O2 -g took
  # 42.5 CPU-minutes (ninja's log).
  flags="-O1 -g1 -DNDEBUG"
  extra=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DIPU_SANITIZE=ON -DIPU_BENCH=OFF "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$flags"
         "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$flags")
fi
# Unity builds (CMake joins each target's sources, 16 to a translation unit): every header and
# template a target's sources share is compiled once a batch instead of once a source. From
# clean, the sanitizer build took 503 s instead of 595 s on 2 cores. IPU_UNITY=0 turns them off
# for edit-compile cycles, where a change then recompiles one source instead of its batch.
extra+=("-DCMAKE_UNITY_BUILD=$([[ ${IPU_UNITY:-1} == 0 ]] && echo OFF || echo ON)" -DCMAKE_UNITY_BUILD_BATCH_SIZE=16)
cmake -S "$root" -B "$build_dir" -G Ninja "${extra[@]}" >/dev/null
cmake --build "$build_dir" -j"$(nproc)"

# The Release build's Python package, importable by Debian's python3 from anywhere (as
# `pip install -e` would make it): a .pth file in its site directory names build/python.
# Skipped where that directory is not writable (no root); PYTHONPATH=build/python then.
if [[ ${1:-} != --sanitize && -d $build_dir/python/virtual_ipu && -x /usr/bin/python3 ]]; then
  site=$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
  if mkdir -p "$site" 2>/dev/null && [[ -w $site ]]; then
    echo "$build_dir/python" > "$site/virtual_ipu-build.pth"
  fi
fi

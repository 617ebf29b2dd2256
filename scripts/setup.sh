#!/usr/bin/env bash
# Installs every dependency of the virtual IPU from Debian's archive. Idempotent: packages that are
# already present are left alone, and apt-get runs only when something is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libsystemc-dev            # SystemC 2.3.4 with TLM-2.0
  verilator
  libfmt-dev
  zlib1g-dev                # CRC-32 of firmware images (sdk/image); Verilator's FST waveforms
  libgtest-dev libgmock-dev
  libboost-program-options-dev
  nlohmann-json3-dev        # image manifests are parsed as JSON (sdk/image/program.cpp)
  libtbb-dev                # tile compute bursts on a pool of host threads (hw/parallel/compute_pool.h)
  libdw-dev                 # function and file:line of a pc in fault reports (sdk/image/symbolizer.h)
  gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf binutils-riscv64-unknown-elf
  clang-format clang-tidy
  clang libclang-rt-14-dev  # libFuzzer and its sanitizers (fuzz/, scripts/fuzz.sh)
  qemu-user                 # qemu-riscv32: the reference of the differential ISS test
  openmpi-bin libopenmpi-dev  # a machine's chips over MPI ranks (hw/parallel/ranks.h, mpirun ipu-sim run)
  gdb-multiarch             # debugs tile programs through ipu-sim --gdb (tests/cli/gdb_session.sh)
  python3                   # the CLI tests check that --stats and --trace write valid JSON
  python3-dev pybind11-dev  # the Python package virtual_ipu (python/): its C++ extension
  python3-pytest            # the Python package's tests (tests/python)
  python3-numpy             # the Python SDK's tensors and streams are NumPy arrays (python/virtual_ipu/sdk.py)
  python3-matplotlib        # virtual_ipu.plot (python/virtual_ipu/plot.py)
  chromium                  # renders the --report HTML page headless in its test (tests/cli/report_renders.sh)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all dependencies present"
fi

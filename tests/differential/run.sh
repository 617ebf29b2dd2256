#!/usr/bin/env bash
# run.sh FIRST LAST IPU-SIM RISCV-GCC: the random RV32IMF programs of seeds FIRST..LAST (rv32_random.py)
# run on one tile of the virtual IPU (ipu-sim run-elf) and on qemu-riscv32; every integer and
# float register and fcsr must match, and both must exit with status 0 (issue 15). A mismatch
# prints the seed, the program and the differing lines, and keeps them in a folder.
set -euo pipefail
first=$1 last=$2 sim=$3 gcc=$4
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/ipu-differential.XXXXXX")
flags=(-march=rv32imf -mabi=ilp32f -nostdlib -nostartfiles -static)
failures=0
python3 "$here/rv32_random.py" "$first" "$last" "$work"
for seed in $(seq "$first" "$last"); do
  program=$work/p$seed
  # The tile takes the program inside its SRAM window; qemu-user, at Linux's usual place.
  "$gcc" "${flags[@]}" -Wl,-N -Wl,-Ttext=0x4c000 -Wl,--no-warn-rwx-segments -o "$program.tile.elf" "$program.S"
  "$gcc" "${flags[@]}" -DQEMU -o "$program.qemu.elf" "$program.S"
  tile_status=0 qemu_status=0
  "$sim" run-elf "$program.tile.elf" > "$program.tile.out" 2>&1 || tile_status=$?
  qemu-riscv32 "$program.qemu.elf" > "$program.qemu.txt" 2>&1 || qemu_status=$?
  sed -n 's/^\[t0:c0\] //p' "$program.tile.out" > "$program.tile.txt"
  if [[ $tile_status -ne 0 || $qemu_status -ne 0 ]] || ! cmp -s "$program.tile.txt" "$program.qemu.txt" ||
     [[ $(wc -l < "$program.qemu.txt") -ne 59 ]]; then
    failures=$((failures + 1))
    echo "seed $seed: the tile (exit $tile_status) and qemu (exit $qemu_status) differ; see $program.*"
    diff "$program.tile.txt" "$program.qemu.txt" | head -10 || true
    continue
  fi
  rm -f "$program".*
done
if [[ $failures -eq 0 ]]; then
  rm -rf "$work"
  echo "seeds $first to $last: every register and fcsr equal to qemu-riscv32's"
fi
exit $((failures > 0))

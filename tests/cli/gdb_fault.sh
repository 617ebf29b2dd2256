#!/usr/bin/env bash
# gdb-multiarch against `ipu-sim run-elf FILE --gdb 0` on a program that loads from address 0:
# GDB stops at the faulting line with SIGSEGV and the fault report, shows the backtrace, and
# is told the program was terminated by that signal; ipu-sim exits with the fault status (4).
# usage: gdb_fault.sh IPU_SIM ELF WORK_DIR
set -euo pipefail
sim=$1 elf=$2 work=$3
mkdir -p "$work"
# The last run's files go first: the wait below must read this run's port, not a stale one
# (a grep that saw the old file, then the new one still empty, ended the script silently).
rm -f "$work/sim.out" "$work/sim.err"
"$sim" run-elf "$elf" --gdb 0 >"$work/sim.out" 2>"$work/sim.err" &
sim_pid=$!
trap 'kill $sim_pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q 'localhost:' "$work/sim.err" && break; sleep 0.1; done
port=$(grep -o 'localhost:[0-9]*' "$work/sim.err" | head -1 | cut -d: -f2 || true)
[[ -n $port ]] || { echo "ipu-sim did not say where it waits for GDB:"; cat "$work/sim.err"; exit 1; }
timeout 60 gdb-multiarch -batch -nx "$elf" -ex "target remote :$port" -ex "continue" -ex "bt" \
  -ex "continue" >"$work/gdb.out" 2>&1 || true
wait $sim_pid && status=0 || status=$?
trap - EXIT
fail=0
expect() { grep -qE -- "$1" "$work/gdb.out" || { echo "missing from the GDB transcript: $1"; fail=1; }; }
expect 'tile 0 context 0 \(supervisor\): load access fault at pc 0x[0-9a-f]+: lw a0,0\(zero\) in main at null_deref\.c:4'
expect '^Thread 1 "tile 0 supervisor" received signal SIGSEGV, Segmentation fault\.'
expect '^#0 +main \(\) at .*null_deref\.c:4'
expect '^Program terminated with signal SIGSEGV, Segmentation fault\.'
if ((fail)); then cat "$work/gdb.out"; exit 1; fi
[[ $status -eq 4 ]] || { echo "ipu-sim exited with $status, not 4 (fault)"; exit 1; }
echo "gdb fault session checked"

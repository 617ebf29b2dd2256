#!/usr/bin/env bash
# Drives Debian's gdb-multiarch against `ipu-sim run IMAGE --gdb 0` on an 8-tile run of
# tests/firmware/gdb_target.c and checks the transcript: a breakpoint on tile 3, locals and an
# array, a step into a callee, a worker thread (idle workers named so, at the worker entry), a
# watchpoint, and the run's end. The simulator's
# report must equal that of a run without the debugger (same output, same cycles).
# usage: gdb_session.sh IPU_SIM IMAGE FIRMWARE_ELF WORK_DIR
set -euo pipefail
sim=$1 image=$2 elf=$3 work=$4
mkdir -p "$work"
command -v gdb-multiarch >/dev/null || { echo "gdb-multiarch is not installed (scripts/setup.sh)"; exit 1; }

# The last run's files go first: the wait below must read this run's port, not a stale one
# (a grep that saw the old file, then the new one still empty, ended the script silently).
rm -f "$work/sim.out" "$work/sim.err"
"$sim" run "$image" --gdb 0 >"$work/sim.out" 2>"$work/sim.err" &
sim_pid=$!
trap 'kill $sim_pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q 'localhost:' "$work/sim.err" && break; sleep 0.1; done
port=$(grep -o 'localhost:[0-9]*' "$work/sim.err" | head -1 | cut -d: -f2 || true)
[[ -n $port ]] || { echo "ipu-sim did not say where it waits for GDB:"; cat "$work/sim.err"; exit 1; }

timeout 120 gdb-multiarch -batch -nx "$elf" \
  -ex "target remote :$port" \
  -ex "info threads" \
  -ex "break scale thread 22" \
  -ex "continue" \
  -ex "monitor tile" \
  -ex "next" -ex "next" \
  -ex "step" \
  -ex "finish" \
  -ex "advance 23" \
  -ex "info locals" \
  -ex "print values" \
  -ex "print factor" \
  -ex "delete" \
  -ex "monitor watch-tile 3" \
  -ex "watch checksum" \
  -ex "break worker_job" \
  -ex "continue" \
  -ex "print *(int *)arg" \
  -ex "print \$_thread" \
  -ex "thread 22" \
  -ex "delete 3" \
  -ex "continue" \
  -ex "monitor phase" \
  -ex "continue" >"$work/gdb.out" 2>&1 || true
wait $sim_pid && sim_status=0 || sim_status=$?
trap - EXIT

fail=0
expect() {  # a line of the transcript matching this extended regular expression
  grep -qE -- "$1" "$work/gdb.out" || { echo "missing from the GDB transcript: $1"; fail=1; }
}
expect '^\* 1 +Thread 1 "tile 0 supervisor" +_start \(\)'
expect '^ +28 +Thread 28 "tile 3 worker 6 \(idle\)" +__ipu_worker_entry \(\)'
expect '^ +56 +Thread 56 "tile 7 worker 6 \(idle\)" +__ipu_worker_entry \(\)'
expect '^ +thread +23 +worker 1 +idle +0 instructions +never started$'
expect '^Thread 22 "tile 3 supervisor" hit Breakpoint 1, scale \(factor=factor@entry=4\) at .*gdb_target\.c:1[78]'
expect '^square \(x=x@entry=0\) at .*gdb_target\.c:15'
expect '^Value returned is \$1 = 0$'
expect '^total = 560$'
expect '^\$2 = \{0, 4, 16, 36, 64, 100, 144, 196\}$'
expect '^\$3 = 4$'
expect "^watchpoints watch tile 3's memory only"
expect '^Hardware watchpoint 2: checksum'
# ipu.runall starts all six workers at once; worker 2 owns the next issue slot, so it hits first.
expect '^Thread 24 "tile 3 worker 2" hit Breakpoint 3, worker_job \(arg=0x[0-9a-f]+ <worker_results>\)'
expect '^\$4 = 0$'
expect '^\$5 = 24$'
expect '^Thread 22 "tile 3 supervisor" hit Hardware watchpoint 2: checksum'
expect '^Old value = 0$'
expect '^New value = 560$'
expect '^tile 0: waiting at a sync'
expect '^\[Inferior 1 \(Remote target\) exited normally\]'
if ((fail)); then
  echo "--- GDB transcript"; cat "$work/gdb.out"; echo "--- simulator"; cat "$work/sim.err"
  exit 1
fi
[[ $sim_status -eq 0 ]] || { echo "ipu-sim exited with $sim_status under GDB"; cat "$work/sim.err"; exit 1; }

# The debugged run's results and cycles are those of a run without the debugger.
"$sim" run "$image" >"$work/plain.out"
strip() { grep -vE 'host time|simulator speed' "$1"; }
if ! diff <(strip "$work/sim.out") <(strip "$work/plain.out"); then
  echo "the run under GDB differs from the run without it"; exit 1
fi
grep -q 'tile 3: total 560, jobs 112' "$work/sim.out" || { echo "wrong program output"; cat "$work/sim.out"; exit 1; }
echo "gdb session: $(grep -c . "$work/gdb.out") transcript lines checked; same report as without GDB"

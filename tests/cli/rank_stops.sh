#!/usr/bin/env bash
# rank_stops.sh MPIRUN IPU-SIM IMAGE [OPTION...]: runs IMAGE on 2 MPI ranks with --rank-timeout 2,
# stops rank 1 (SIGSTOP) once it runs, and fails unless the job then ends by itself, rank 0
# naming rank 1, or the swap's transfer when rank 1 stopped in it (issue 39, item 20: the other
# ranks spun at 100% of a core for ever).
set -u
mpirun=$1 sim=$2 image=$3
shift 3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_mpi_yield_when_idle=1
work=$(mktemp -d)
trap 'kill -KILL ${rank1:-} $job 2>/dev/null; rm -rf "$work"' EXIT
"$mpirun" -np 2 "$sim" run "$image" --rank-timeout 2 "$@" > "$work/out" 2> "$work/err" &
job=$!
# Rank 1: the ipu-sim whose environment says so.
rank1=
for ((i = 0; i < 200; i++)); do
  [[ -z $rank1 ]] || break
  for dir in /proc/[0-9]*; do  # (no pgrep: procps may be missing)
    tr '\0' ' ' 2>/dev/null < "$dir/cmdline" | grep -qF "ipu-sim run $image" || continue
    tr '\0' '\n' 2>/dev/null < "$dir/environ" | grep -qx "OMPI_COMM_WORLD_RANK=1" &&
      rank1=${dir#/proc/}
  done
  sleep 0.05
done
[[ -n $rank1 ]] || { echo "FAIL: no rank 1 found"; cat "$work/err"; exit 1; }
sleep 0.5
kill -STOP "$rank1"
# The job must end by itself: 2 s of timeout, and some for MPI_Abort to end both ranks.
for ((i = 0; i < 300; i++)); do
  kill -0 $job 2>/dev/null || break
  sleep 0.1
done
if kill -0 $job 2>/dev/null; then
  echo "FAIL: the job still runs 30 s after rank 1 stopped"
  exit 1
fi
wait $job
status=$?
# Stopped before a swap, rank 1 is named; stopped during a swap's transfer (every rank having
# come), the transfer is.
if ! grep -qE "MPI rank 0: (rank 1 did not reach result swap [0-9]+ within 2 s \(--rank-timeout\): stopped or hung|result swap [0-9]+, which every rank reached, did not end within 2 s \(--rank-timeout\): a rank stopped or hung during the transfer); ending the job" "$work/err"; then
  echo "FAIL: no message naming rank 1 or the transfer (exit status $status):"
  cat "$work/err"
  exit 1
fi
[[ $status -ne 0 ]] || { echo "FAIL: exit status 0"; exit 1; }
echo "PASS: rank 0 ended the job: $(grep -o "MPI rank 0: .*" "$work/err" | head -1)"

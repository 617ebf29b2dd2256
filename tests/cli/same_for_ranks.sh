#!/usr/bin/env bash
# same_for_ranks.sh OUT_PREFIX MPIRUN "RANKS..." IPU-SIM run IMAGE [OPTION...]: runs the command
# in one process, then under `MPIRUN -np K` for each K, and fails unless every run prints the same
# report and errors (host timings and the MPI line aside), exits with the same status and writes
# the same statistics and trace. Rank 0 alone prints; mpirun's own banners are dropped.
set -u
out=$1 mpirun=$2 ranks=($3)
shift 3
# Open MPI as root, more ranks than cores, and no cross-memory attach (containers refuse it).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_mpi_yield_when_idle=1  # oversubscribed ranks must not spin on each other
run() {  # run NAME COMMAND...
  local name=$1
  shift
  "$@" --stats "$out.$name.json" --trace "$out.$name.trace.json" > "$out.$name.stdout" 2> "$out.$name.stderr"
  echo "exit status $?" >> "$out.$name.stdout"
  grep -vE "^(host time|simulator speed|MPI ranks) " "$out.$name.stdout" > "$out.$name.txt"
  # mpirun's banners are blocks of lines between two rules of dashes.
  awk '/^-----------+$/ { banner = !banner; next } !banner' "$out.$name.stderr" >> "$out.$name.txt"
}
run 1 "$@"
grep -q "tile cycles" "$out.1.txt" || { echo "the run printed no cycle count:"; cat "$out.1.stdout" "$out.1.stderr"; exit 1; }
status=0
for k in "${ranks[@]}"; do
  run "np$k" "$mpirun" -np "$k" "$@"
  grep -q "^MPI ranks  *$k " "$out.np$k.stdout" || { echo "-np $k: no 'MPI ranks $k' line:"; cat "$out.np$k.stdout" "$out.np$k.stderr"; status=1; }
  # The slowest rank is one of the k, and its compute is no shorter than rank 0's.
  line=$(grep "^MPI ranks" "$out.np$k.stdout")
  pattern="compute ([0-9.]+) s, the slowest rank's \(rank ([0-9]+)\) ([0-9.]+) s"
  if [[ $line =~ $pattern ]]; then
    if (( BASH_REMATCH[2] >= k )) || ! awk -v a="${BASH_REMATCH[1]}" -v b="${BASH_REMATCH[3]}" 'BEGIN { exit !(b >= a) }'; then
      echo "-np $k: the slowest rank's compute is not the slowest: $line"; status=1
    fi
  else
    echo "-np $k: the MPI line names no slowest rank: $line"; status=1
  fi
  if ! cmp -s "$out.1.txt" "$out.np$k.txt"; then
    echo "output differs between one process and $k ranks:"; diff "$out.1.txt" "$out.np$k.txt" | head -20
    status=1
  fi
  for f in json trace.json; do
    if ! cmp -s "$out.1.$f" "$out.np$k.$f"; then echo "$f differs between one process and $k ranks"; status=1; fi
  done
done
cat "$out.1.txt"
exit $status

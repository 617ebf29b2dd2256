#!/usr/bin/env bash
# mutate_image.sh IPU_SIM IMAGE EXPECTED COUNT [ipu-sim options...]
# Runs COUNT mutated copies of a valid IMAGE (a flipped byte or a truncation, from a fixed
# seed) through `ipu-sim run`. Each run must refuse cleanly (exit 3 image, 4 fault, 5 cycle
# limit, 6 deadlock) or run correctly (exit 0 and output matching EXPECTED); a crash, a
# sanitizer report or any other status fails the test.
set -u
sim=$1 image=$2 expected=$3 count=$4
shift 4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
size=$(stat -c %s "$image")
declare -A seen
for ((i = 0; i < count; i++)); do
  python3 - "$image" "$work/m.elf" "$i" "$size" <<'PY'
import random, sys
src, dst, seed, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
data = bytearray(open(src, "rb").read())
r = random.Random(seed)
if seed % 4 == 0:
    data = data[: r.randrange(size)]                       # truncate
else:
    hot = 4096 if seed % 2 else size                        # headers, or anywhere
    for _ in range(1 + seed % 3):
        data[r.randrange(min(hot, size))] ^= 1 << r.randrange(8)
open(dst, "wb").write(data)
PY
  output=$("$sim" run "$work/m.elf" "$@" 2>&1)
  status=$?
  seen[$status]=$((${seen[$status]:-0} + 1))
  case $status in
    0) grep -qE -- "$expected" <<<"$output" || { echo "mutation $i: exit 0 but wrong output:"; echo "$output"; exit 1; } ;;
    3|4|5|6) ;;
    *) echo "mutation $i: exit status $status"; echo "$output" | tail -20; exit 1 ;;
  esac
  if grep -q "ERROR: AddressSanitizer\|runtime error:" <<<"$output"; then echo "mutation $i: sanitizer report"; echo "$output"; exit 1; fi
done
for s in "${!seen[@]}"; do echo "exit $s: ${seen[$s]} runs"; done

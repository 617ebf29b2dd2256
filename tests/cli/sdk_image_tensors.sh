#!/usr/bin/env bash
# A saved SDK image's tensors from and to files: save_axpy_image's y += 2 x on 2 replicas,
# with x and y written before the first program and y read after the last, against results
# worked out here (small integers: every f32 operation is exact).
#   sdk_image_tensors.sh SAVE_AXPY_IMAGE IPU_SIM WORK_DIR
set -euo pipefail
maker=$1 sim=$2 dir=$3
source "$(dirname "${BASH_SOURCE[0]}")/expect.sh"
mkdir -p "$dir"
cd "$dir"
rm -f ./*.bin ./*.txt

SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 "$maker" axpy.elf >/dev/null
python3 -c "
import struct
# Replica r's x[i] = 100 r + i, y[i] = 1000 + i: 2 replicas of 64 f32 each, replica after replica.
open('x.bin', 'wb').write(b''.join(struct.pack('<64f', *[100 * r + i for i in range(64)]) for r in range(2)))
open('y.bin', 'wb').write(struct.pack('<64f', *[1000 + i for i in range(64)]) * 2)"
# ipu-sim info says how to run it: the machine it was built for, and that it has two programs.
"$sim" info axpy.elf | grep -qE "^run it with +ipu-sim run axpy.elf --preset m2000 --chip.tiles 4 --program NAME" ||
  fail "info gives no command to run the image"
check() {  # FILE TIMES: y = y0 + TIMES x 2 x
  python3 -c "
import struct, sys
got = struct.unpack('<128f', open('$1', 'rb').read())
want = [1000 + i + $2 * 2 * (100 * r + i) for r in range(2) for i in range(64)]
bad = [k for k in range(128) if got[k] != want[k]]
sys.exit(0 if not bad else 'element %d: %r, not %r' % (bad[0], got[bad[0]], want[bad[0]]))"
}
"$sim" run axpy.elf --preset m2000 --chip.tiles 4 --program axpy --write-tensor x=x.bin --write-tensor y=y.bin \
  --read-tensor y=once.bin >once.txt
check once.bin 1 || fail "axpy once"
grep -q "^tensor y  *512 bytes written to once.bin\$" once.txt || fail "no line for y"
"$sim" run axpy.elf --preset m2000 --chip.tiles 4 --program axpy --program axpy_twice --write-tensor x=x.bin \
  --write-tensor y=y.bin --read-tensor y=thrice.bin --read-tensor x=x_back.bin >thrice.txt
check thrice.bin 3 || fail "axpy then axpy_twice"
cmp x.bin x_back.bin || fail "x changed"

expect 2 "the image has 2 programs \('axpy', 'axpy_twice'\): name those to run, in order, with --program NAME" \
  -- run axpy.elf --preset m2000 --chip.tiles 4 --write-tensor x=x.bin
expect 2 "--read-tensor nope=n.bin: the image has no tensor 'nope'" \
  -- run axpy.elf --preset m2000 --chip.tiles 4 --program axpy --read-tensor nope=n.bin
expect 2 "--write-tensor y=once.txt: once.txt holds [0-9]+ bytes, but tensor 'y' holds 512 bytes \(2 replicas x 64 f32, little-endian\)" \
  -- run axpy.elf --preset m2000 --chip.tiles 4 --program axpy --write-tensor y=once.txt
expect 2 "--read-tensor y=/nonexistent/y.bin: cannot write /nonexistent/y.bin" \
  -- run axpy.elf --preset m2000 --chip.tiles 4 --program axpy --read-tensor y=/nonexistent/y.bin
expect 2 "--write-tensor x: give NAME=FILE" -- run axpy.elf --preset m2000 --chip.tiles 4 --program axpy --write-tensor x
echo "PASS"

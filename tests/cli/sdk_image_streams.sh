#!/usr/bin/env bash
# A saved SDK image run by ipu-sim with its host streams in files does what the SDK program did:
# the same result bits, cycles and memory; constant inputs give the product worked out by hand;
# the program runs twice when named twice; a bad stream file, an unwritable output and a run
# that stops at the cycle limit each fail clearly and write no output.
#   sdk_image_streams.sh MATMUL IPU_SIM WORK_DIR [--no-failing-run]
# --no-failing-run leaves out the run that stops at the cycle limit: under AddressSanitizer the
# DeviceError thrown after a SystemC simulation trips ASan's stack handling (tests/CMakeLists.txt).
set -euo pipefail
matmul=$1 sim=$2 dir=$3 failing_run=${4:-yes}
source "$(dirname "${BASH_SOURCE[0]}")/expect.sh"
mkdir -p "$dir"
cd "$dir"
rm -f ./*.c_out ./*.txt

"$matmul" --tiles 16 --save mm.elf --save-streams mm --memory-hash >example.txt
grep -q "98304 of 98304 values equal the host reference bit for bit" example.txt ||
  fail "the example's own result is wrong"
cycles=$(sed -n 's/^simulated  *\([0-9]*\) cycles.*/\1/p' example.txt)
hash=$(sed -n 's/^memory hash  *\([0-9a-f]*\)$/\1/p' example.txt)
[[ -n $cycles && -n $hash ]] || fail "no cycles or memory hash in the example's report"

# The example's inputs: its checked output, bit for bit, in the example's cycles.
"$sim" run mm.elf --stream a_in=mm.a_in --stream b_in=mm.b_in --stream c_out=sim.c_out \
  --memory-hash --stats sim.json >sim.txt
cmp mm.c_out sim.c_out || fail "c_out differs from the SDK program's"
grep -q "^tile cycles  *$cycles\$" sim.txt || fail "tile cycles differ from the example's $cycles"
grep -q "^memory hash  *$hash\$" sim.txt || fail "memory hash differs from the example's $hash"
grep -q "^stream c_out  *393216 bytes written to sim.c_out\$" sim.txt || fail "no c_out line"
# Its supersteps, from the program: the dispatch, A and B in, the broadcast of B, C out.
python3 -c "
import json, sys
syncs = [s['sync'] for s in json.load(open('sim.json'))['supersteps']]
expected = ['host dispatch', 'host transfer 0', 'host transfer 1', 'internal', 'host transfer 2']
sys.exit(0 if syncs == expected else 'supersteps synced %s, not %s' % (syncs, expected))"

# A = 1.0 everywhere, B = 0.5: every C value is k (64) x 0.5 = 32, whatever the layouts.
python3 -c "
import struct
open('ones.a_in', 'wb').write(struct.pack('<e', 1.0) * (256 * 64))
open('halves.b_in', 'wb').write(struct.pack('<e', 0.5) * (64 * 384))"
"$sim" run mm.elf --stream a_in=ones.a_in --stream b_in=halves.b_in --stream c_out=const.c_out \
  >const.txt
python3 -c "
import struct, sys
d = open('const.c_out', 'rb').read()
v = struct.unpack('<%df' % (len(d) // 4), d)
sys.exit(0 if len(v) == 256 * 384 and set(v) == {32.0} else 'C is not 32 everywhere: %d values, %s' % (len(v), sorted(set(v))[:4]))"

# Named twice, the program runs twice, the second time on the same inputs (a file of one batch
# feeds every run); the output file holds a batch from each run.
"$sim" run mm.elf --program main --program main --stream a_in=mm.a_in --stream b_in=mm.b_in \
  --stream c_out=twice.c_out >twice.txt
[[ $(grep -c "^== program 'main' ([12] of 2) ==" twice.txt) == 2 ]] || fail "not two runs"
cat mm.c_out mm.c_out | cmp - twice.c_out || fail "the two runs' c_out differ from the example's"

# A multi-step job from its image (issue 35, item 7): main:2 runs main twice, a_in's file holds a
# batch for each run (A = 1.0, then A = 0.5) and b_in's one for both (B = 0.5): the first run's
# C is 64 x 0.5 = 32 everywhere, the second's 64 x 0.25 = 16, in that order in c_out's file.
python3 -c "
import struct
open('halves.a_in', 'wb').write(struct.pack('<e', 0.5) * (256 * 64))"
cat ones.a_in halves.a_in >steps.a_in
"$sim" run mm.elf --program main:2 --stream a_in=steps.a_in --stream b_in=halves.b_in \
  --stream c_out=steps.c_out --read-tensor a@main=steps.a >steps.txt
[[ $(grep -c "^== program 'main' ([12] of 2) ==" steps.txt) == 2 ]] || fail "main:2 ran not twice"
python3 -c "
import struct, sys
d = open('steps.c_out', 'rb').read()
v = struct.unpack('<%df' % (len(d) // 4), d)
n = 256 * 384
ok = len(v) == 2 * n and set(v[:n]) == {32.0} and set(v[n:]) == {16.0}
sys.exit(0 if ok else 'c_out: %d values, the runs %s and %s' % (len(v), sorted(set(v[:n]))[:3], sorted(set(v[n:]))[:3]))"
# The tensor read after main's last run holds the second batch's A.
python3 -c "
import struct, sys
d = open('steps.a', 'rb').read()
v = set(struct.unpack('<%de' % (len(d) // 2), d))
sys.exit(0 if v == {0.5} else 'tensor a after the last run: %s' % sorted(v)[:4])"

# Mistakes: each a clear error, exit 2 (5 at the cycle limit), and no output file touched.
cp sim.c_out kept.c_out
expect 2 "--stream b_in=ones.a_in: ones.a_in holds 32768 bytes, but stream 'b_in' carries 49152 bytes \(24576 f16, little-endian\)" \
  -- run mm.elf --stream a_in=ones.a_in --stream b_in=ones.a_in --stream c_out=kept.c_out
expect 2 "--stream c_out=/nonexistent/c_out: cannot write /nonexistent/c_out" \
  -- run mm.elf --stream a_in=ones.a_in --stream b_in=halves.b_in --stream c_out=/nonexistent/c_out
# Only a regular file of the stream's size is read (issue 39): a device of endless bytes is
# refused before anything runs, as is a FIFO.
expect 2 "--stream a_in=/dev/zero: /dev/zero: not a regular file \(a stream or tensor file must be one\)" \
  -- run mm.elf --stream a_in=/dev/zero --stream b_in=halves.b_in --stream c_out=kept.c_out
mkfifo fifo.a_in
expect 2 "--stream a_in=fifo.a_in: fifo.a_in: not a regular file" \
  -- run mm.elf --stream a_in=fifo.a_in --stream b_in=halves.b_in --stream c_out=kept.c_out
rm -f fifo.a_in
expect 2 "--stream a_in=missing.bin: cannot read missing.bin" \
  -- run mm.elf --stream a_in=missing.bin --stream b_in=halves.b_in --stream c_out=kept.c_out
expect 2 "--stream a_in=mm.c_out: mm.c_out holds 393216 bytes, but stream 'a_in' carries 32768 bytes \\(16384 f16, little-endian\\) a run: one batch for every run \\(32768 bytes\\) or one for each of its 2 runs \\(65536 bytes\\)" \
  -- run mm.elf --program main:2 --stream a_in=mm.c_out --stream b_in=halves.b_in --stream c_out=kept.c_out
expect 2 "--program main: '0' is not a whole number from 1 to 1000000" \
  -- run mm.elf --program main:0 --stream a_in=ones.a_in --stream b_in=halves.b_in --stream c_out=kept.c_out
expect 2 "--read-tensor a@train=x: no program 'train' runs \\(the runs: main:2\\)" \
  -- run mm.elf --program main:2 --stream a_in=ones.a_in --stream b_in=halves.b_in --stream c_out=kept.c_out --read-tensor a@train=x
expect 2 "--stream a_in: give NAME=FILE \(the image's streams: a_in \(to the device\), b_in \(to the device\), c_out \(from the device\)\)" \
  -- run mm.elf --stream a_in
expect 2 "--stream a_in=x: stream 'a_in' is given twice" \
  -- run mm.elf --stream a_in=ones.a_in --stream a_in=x
expect 2 "the program uses stream c_out with no file: give each with --stream NAME=FILE" \
  -- run mm.elf --stream a_in=ones.a_in --stream b_in=halves.b_in
expect 2 "cannot write the statistics to /nonexistent/s.json" \
  -- run mm.elf --stream a_in=ones.a_in --stream b_in=halves.b_in --stream c_out=kept.c_out \
  --stats /nonexistent/s.json
cmp sim.c_out kept.c_out || fail "a refused run changed an output file"
if [[ $failing_run == yes ]]; then
  expect 5 "program 'main': the program failed: tile 0: program did not finish within 20000 cycles \\(--max-cycles\\)" \
    -- run mm.elf --stream a_in=ones.a_in --stream b_in=halves.b_in --stream c_out=kept.c_out \
    --max-cycles 20000
  grep -q "no output file written: program 'main' did not end" err.txt || fail "no word on the files"
  cmp sim.c_out kept.c_out || fail "a failed run changed an output file"
fi
expect 2 "the SDK runtime drives a machine from one process|--trace-instructions is for images run without the runtime" \
  -- run mm.elf --trace-instructions
echo "PASS"

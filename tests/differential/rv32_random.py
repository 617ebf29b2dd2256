#!/usr/bin/env python3
"""Random RV32IMF programs for the differential test against qemu-riscv32 (issue 15).

rv32_random.py SEED OUT.S writes one program, the same for every run of the same seed;
rv32_random.py FIRST LAST DIR writes DIR/pSEED.S for each seed FIRST..LAST (one Python start-up
for a shard, which was half of the test's time). Each program has
random values in x1..x26, f0..f31, the scratch memory and the rounding mode, then a random body
of integer, multiply/divide, load/store, single-precision (every rounding mode) and forward
branch instructions, then an epilogue that prints every integer and float register and fcsr in
hex, one per line, and exits with status 0. Built with -DQEMU it prints with one Linux write
call; without, one byte at a time to the tile's console CSR, so the two outputs compare line
for line. Registers x27..x31 are left to the epilogue and the scratch base.
"""
import random
import sys

SCRATCH_WORDS = 256
INT_RR = ["add", "sub", "sll", "slt", "sltu", "xor", "srl", "sra", "or", "and",
          "mul", "mulh", "mulhsu", "mulhu", "div", "divu", "rem", "remu"]
INT_RI = ["addi", "slti", "sltiu", "xori", "ori", "andi"]
SHIFT_I = ["slli", "srli", "srai"]
LOADS = [("lw", 4), ("lh", 2), ("lhu", 2), ("lb", 1), ("lbu", 1)]
STORES = [("sw", 4), ("sh", 2), ("sb", 1)]
F_RR = ["fadd.s", "fsub.s", "fmul.s", "fdiv.s"]
F_SGN = ["fsgnj.s", "fsgnjn.s", "fsgnjx.s", "fmin.s", "fmax.s"]
F_CMP = ["feq.s", "flt.s", "fle.s"]
F_FMA = ["fmadd.s", "fmsub.s", "fnmadd.s", "fnmsub.s"]
ROUNDING = ["rne", "rtz", "rdn", "rup", "rmm", "dyn"]
# Bit patterns that reach the corners of f32 arithmetic.
SPECIAL_F32 = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001,
               0x00000001, 0x807FFFFF, 0x3F800000, 0xBF800000, 0x4F000000, 0xCF000000,
               0x7F7FFFFF, 0x00800000, 0x3EAAAAAB, 0x4B000000]
SPECIAL_INT = [0, 1, 0xFFFFFFFF, 0x80000000, 0x7FFFFFFF, 2, 0xFFFFFFFE, 31, 32]


def write_program(seed, out):
    rng = random.Random(seed)
    xr = lambda: f"x{rng.randint(1, 26)}"
    xs = lambda: f"x{rng.randint(0, 26)}"
    fr = lambda: f"f{rng.randint(0, 31)}"
    word = lambda: rng.choice(SPECIAL_INT) if rng.random() < 0.3 else rng.getrandbits(32)
    fword = lambda: rng.choice(SPECIAL_F32) if rng.random() < 0.4 else rng.getrandbits(32)
    # No linker relaxation: it would make `la` relative to gp (x3), which holds a random value.
    lines = [".option norelax", ".section .text", ".globl _start", "_start:", "  la x27, scratch"]
    for r in range(1, 27):
        lines.append(f"  li x{r}, {word()}")
    for r in range(32):
        lines.append(f"  li x28, {fword()}")
        lines.append(f"  fmv.w.x f{r}, x28")
    lines.append(f"  csrwi frm, {rng.randint(0, 4)}")
    rm = lambda: rng.choice(ROUNDING)
    offset = lambda size: rng.randrange(0, 4 * SCRATCH_WORDS, size)

    def load():
        op, size = rng.choice(LOADS)
        return f"{op} {xr()}, {offset(size)}(x27)"

    def store():
        op, size = rng.choice(STORES)
        return f"{op} {xs()}, {offset(size)}(x27)"

    # The body's instruction kinds and their weights (in percent).
    kinds = [
        (30, lambda: f"{rng.choice(INT_RR)} {xr()}, {xs()}, {xs()}"),
        (10, lambda: f"{rng.choice(INT_RI)} {xr()}, {xs()}, {rng.randint(-2048, 2047)}"),
        (5, lambda: f"{rng.choice(SHIFT_I)} {xr()}, {xs()}, {rng.randint(0, 31)}"),
        (3, lambda: f"lui {xr()}, {rng.randint(0, 0xFFFFF)}"),
        (7, load),
        (6, store),
        (2, lambda: f"{rng.choice(['flw', 'fsw'])} {fr()}, {offset(4)}(x27)"),
        (10, lambda: f"{rng.choice(F_RR)} {fr()}, {fr()}, {fr()}, {rm()}"),
        (4, lambda: f"fsqrt.s {fr()}, {fr()}, {rm()}"),
        (4, lambda: f"{rng.choice(F_SGN)} {fr()}, {fr()}, {fr()}"),
        (4, lambda: f"{rng.choice(F_FMA)} {fr()}, {fr()}, {fr()}, {fr()}, {rm()}"),
        (4, lambda: f"{rng.choice(['fcvt.w.s', 'fcvt.wu.s'])} {xr()}, {fr()}, {rm()}"),
        (2, lambda: f"{rng.choice(['fcvt.s.w', 'fcvt.s.wu'])} {fr()}, {xs()}, {rm()}"),
        (3, lambda: f"{rng.choice(F_CMP)} {xr()}, {fr()}, {fr()}"),
        (2, lambda: f"{rng.choice(['fclass.s', 'fmv.x.w'])} {xr()}, {fr()}"),
        (1, lambda: f"fmv.w.x {fr()}, {xs()}"),
        (3, None),  # a forward branch over the next few instructions
    ]
    weights = [w for w, _ in kinds]
    labels = []  # (label, instructions left before it)
    count = rng.randint(40, 160)
    for i in range(count):
        make = rng.choices([k for _, k in kinds], weights)[0]
        if make is not None:
            lines.append("  " + make())
        else:
            label = f"skip{i}"
            op = rng.choice(["beq", "bne", "blt", "bge", "bltu", "bgeu"])
            lines.append(f"  {op} {xs()}, {xs()}, {label}")
            labels.append([label, rng.randint(1, 6)])
        for entry in labels:
            entry[1] -= 1
            if entry[1] == 0:
                lines.append(f"{entry[0]}:")
        labels = [e for e in labels if e[1] > 0]
    lines += [f"{label}:" for label, _ in labels]
    # Epilogue: every register into `dump`, then each word as 8 hex digits and a newline.
    lines.append("  la x28, dump")
    for r in range(1, 27):
        lines.append(f"  sw x{r}, {4 * (r - 1)}(x28)")
    for r in range(32):
        lines.append(f"  fsw f{r}, {4 * (26 + r)}(x28)")
    lines.append("  frcsr x29")
    lines.append(f"  sw x29, {4 * 58}(x28)")
    lines += """
  la x1, dump
  li x2, 59
  la x3, text
next_word:
  lw x4, 0(x1)
  li x5, 28
next_digit:
  srl x6, x4, x5
  andi x6, x6, 15
  addi x6, x6, 48
  li x7, 58
  blt x6, x7, digit
  addi x6, x6, 39
digit:
  sb x6, 0(x3)
  addi x3, x3, 1
  addi x5, x5, -4
  bge x5, x0, next_digit
  li x6, 10
  sb x6, 0(x3)
  addi x3, x3, 1
  addi x1, x1, 4
  addi x2, x2, -1
  bnez x2, next_word
  la x1, text
#ifdef QEMU
  li a0, 1
  mv a1, x1
  sub a2, x3, x1
  li a7, 64
  ecall
#else
print:
  lbu x4, 0(x1)
  csrw 0x7c0, x4
  addi x1, x1, 1
  bne x1, x3, print
#endif
  li a0, 0
  li a7, 93
  ecall
.section .data
.balign 4
scratch:""".split("\n")
    for _ in range(SCRATCH_WORDS):
        lines.append(f"  .word {word()}")
    lines += ["dump:", "  .space 240", "text:", "  .space 600", ""]
    with open(out, "w") as f:
        f.write("\n".join(lines))


def main():
    if len(sys.argv) == 3:
        write_program(int(sys.argv[1]), sys.argv[2])
    elif len(sys.argv) == 4:
        for seed in range(int(sys.argv[1]), int(sys.argv[2]) + 1):
            write_program(seed, f"{sys.argv[3]}/p{seed}.S")
    else:
        sys.exit("usage: rv32_random.py SEED OUT.S | rv32_random.py FIRST LAST DIR")


if __name__ == "__main__":
    main()

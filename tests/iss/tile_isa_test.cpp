// Every RV32IMF instruction against expectations derived by hand from the RISC-V unprivileged
// specification (v20191213): integer results, M's division rules, F's rounding modes, flags,
// conversions, NaN rules and classification. Each case runs the instruction on the tile core.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "iss/fpu.h"
#include "tests/support/core_harness.h"
#include "tests/support/rv_asm.h"

namespace ipu::test {
namespace {

using iss::StopReason;
using namespace rv;

// Runs `insn` then `ecall` (a7 = 93) on the supervisor, with the given register set-up.
struct OneInstruction {
  CoreHarness h;
  explicit OneInstruction(uint32_t insn, const std::vector<uint32_t>& more = {}) {
    std::vector<uint32_t> words{insn};
    words.insert(words.end(), more.begin(), more.end());
    words.push_back(ecall());
    h.load_words(words);
    h.x(a7) = 93;
  }
  StopReason run() { return h.run(); }
};

// R-type integer op on a1, a2 into a0.
uint32_t int_op(uint32_t f3, uint32_t f7, uint32_t a, uint32_t b) {
  OneInstruction t(R(0x33, f3, f7, a0, a1, a2));
  t.h.x(a1) = a;
  t.h.x(a2) = b;
  EXPECT_EQ(t.run(), StopReason::kExited);
  return t.h.x(a0);
}

// I-type integer op on a1 into a0.
uint32_t imm_op(uint32_t f3, uint32_t a, int32_t imm) {
  OneInstruction t(I(0x13, f3, a0, a1, imm));
  t.h.x(a1) = a;
  EXPECT_EQ(t.run(), StopReason::kExited);
  return t.h.x(a0);
}

TEST(Rv32i, RegisterRegister) {
  EXPECT_EQ(int_op(0, 0x00, 5, 7), 12u);                    // add
  EXPECT_EQ(int_op(0, 0x00, 0xffffffff, 1), 0u);            // add wraps
  EXPECT_EQ(int_op(0, 0x20, 5, 7), 0xfffffffeu);            // sub
  EXPECT_EQ(int_op(1, 0x00, 1, 33), 2u);                    // sll uses rs2[4:0]
  EXPECT_EQ(int_op(2, 0x00, 0xffffffff, 0), 1u);            // slt: -1 < 0
  EXPECT_EQ(int_op(3, 0x00, 0xffffffff, 0), 0u);            // sltu: 0xffffffff > 0
  EXPECT_EQ(int_op(4, 0x00, 0xf0f0, 0xff00), 0x0ff0u);      // xor
  EXPECT_EQ(int_op(5, 0x00, 0x80000000, 31), 1u);           // srl
  EXPECT_EQ(int_op(5, 0x20, 0x80000000, 31), 0xffffffffu);  // sra
  EXPECT_EQ(int_op(6, 0x00, 0xf0, 0x0f), 0xffu);            // or
  EXPECT_EQ(int_op(7, 0x00, 0xf0, 0x3c), 0x30u);            // and
}

TEST(Rv32i, RegisterImmediate) {
  EXPECT_EQ(imm_op(0, 10, -11), 0xffffffffu);                // addi sign-extends
  EXPECT_EQ(imm_op(2, 0xfffffffe, -1), 1u);                  // slti: -2 < -1
  EXPECT_EQ(imm_op(3, 5, -1), 1u);                           // sltiu: 5 < 0xffffffff
  EXPECT_EQ(imm_op(4, 0x0f, -1), 0xfffffff0u);               // xori -1 = not
  EXPECT_EQ(imm_op(6, 0x100, 0x0ff), 0x1ffu);                // ori
  EXPECT_EQ(imm_op(7, 0xffffffff, 0x7ff), 0x7ffu);           // andi
  EXPECT_EQ(imm_op(1, 3, 4), 48u);                           // slli
  EXPECT_EQ(imm_op(5, 0x80000000, 4), 0x08000000u);          // srli
  EXPECT_EQ(imm_op(5, 0x80000000, 0x400 | 4), 0xf8000000u);  // srai (imm[10] set)
}

TEST(Rv32i, UpperImmediatesAndX0) {
  OneInstruction t(lui(a0, 0x12345), {U(0x17, a1, 0x1), addi(zero, zero, 5)});
  t.run();
  EXPECT_EQ(t.h.x(a0), 0x12345000u);
  EXPECT_EQ(t.h.x(a1), t.h.base() + 4 + 0x1000);  // auipc at base + 4
  EXPECT_EQ(t.h.x(zero), 0u);                     // writes to x0 are discarded
}

TEST(Rv32i, BranchesTakenAndNotTaken) {
  struct Case {
    uint32_t f3;
    uint32_t a, b;
    bool taken;
  };
  const Case cases[] = {
      {0, 3, 3, true},          {0, 3, 4, false},           // beq
      {1, 3, 4, true},          {1, 3, 3, false},           // bne
      {4, 0xffffffff, 0, true}, {4, 0, 0xffffffff, false},  // blt signed
      {5, 0, 0xffffffff, true}, {5, 0xffffffff, 0, false},  // bge signed
      {6, 0, 0xffffffff, true}, {6, 0xffffffff, 0, false},  // bltu
      {7, 0xffffffff, 0, true}, {7, 0, 0xffffffff, false},  // bgeu
      {5, 7, 7, true},          {7, 7, 7, true},            // bge/bgeu on equality
  };
  for (const Case& c : cases) {
    // branch +8 over "addi a0, zero, 1"; a0 ends 1 when not taken, 0 when taken.
    OneInstruction t(B(c.f3, a1, a2, 8), {addi(a0, zero, 1)});
    t.h.x(a1) = c.a;
    t.h.x(a2) = c.b;
    t.run();
    EXPECT_EQ(t.h.x(a0), c.taken ? 0u : 1u) << "funct3 " << c.f3 << " a " << c.a << " b " << c.b;
  }
}

TEST(Rv32i, JumpsLinkAndTarget) {
  // jal ra, +8 ; (skipped) addi a0,zero,1 ; jalr t0, 0(ra)-> goes to... we check links only.
  CoreHarness h;
  const uint32_t base = h.base();
  h.load_words({J(ra, 8), addi(a0, zero, 1), jalr(t0, t1, 1), addi(a0, zero, 2), ecall()});
  h.x(a7) = 93;
  h.x(t1) = base + 16 - 1;  // jalr clears bit 0 of the target: lands on the ecall
  EXPECT_EQ(h.run(), StopReason::kExited);
  EXPECT_EQ(h.x(ra), base + 4);
  EXPECT_EQ(h.x(t0), base + 12);
  EXPECT_EQ(h.x(a0), 0u);  // both addi were jumped over
}

TEST(Rv32i, LoadsExtendAndStoresNarrow) {
  CoreHarness h;
  const uint32_t data = h.base() + 0x1000;
  h.load_words({I(0x03, 0, a0, a1, 0),   // lb
                I(0x03, 4, a2, a1, 0),   // lbu
                I(0x03, 1, a3, a1, 2),   // lh
                I(0x03, 5, a4, a1, 2),   // lhu
                lw(a5, a1, 0),           // lw
                S(0x23, 0, a1, t0, 8),   // sb
                S(0x23, 1, a1, t0, 12),  // sh
                sw(t0, a1, 16),          // sw
                ecall()});
  h.x(a7) = 93;
  h.x(a1) = data;
  h.x(t0) = 0xdeadbeef;
  h.write_word(data, 0x8001ff80);
  EXPECT_EQ(h.run(), StopReason::kExited);
  EXPECT_EQ(h.x(a0), 0xffffff80u);
  EXPECT_EQ(h.x(a2), 0x80u);
  EXPECT_EQ(h.x(a3), 0xffff8001u);
  EXPECT_EQ(h.x(a4), 0x8001u);
  EXPECT_EQ(h.x(a5), 0x8001ff80u);
  EXPECT_EQ(h.read_word(data + 8), 0xefu);
  EXPECT_EQ(h.read_word(data + 12), 0xbeefu);
  EXPECT_EQ(h.read_word(data + 16), 0xdeadbeefu);
}

TEST(Rv32i, StoreOverExecutedCodeTakesEffect) {
  // The first pass executes (and predecodes) "addi a0,zero,1", then overwrites it with
  // "addi a0,zero,7" and loops back; the second pass must execute the new instruction.
  CoreHarness h;
  const uint32_t base = h.base();
  h.load_words({addi(a0, zero, 1),   // +0
                B(1, s0, zero, 16),  // +4: bne s0, zero -> +20 on the second pass
                sw(t1, a1, 0),       // +8: overwrite +0
                addi(s0, zero, 1),   // +12
                J(zero, -16),        // +16: back to +0
                ecall()});           // +20
  h.x(a7) = 93;
  h.x(a1) = base;
  h.x(t1) = addi(a0, zero, 7);
  EXPECT_EQ(h.run(), StopReason::kExited);
  EXPECT_EQ(h.x(a0), 7u);
}

TEST(Rv32i, FenceFenceIAndWfiRetireWithoutEffect) {
  // fence iorw,iorw (0x0ff0000f), fence.i, wfi: each retires in one issue slot.
  CoreHarness h;
  h.load_words({0x0ff0000f, 0x0000100f, 0x10500073, addi(a0, zero, 3), ecall()});
  h.x(a7) = 93;
  EXPECT_EQ(h.run(), StopReason::kExited);
  EXPECT_EQ(h.x(a0), 3u);
  EXPECT_EQ(h.core.instructions_retired(), 5u);
  EXPECT_EQ(h.core.cycles(), 6u * 4 + 1);
}

TEST(Rv32i, TrapEntersMtvecAndMretReturns) {
  // mtvec = handler; the illegal word traps: mepc = its pc, mcause = 2, mtval = the word,
  // MPIE <- MIE (1), MIE <- 0. The handler adds 4 to mepc and returns with mret, which restores
  // MIE from MPIE and sets MPIE.
  CoreHarness h;
  const uint32_t base = h.base();
  const uint32_t handler = base + 0x40;
  std::vector<uint32_t> words(0x40 / 4 + 6, nop());
  words[0] = csrrw(zero, 0x305, a1);      // mtvec <- a1
  words[1] = I(0x73, 6, zero, 8, 0x300);  // csrrsi mstatus, MIE (bit 3)
  words[2] = 0xffffffff;                  // illegal
  words[3] = csrrs(a3, 0x300, zero);      // mstatus after mret
  words[4] = ecall();
  words[handler / 4 - base / 4 + 0] = csrrs(a4, 0x300, zero);  // mstatus inside the handler
  words[handler / 4 - base / 4 + 1] = csrrs(t0, 0x341, zero);  // mepc
  words[handler / 4 - base / 4 + 2] = csrrs(t1, 0x342, zero);  // mcause
  words[handler / 4 - base / 4 + 3] = csrrs(t2, 0x343, zero);  // mtval
  words[handler / 4 - base / 4 + 4] = addi(s0, t0, 4);
  words[handler / 4 - base / 4 + 5] = csrrw(zero, 0x341, s0);
  words.push_back(mret());
  h.load_words(words);
  h.x(a7) = 93;
  h.x(a1) = handler;
  ASSERT_EQ(h.run(), StopReason::kExited) << h.core.fault().message;
  EXPECT_EQ(h.x(t0), base + 8);
  EXPECT_EQ(h.x(t1), 2u);
  EXPECT_EQ(h.x(t2), 0xffffffffu);
  const uint32_t mpp = 3u << 11, fs_initial = 1u << 13, mie = 1u << 3, mpie = 1u << 7;
  EXPECT_EQ(h.x(a4), mpp | fs_initial | mpie);        // in the handler: MIE 0, MPIE 1
  EXPECT_EQ(h.x(a3), mpp | fs_initial | mie | mpie);  // after mret: MIE 1, MPIE 1
}

TEST(Rv32m, MultiplyHighParts) {
  EXPECT_EQ(int_op(0, 1, 0x80000000, 0xffffffff), 0x80000000u);  // mul low word
  EXPECT_EQ(int_op(1, 1, 0xffffffff, 0xffffffff), 0u);           // mulh (-1)(-1) = 1
  EXPECT_EQ(int_op(1, 1, 0x80000000, 0x80000000), 0x40000000u);  // mulh 2^62
  EXPECT_EQ(int_op(2, 1, 0xffffffff, 0xffffffff), 0xffffffffu);  // mulhsu -1 * (2^32-1)
  EXPECT_EQ(int_op(3, 1, 0xffffffff, 0xffffffff), 0xfffffffeu);  // mulhu
}

TEST(Rv32m, DivisionRoundsTowardZeroAndNeverTraps) {
  EXPECT_EQ(int_op(4, 1, 7, static_cast<uint32_t>(-2)), static_cast<uint32_t>(-3));  // div
  EXPECT_EQ(int_op(6, 1, 7, static_cast<uint32_t>(-2)), 1u);                         // rem
  EXPECT_EQ(int_op(6, 1, static_cast<uint32_t>(-7), 2),
            static_cast<uint32_t>(-1));  // rem sign of dividend
  EXPECT_EQ(int_op(5, 1, 7, 2), 3u);     // divu
  EXPECT_EQ(int_op(7, 1, 7, 2), 1u);     // remu
  // Division by zero: quotient all ones, remainder the dividend.
  EXPECT_EQ(int_op(4, 1, 42, 0), 0xffffffffu);
  EXPECT_EQ(int_op(5, 1, 42, 0), 0xffffffffu);
  EXPECT_EQ(int_op(6, 1, 42, 0), 42u);
  EXPECT_EQ(int_op(7, 1, 42, 0), 42u);
  // Signed overflow: INT_MIN / -1 = INT_MIN, remainder 0.
  EXPECT_EQ(int_op(4, 1, 0x80000000, 0xffffffff), 0x80000000u);
  EXPECT_EQ(int_op(6, 1, 0x80000000, 0xffffffff), 0u);
}

TEST(Zicsr, ReadSetClearAndImmediates) {
  CoreHarness h;
  h.load_words({csrrw(a0, 0x340, a1),       // mscratch <- 0xf0, a0 <- 0
                I(0x73, 2, a2, a3, 0x340),  // csrrs a2, mscratch, a3 (set 0x0f) -> a2 = 0xf0
                I(0x73, 3, a4, a5, 0x340),  // csrrc a4, mscratch, a5 (clear 0x81) -> a4 = 0xff
                I(0x73, 5, t0, 3, 0x001),   // csrrwi t0, fflags, 3 -> fflags = 3
                I(0x73, 6, t1, 4, 0x001),   // csrrsi t1, fflags, 4 -> t1 = 3, fflags = 7
                I(0x73, 7, t2, 1, 0x001),   // csrrci t2, fflags, 1 -> t2 = 7, fflags = 6
                csrrs(s0, 0x340, zero),     // read mscratch
                csrrs(s1, 0x003, zero),     // fcsr
                csrrs(a1, 0xf14, zero),     // mhartid
                csrrs(a3, 0x301, zero),     // misa
                ecall()});
  h.x(a7) = 93;
  h.x(a1) = 0xf0;
  h.x(a3) = 0x0f;
  h.x(a5) = 0x81;
  EXPECT_EQ(h.run(), StopReason::kExited);
  EXPECT_EQ(h.x(a0), 0u);
  EXPECT_EQ(h.x(a2), 0xf0u);
  EXPECT_EQ(h.x(a4), 0xffu);
  EXPECT_EQ(h.x(s0), 0x7eu);
  EXPECT_EQ(h.x(t0), 0u);
  EXPECT_EQ(h.x(t1), 3u);
  EXPECT_EQ(h.x(t2), 7u);
  EXPECT_EQ(h.x(s1), 6u);
  EXPECT_EQ(h.x(a1), 0u);  // supervisor is context 0
  // misa: MXL = 1 (RV32), extensions I, M, F and X (non-standard).
  EXPECT_EQ(h.x(a3), (1u << 30) | (1u << ('I' - 'A')) | (1u << ('M' - 'A')) | (1u << ('F' - 'A')) |
                         (1u << ('X' - 'A')));
}

TEST(Zicsr, CountersReadTileCyclesAndRetiredInstructions) {
  // The supervisor alone issues every 6 cycles: instruction k issues at cycle 6k.
  CoreHarness h;
  h.load_words({nop(), nop(), csrrs(a0, 0xb00, zero), csrrs(a1, 0xc02, zero), ecall()});
  h.x(a7) = 93;
  EXPECT_EQ(h.run(), StopReason::kExited);
  EXPECT_EQ(h.x(a0), 12u);  // third instruction: cycle 12
  EXPECT_EQ(h.x(a1), 3u);   // three instructions retired before it
  EXPECT_EQ(h.core.cycles(), 6u * 4 + 1);
  EXPECT_EQ(h.core.instructions_retired(), 5u);
}

TEST(Zicsr, WritingReadOnlyOrUnknownCsrIsIllegal) {
  for (uint32_t insn : {csrrw(a0, 0xf14, a1), csrrw(a0, 0xc00, a1), csrrs(a0, 0x7ff, zero)}) {
    OneInstruction t(insn);
    EXPECT_EQ(t.run(), StopReason::kFault);
    EXPECT_EQ(t.h.core.fault().cause, iss::TrapCause::kIllegalInstruction);
    EXPECT_EQ(t.h.core.fault().tval, insn);
  }
  // Reading a read-only CSR with csrrs x0 source is legal (no write happens).
  OneInstruction t(csrrs(a0, 0xf14, zero));
  EXPECT_EQ(t.run(), StopReason::kExited);
}

// ---- F extension ----

constexpr uint32_t kOne = 0x3f800000, kTwo = 0x40000000, kThree = 0x40400000;
constexpr uint32_t kQNaN = 0x7fc00000, kSNaN = 0x7f800001, kInf = 0x7f800000, kMax = 0x7f7fffff;
constexpr uint32_t NX = 1, UF = 2, OF = 4, DZ = 8, NV = 16;
enum Rm : uint32_t { RNE = 0, RTZ = 1, RDN = 2, RUP = 3, RMM = 4, DYN = 7 };

struct FpResult {
  uint32_t value;
  uint32_t flags;
};

// Runs an OP-FP instruction with funct7 f7 (and rs2 field = rs2_field for unary ops) on
// fa1, fa2 into fa0 (or a0 when the result is an integer).
FpResult fp_op(uint32_t f7, uint32_t rm, uint32_t a, uint32_t b, bool int_result = false,
               uint32_t rs2_field = 12, bool int_source = false) {
  const uint32_t rd = 10, rs1 = 11;
  OneInstruction t(R(0x53, rm, f7, rd, rs1, rs2_field));
  if (int_source)
    t.h.x(rs1) = a;
  else
    t.h.f(rs1) = a;
  t.h.f(12) = b;
  EXPECT_EQ(t.run(), StopReason::kExited);
  return {int_result ? t.h.x(a0) : t.h.f(10), t.h.supervisor().fflags};
}

FpResult fadd(uint32_t a, uint32_t b, uint32_t rm = RNE) { return fp_op(0x00, rm, a, b); }
FpResult fsub(uint32_t a, uint32_t b, uint32_t rm = RNE) { return fp_op(0x04, rm, a, b); }
FpResult fmul(uint32_t a, uint32_t b, uint32_t rm = RNE) { return fp_op(0x08, rm, a, b); }
FpResult fdiv(uint32_t a, uint32_t b, uint32_t rm = RNE) { return fp_op(0x0c, rm, a, b); }
FpResult fsqrt(uint32_t a, uint32_t rm = RNE) { return fp_op(0x2c, rm, a, 0, false, 0); }

void expect_fp(FpResult got, uint32_t value, uint32_t flags, const char* what) {
  EXPECT_EQ(got.value, value) << what << std::hex << " got 0x" << got.value << " want 0x" << value;
  EXPECT_EQ(got.flags, flags) << what << " flags";
}

TEST(Rv32f, AddRoundsInEveryMode) {
  // 1 + 2^-24 lies exactly halfway between 1 and 1 + 2^-23 (the next f32).
  const uint32_t half_ulp = 0x33800000;
  expect_fp(fadd(kOne, half_ulp, RNE), 0x3f800000, NX, "tie to even");
  expect_fp(fadd(kOne, half_ulp, RMM), 0x3f800001, NX, "tie away");
  expect_fp(fadd(kOne, half_ulp, RTZ), 0x3f800000, NX, "toward zero");
  expect_fp(fadd(kOne, half_ulp, RDN), 0x3f800000, NX, "down");
  expect_fp(fadd(kOne, half_ulp, RUP), 0x3f800001, NX, "up");
  // Negative: -1 - 2^-24; down means larger magnitude.
  expect_fp(fadd(0xbf800000, 0xb3800000, RDN), 0xbf800001, NX, "negative down");
  expect_fp(fadd(0xbf800000, 0xb3800000, RUP), 0xbf800000, NX, "negative up");
  expect_fp(fadd(0xbf800000, 0xb3800000, RMM), 0xbf800001, NX, "negative tie away");
  // 1 + 0.75 ulp rounds up to nearest, down toward zero.
  expect_fp(fadd(kOne, 0x33c00000, RNE), 0x3f800001, NX, "above half");
  expect_fp(fadd(kOne, 0x33c00000, RTZ), 0x3f800000, NX, "above half, toward zero");
  expect_fp(fadd(kOne, kTwo, RNE), kThree, 0, "exact");
}

TEST(Rv32f, ExactZeroSumSignDependsOnMode) {
  expect_fp(fadd(kOne, 0xbf800000, RNE), 0x00000000, 0, "x + -x = +0");
  expect_fp(fadd(kOne, 0xbf800000, RDN), 0x80000000, 0, "x + -x = -0 rounding down");
  expect_fp(fsub(kOne, kOne, RDN), 0x80000000, 0, "x - x = -0 rounding down");
  expect_fp(fadd(0x80000000, 0x80000000, RNE), 0x80000000, 0, "-0 + -0 = -0");
  expect_fp(fadd(0x00000000, 0x80000000, RUP), 0x00000000, 0, "+0 + -0 = +0");
}

TEST(Rv32f, OverflowDependsOnMode) {
  expect_fp(fadd(kMax, kMax, RNE), kInf, OF | NX, "nearest to infinity");
  expect_fp(fadd(kMax, kMax, RTZ), kMax, OF | NX, "toward zero to max finite");
  expect_fp(fadd(kMax, kMax, RDN), kMax, OF | NX, "down to max finite");
  expect_fp(fadd(kMax, kMax, RUP), kInf, OF | NX, "up to infinity");
  expect_fp(fmul(0xff7fffff, kTwo, RUP), 0xff7fffff, OF | NX, "negative up to -max");
  expect_fp(fmul(0xff7fffff, kTwo, RDN), 0xff800000, OF | NX, "negative down to -inf");
}

TEST(Rv32f, UnderflowIsDetectedAfterRounding) {
  // 2^-126 * 0.5 = 2^-127: an exact subnormal raises no flag.
  expect_fp(fmul(0x00800000, 0x3f000000), 0x00400000, 0, "exact subnormal");
  // a = (1 - 2^-13) 2^-63, b = (1 + 2^-13) 2^-63: a*b = 2^-126 - 2^-152. Rounded to 24 bits
  // with an unbounded exponent it is 2^-126 (not tiny): NX only. Toward zero it is the largest
  // subnormal and tiny: UF and NX.
  expect_fp(fmul(0x1ffff800, 0x20000400, RNE), 0x00800000, NX, "rounds up to the smallest normal");
  expect_fp(fmul(0x1ffff800, 0x20000400, RTZ), 0x007fffff, UF | NX, "tiny toward zero");
  // Smallest subnormal halved: 2^-150 is a tie between 0 and 2^-149; even is 0.
  expect_fp(fmul(0x00000001, 0x3f000000, RNE), 0x00000000, UF | NX, "to zero");
  expect_fp(fmul(0x00000001, 0x3f000000, RUP), 0x00000001, UF | NX, "up to the smallest subnormal");
}

TEST(Rv32f, DivideAndSquareRoot) {
  expect_fp(fdiv(kOne, 0x00000000), kInf, DZ, "1/0");
  expect_fp(fdiv(0xbf800000, 0x00000000), 0xff800000, DZ, "-1/0");
  expect_fp(fdiv(0x00000000, 0x00000000), kQNaN, NV, "0/0");
  expect_fp(fdiv(kInf, kInf), kQNaN, NV, "inf/inf");
  // 1/3 = 0x3eaaaaaa + 2/3 ulp.
  expect_fp(fdiv(kOne, kThree, RNE), 0x3eaaaaab, NX, "1/3 nearest");
  expect_fp(fdiv(kOne, kThree, RTZ), 0x3eaaaaaa, NX, "1/3 toward zero");
  // sqrt(2) = 1.41421356...; 0x3fb504f3 = 1.41421353816986 is below it, 0x3fb504f4 above.
  expect_fp(fsqrt(kTwo, RNE), 0x3fb504f3, NX, "sqrt 2 nearest");
  expect_fp(fsqrt(kTwo, RUP), 0x3fb504f4, NX, "sqrt 2 up");
  expect_fp(fsqrt(0x41100000), kThree, 0, "sqrt 9 exact");
  expect_fp(fsqrt(0xbf800000), kQNaN, NV, "sqrt -1");
  expect_fp(fsqrt(0x80000000), 0x80000000, 0, "sqrt -0 = -0");
}

TEST(Rv32f, NaNsAreCanonicalAndSignallingRaisesInvalid) {
  expect_fp(fadd(0x7fc12345, kOne), kQNaN, 0, "quiet NaN payload dropped");
  expect_fp(fadd(0xffc00000, kOne), kQNaN, 0, "negative NaN becomes canonical");
  expect_fp(fadd(kSNaN, kOne), kQNaN, NV, "signalling NaN");
  expect_fp(fsub(kOne, 0xff800001, RNE), kQNaN, NV, "negative signalling NaN subtrahend");
  expect_fp(fmul(kInf, 0x00000000), kQNaN, NV, "inf * 0");
  expect_fp(fadd(kInf, 0xff800000), kQNaN, NV, "inf - inf");
}

FpResult fma_op(uint32_t opcode, uint32_t a, uint32_t b, uint32_t c, uint32_t rm = RNE) {
  OneInstruction t(R4(opcode, rm, 10, 11, 12, 13));
  t.h.f(11) = a;
  t.h.f(12) = b;
  t.h.f(13) = c;
  EXPECT_EQ(t.run(), StopReason::kExited);
  return {t.h.f(10), t.h.supervisor().fflags};
}

TEST(Rv32f, FusedMultiplyAddRoundsOnce) {
  // (1 + 2^-23)(1 - 2^-23) - 1 = -2^-46 exactly; a separate multiply would round to 1 and give 0.
  expect_fp(fma_op(0x43, 0x3f800001, 0x3f7ffffe, 0xbf800000), 0xa8800000, 0,
            "fmadd single rounding");
  expect_fp(fma_op(0x43, kTwo, kThree, kOne), 0x40e00000, 0, "fmadd 2*3+1 = 7");
  expect_fp(fma_op(0x47, kTwo, kThree, kOne), 0x40a00000, 0, "fmsub 2*3-1 = 5");
  expect_fp(fma_op(0x4b, kTwo, kThree, kOne), 0xc0a00000, 0, "fnmsub -(2*3)+1 = -5");
  expect_fp(fma_op(0x4f, kTwo, kThree, kOne), 0xc0e00000, 0, "fnmadd -(2*3)-1 = -7");
  // inf * 0 + qNaN raises NV (RISC-V requires it even though the addend is quiet).
  expect_fp(fma_op(0x43, kInf, 0x00000000, kQNaN), kQNaN, NV, "inf*0+qNaN");
  expect_fp(fma_op(0x43, kOne, kOne, kSNaN), kQNaN, NV, "signalling addend");
  // 1*1 + -1 = +0 nearest, -0 rounding down.
  expect_fp(fma_op(0x43, kOne, kOne, 0xbf800000, RDN), 0x80000000, 0, "exact zero rounding down");
}

TEST(Rv32f, SignInjection) {
  expect_fp(fp_op(0x10, 0, 0x3f800000, 0x80000000), 0xbf800000, 0, "fsgnj");
  expect_fp(fp_op(0x10, 1, 0x3f800000, 0x80000000), 0x3f800000, 0, "fsgnjn");
  expect_fp(fp_op(0x10, 2, 0xbf800000, 0x80000000), 0x3f800000, 0, "fsgnjx");
  expect_fp(fp_op(0x10, 0, kSNaN, 0x80000000), 0xff800001, 0, "fsgnj keeps NaN payload, no flag");
}

TEST(Rv32f, MinMaxFollowIeee754_2008WithSignedZeros) {
  expect_fp(fp_op(0x14, 0, 0x80000000, 0x00000000), 0x80000000, 0, "fmin(-0,+0) = -0");
  expect_fp(fp_op(0x14, 1, 0x80000000, 0x00000000), 0x00000000, 0, "fmax(-0,+0) = +0");
  expect_fp(fp_op(0x14, 0, kQNaN, kOne), kOne, 0, "fmin(qNaN,1) = 1");
  expect_fp(fp_op(0x14, 1, kOne, kSNaN), kOne, NV, "fmax(1,sNaN) = 1, invalid");
  expect_fp(fp_op(0x14, 0, kQNaN, 0x7fc00001), kQNaN, 0, "both NaN: canonical");
  expect_fp(fp_op(0x14, 1, kTwo, kThree), kThree, 0, "fmax(2,3)");
  expect_fp(fp_op(0x14, 0, 0xc0000000, kThree), 0xc0000000, 0, "fmin(-2,3)");
}

TEST(Rv32f, ComparesQuietAndSignalling) {
  expect_fp(fp_op(0x50, 2, kQNaN, kOne, true), 0, 0, "feq qNaN: quiet");
  expect_fp(fp_op(0x50, 2, kSNaN, kOne, true), 0, NV, "feq sNaN: invalid");
  expect_fp(fp_op(0x50, 1, kQNaN, kOne, true), 0, NV, "flt qNaN: invalid");
  expect_fp(fp_op(0x50, 0, kOne, kQNaN, true), 0, NV, "fle qNaN: invalid");
  expect_fp(fp_op(0x50, 2, 0x80000000, 0x00000000, true), 1, 0, "feq -0 +0");
  expect_fp(fp_op(0x50, 1, 0x80000000, 0x00000000, true), 0, 0, "flt -0 +0");
  expect_fp(fp_op(0x50, 0, 0x80000000, 0x00000000, true), 1, 0, "fle -0 +0");
  expect_fp(fp_op(0x50, 1, kOne, kTwo, true), 1, 0, "flt 1 2");
}

TEST(Rv32f, ClassifyEveryClass) {
  const std::pair<uint32_t, uint32_t> cases[] = {
      {0xff800000, 1u << 0}, {0xbf800000, 1u << 1}, {0x80000001, 1u << 2}, {0x80000000, 1u << 3},
      {0x00000000, 1u << 4}, {0x00000001, 1u << 5}, {0x3f800000, 1u << 6}, {0x7f800000, 1u << 7},
      {kSNaN, 1u << 8},      {kQNaN, 1u << 9}};
  for (const auto& [value, mask] : cases)
    expect_fp(fp_op(0x70, 1, value, 0, true, 0), mask, 0, "fclass");
}

FpResult to_int(uint32_t value, uint32_t rm, bool is_unsigned) {
  return fp_op(0x60, rm, value, 0, true, is_unsigned ? 1 : 0);
}
FpResult from_int(uint32_t value, uint32_t rm, bool is_unsigned) {
  return fp_op(0x68, rm, value, 0, false, is_unsigned ? 1 : 0, true);
}

TEST(Rv32f, ConvertToIntegerRoundsAndSaturates) {
  const uint32_t two_and_half = 0x40200000, minus_two_and_half = 0xc0200000;
  expect_fp(to_int(two_and_half, RNE, false), 2, NX, "2.5 nearest even");
  expect_fp(to_int(two_and_half, RMM, false), 3, NX, "2.5 away");
  expect_fp(to_int(two_and_half, RUP, false), 3, NX, "2.5 up");
  expect_fp(to_int(two_and_half, RDN, false), 2, NX, "2.5 down");
  expect_fp(to_int(minus_two_and_half, RNE, false), static_cast<uint32_t>(-2), NX,
            "-2.5 nearest even");
  expect_fp(to_int(minus_two_and_half, RMM, false), static_cast<uint32_t>(-3), NX, "-2.5 away");
  expect_fp(to_int(minus_two_and_half, RDN, false), static_cast<uint32_t>(-3), NX, "-2.5 down");
  expect_fp(to_int(minus_two_and_half, RTZ, false), static_cast<uint32_t>(-2), NX,
            "-2.5 toward zero");
  expect_fp(to_int(0x4f32d05e, RNE, false), 0x7fffffff, NV, "3e9 saturates");
  expect_fp(to_int(0xcf32d05e, RNE, false), 0x80000000, NV, "-3e9 saturates");
  expect_fp(to_int(0xcf000000, RNE, false), 0x80000000, 0, "-2^31 exact");
  expect_fp(to_int(0x4f000000, RNE, false), 0x7fffffff, NV, "2^31 overflows");
  expect_fp(to_int(kQNaN, RNE, false), 0x7fffffff, NV, "NaN -> max");
  expect_fp(to_int(0xff800000, RNE, false), 0x80000000, NV, "-inf -> min");
  expect_fp(to_int(kInf, RNE, false), 0x7fffffff, NV, "+inf -> max");
  // Unsigned.
  expect_fp(to_int(0xbf800000, RNE, true), 0, NV, "-1 -> 0 invalid");
  expect_fp(to_int(0xbf000000, RTZ, true), 0, NX, "-0.5 toward zero is 0: inexact only");
  expect_fp(to_int(0x4f7fffff, RNE, true), 0xffffff00, 0, "largest f32 below 2^32");
  expect_fp(to_int(0x4f800000, RNE, true), 0xffffffff, NV, "2^32 overflows");
  expect_fp(to_int(kQNaN, RNE, true), 0xffffffff, NV, "NaN -> max");
  expect_fp(to_int(0xff800000, RNE, true), 0, NV, "-inf -> 0");
}

TEST(Rv32f, ConvertFromIntegerRounds) {
  // 2^24 + 1 needs 25 bits: a tie between 2^24 and 2^24 + 2.
  expect_fp(from_int(16777217, RNE, false), 0x4b800000, NX, "tie to even");
  expect_fp(from_int(16777217, RMM, false), 0x4b800001, NX, "tie away");
  expect_fp(from_int(16777217, RUP, false), 0x4b800001, NX, "up");
  expect_fp(from_int(static_cast<uint32_t>(-16777217), RDN, false), 0xcb800001, NX,
            "negative down");
  expect_fp(from_int(static_cast<uint32_t>(-1), RNE, false), 0xbf800000, 0, "-1 exact");
  expect_fp(from_int(0xffffffff, RNE, true), 0x4f800000, NX, "2^32-1 unsigned nearest");
  expect_fp(from_int(0xffffffff, RTZ, true), 0x4f7fffff, NX, "2^32-1 unsigned toward zero");
  expect_fp(from_int(0x80000000, RNE, false), 0xcf000000, 0, "INT_MIN exact");
}

TEST(Rv32f, MovesLoadsAndStoresKeepBits) {
  CoreHarness h;
  const uint32_t data = h.base() + 0x800;
  h.load_words({R(0x53, 0, 0x78, 1, a1, 0),  // fmv.w.x f1, a1
                R(0x53, 0, 0x70, a0, 1, 0),  // fmv.x.w a0, f1
                I(0x07, 2, 2, a2, 0),        // flw f2, 0(a2)
                S(0x27, 2, a2, 2, 4),        // fsw f2, 4(a2)
                ecall()});
  h.x(a7) = 93;
  h.x(a1) = kSNaN;  // a signalling NaN passes through moves untouched
  h.x(a2) = data;
  h.write_word(data, 0xffc12345);
  EXPECT_EQ(h.run(), StopReason::kExited);
  EXPECT_EQ(h.x(a0), kSNaN);
  EXPECT_EQ(h.f(2), 0xffc12345u);
  EXPECT_EQ(h.read_word(data + 4), 0xffc12345u);
  EXPECT_EQ(h.supervisor().fflags, 0u);
}

TEST(Rv32f, DynamicRoundingModeComesFromFrm) {
  OneInstruction t(R(0x53, DYN, 0x00, 10, 11, 12));  // fadd.s fa0, fa1, fa2, dyn
  t.h.f(11) = kOne;
  t.h.f(12) = 0x33800000;
  t.h.supervisor().frm = RMM;
  EXPECT_EQ(t.run(), StopReason::kExited);
  EXPECT_EQ(t.h.f(10), 0x3f800001u);  // tie away, as frm says
}

TEST(Rv32f, ReservedRoundingModesAreIllegal) {
  for (uint32_t rm : {5u, 6u}) {
    OneInstruction t(R(0x53, rm, 0x00, 10, 11, 12));
    EXPECT_EQ(t.run(), StopReason::kFault);
    EXPECT_EQ(t.h.core.fault().cause, iss::TrapCause::kIllegalInstruction);
  }
  OneInstruction t(R(0x53, DYN, 0x00, 10, 11, 12));
  t.h.supervisor().frm = 5;  // dynamic with an invalid frm
  EXPECT_EQ(t.run(), StopReason::kFault);
  EXPECT_EQ(t.h.core.fault().cause, iss::TrapCause::kIllegalInstruction);
}

TEST(Rv32f, FloatingPointOffInMstatusIsIllegal) {
  OneInstruction t(R(0x53, RNE, 0x00, 10, 11, 12));
  t.h.supervisor().mstatus &= ~iss::kMstatusFs;
  EXPECT_EQ(t.run(), StopReason::kFault);
  EXPECT_EQ(t.h.core.fault().cause, iss::TrapCause::kIllegalInstruction);
}

TEST(Rv32f, FlagsAccrueAcrossInstructions) {
  CoreHarness h;
  h.load_words({R(0x53, RNE, 0x0c, 1, 2, 3),  // fdiv f1, f2, f3 (1/0: DZ)
                R(0x53, RNE, 0x00, 4, 5, 6),  // fadd f4, f5, f6 (1 + 2^-24: NX)
                csrrs(a0, 0x003, zero), ecall()});
  h.x(a7) = 93;
  h.f(2) = kOne;
  h.f(3) = 0;
  h.f(5) = kOne;
  h.f(6) = 0x33800000;
  EXPECT_EQ(h.run(), StopReason::kExited);
  EXPECT_EQ(h.x(a0), DZ | NX);
}

}  // namespace
}  // namespace ipu::test

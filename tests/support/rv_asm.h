// A minimal RV32IMF assembler for tests: the six base instruction formats and R4, with field
// values typed from the RISC-V unprivileged specification's opcode map (chapter 34), not from
// the simulator's table, so that a wrong table entry fails the tests.
#pragma once

#include <cstdint>

namespace ipu::test::rv {

constexpr uint32_t R(uint32_t opcode, uint32_t f3, uint32_t f7, uint32_t rd, uint32_t rs1,
                     uint32_t rs2) {
  return (f7 << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | opcode;
}
constexpr uint32_t R4(uint32_t opcode, uint32_t rm, uint32_t rd, uint32_t rs1, uint32_t rs2,
                      uint32_t rs3) {
  return (rs3 << 27) | (0u << 25) | (rs2 << 20) | (rs1 << 15) | (rm << 12) | (rd << 7) | opcode;
}
constexpr uint32_t I(uint32_t opcode, uint32_t f3, uint32_t rd, uint32_t rs1, int32_t imm) {
  return (static_cast<uint32_t>(imm & 0xfff) << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | opcode;
}
constexpr uint32_t S(uint32_t opcode, uint32_t f3, uint32_t rs1, uint32_t rs2, int32_t imm) {
  const uint32_t u = static_cast<uint32_t>(imm);
  return (((u >> 5) & 0x7f) << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | ((u & 0x1f) << 7) |
         opcode;
}
constexpr uint32_t B(uint32_t f3, uint32_t rs1, uint32_t rs2, int32_t offset) {
  const uint32_t u = static_cast<uint32_t>(offset);
  return (((u >> 12) & 1) << 31) | (((u >> 5) & 0x3f) << 25) | (rs2 << 20) | (rs1 << 15) |
         (f3 << 12) | (((u >> 1) & 0xf) << 8) | (((u >> 11) & 1) << 7) | 0x63;
}
constexpr uint32_t U(uint32_t opcode, uint32_t rd, uint32_t upper20) {
  return (upper20 << 12) | (rd << 7) | opcode;
}
constexpr uint32_t J(uint32_t rd, int32_t offset) {
  const uint32_t u = static_cast<uint32_t>(offset);
  return (((u >> 20) & 1) << 31) | (((u >> 1) & 0x3ff) << 21) | (((u >> 11) & 1) << 20) |
         (((u >> 12) & 0xff) << 12) | (rd << 7) | 0x6f;
}

// Frequently used instructions.
constexpr uint32_t addi(uint32_t rd, uint32_t rs1, int32_t imm) { return I(0x13, 0, rd, rs1, imm); }
constexpr uint32_t lui(uint32_t rd, uint32_t upper20) { return U(0x37, rd, upper20); }
constexpr uint32_t jalr(uint32_t rd, uint32_t rs1, int32_t imm) { return I(0x67, 0, rd, rs1, imm); }
constexpr uint32_t lw(uint32_t rd, uint32_t rs1, int32_t imm) { return I(0x03, 2, rd, rs1, imm); }
constexpr uint32_t sw(uint32_t rs2, uint32_t rs1, int32_t imm) { return S(0x23, 2, rs1, rs2, imm); }
constexpr uint32_t csrrw(uint32_t rd, uint32_t csr, uint32_t rs1) {
  return I(0x73, 1, rd, rs1, static_cast<int32_t>(csr));
}
constexpr uint32_t csrrs(uint32_t rd, uint32_t csr, uint32_t rs1) {
  return I(0x73, 2, rd, rs1, static_cast<int32_t>(csr));
}
constexpr uint32_t ecall() { return 0x00000073; }
constexpr uint32_t ebreak() { return 0x00100073; }
constexpr uint32_t mret() { return 0x30200073; }
constexpr uint32_t nop() { return addi(0, 0, 0); }
// Xipu (custom-0): ipu.run rd, rs1, rs2; ipu.runall rs1, rs2; ipu.join; ipu.wexit.
constexpr uint32_t ipu_run(uint32_t rd, uint32_t rs1, uint32_t rs2) {
  return R(0x0b, 0, 0, rd, rs1, rs2);
}
constexpr uint32_t ipu_runall(uint32_t rs1, uint32_t rs2) { return R(0x0b, 0, 1, 0, rs1, rs2); }
constexpr uint32_t ipu_join() { return R(0x0b, 1, 0, 0, 0, 0); }
constexpr uint32_t ipu_wexit() { return R(0x0b, 2, 0, 0, 0, 0); }

// Register numbers by ABI name.
enum : uint32_t {
  zero = 0,
  ra = 1,
  sp = 2,
  t0 = 5,
  t1 = 6,
  t2 = 7,
  s0 = 8,
  s1 = 9,
  a0 = 10,
  a1 = 11,
  a2 = 12,
  a3 = 13,
  a4 = 14,
  a5 = 15,
  a7 = 17
};

}  // namespace ipu::test::rv

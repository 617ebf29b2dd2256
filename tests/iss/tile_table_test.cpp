// The instruction tables themselves: no two encodings overlap (across RV32IMF and Xipu), each
// entry decodes to itself, and the disassembler agrees with GNU objdump on compiled firmware.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <regex>
#include <string>

#include "iss/csr.h"
#include "iss/isa.h"
#include "sdk/image/elf_reader.h"

namespace ipu::test {
namespace {

using iss::InsnSpec;

TEST(InstructionTable, NoTwoEncodingsOverlap) {
  // Two entries overlap when some word matches both: their fixed bits agree wherever both masks
  // fix a bit.
  for (const InsnSpec& a : iss::instruction_table()) {
    for (const InsnSpec& b : iss::instruction_table()) {
      if (&a == &b) continue;
      const uint32_t common = a.mask & b.mask;
      EXPECT_NE(a.match & common, b.match & common) << a.mnemonic << " overlaps " << b.mnemonic;
    }
  }
}

TEST(InstructionTable, MatchBitsLieInsideMaskAndDecodeToThemselves) {
  for (const InsnSpec& s : iss::instruction_table()) {
    EXPECT_EQ(s.match & ~s.mask, 0u) << s.mnemonic;
    EXPECT_EQ(s.match & 3, 3u) << s.mnemonic << ": not a 32-bit encoding";
    // Use a valid static rounding mode (RNE) for instructions with an rm field.
    EXPECT_EQ(iss::decode(s.match).op, s.op) << s.mnemonic;
  }
}

TEST(InstructionTable, XipuLivesInTheCustomOpcodesOnly) {
  // custom-0 0x0b, custom-1 0x2b, custom-2 0x5b, custom-3 0x7b: reserved for extensions by the
  // RISC-V base opcode map, so Xipu can never take an encoding from a standard extension.
  for (const InsnSpec& s : iss::instruction_table()) {
    const uint32_t opcode = s.match & 0x7f;
    const bool custom = opcode == 0x0b || opcode == 0x2b || opcode == 0x5b || opcode == 0x7b;
    EXPECT_EQ(custom, s.isa == iss::Isa::kXipu) << s.mnemonic;
    EXPECT_EQ(s.mask & 0x7f, 0x7fu) << s.mnemonic << ": opcode not fully decoded";
  }
}

TEST(InstructionTable, UnknownWordsAreIllegal) {
  EXPECT_EQ(iss::decode(0x00000000).op, iss::Op::kIllegal);  // all zeros is defined illegal
  EXPECT_EQ(iss::decode(0xffffffff).op, iss::Op::kIllegal);
  EXPECT_EQ(iss::decode(0x0200003b).op, iss::Op::kIllegal);  // mulw: RV64 only
  EXPECT_EQ(iss::decode(0x0400700b).op, iss::Op::kIllegal);  // custom-0 funct3 7 beyond the sorts
}

TEST(CsrTable, NumbersAreUniqueAndAccessMatchesTheSpecConvention) {
  for (const iss::CsrInfo& a : iss::kCsrTable) {
    EXPECT_EQ(iss::csr_name(a.number), a.name);
    // CSR numbers with bits 11:10 == 3 are read-only by the privileged spec's convention.
    if (((a.number >> 10) & 3) == 3) {
      EXPECT_EQ(a.access, iss::CsrAccess::kReadOnly) << a.name;
    }
  }
}

// Disassembles every instruction of a compiled firmware image and compares with objdump's
// no-aliases listing. objdump prints branch targets as bare hex followed by <symbol>, and fence
// operands and custom encodings in its own way; those are normalised or skipped.
TEST(Disassembler, AgreesWithGnuObjdump) {
  const std::string elf = IPU_DEMO_ELF;
  const std::string cmd = fmt::format("riscv64-unknown-elf-objdump -d -M no-aliases {}", elf);
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  ASSERT_TRUE(pipe) << cmd;
  const std::regex line_re(R"(^\s*([0-9a-f]+):\s+([0-9a-f]{8})\s+(\S+)\s*(.*)$)");
  char buf[512];
  unsigned compared = 0;
  while (fgets(buf, sizeof buf, pipe.get()) != nullptr) {
    std::string line(buf);
    if (!line.empty() && line.back() == '\n') line.pop_back();
    std::smatch m;
    if (!std::regex_match(line, m, line_re)) continue;
    const uint32_t pc = std::stoul(m[1], nullptr, 16);
    const uint32_t word = std::stoul(m[2], nullptr, 16);
    std::string mnemonic = m[3], operands = m[4];
    if (mnemonic == "fence" || mnemonic[0] == '.' || mnemonic.rfind("0x", 0) == 0) continue;
    if (iss::decode(word).op == iss::Op::kIllegal) continue;  // data in .text, custom words
    operands = std::regex_replace(operands, std::regex(R"(\s*<[^>]*>)"), "");
    operands = std::regex_replace(operands, std::regex(R"(\s*#.*$)"), "");
    // objdump prints absolute targets as bare hex.
    if (mnemonic == "jal" || mnemonic[0] == 'b') {
      operands = std::regex_replace(operands, std::regex(R"(([0-9a-f]+)$)"), "0x$1");
    }
    std::string expected = operands.empty() ? mnemonic : mnemonic + " " + operands;
    // Custom CSRs: objdump prints their number.
    expected = std::regex_replace(expected, std::regex("0x7c0"), "ipu_console");
    expected = std::regex_replace(expected, std::regex("0x7c1"), "ipu_wentry");
    expected = std::regex_replace(expected, std::regex("0x7cd"), "ipu_stacklo");
    expected = std::regex_replace(expected, std::regex("0x7ce"), "ipu_stackhi");
    EXPECT_EQ(iss::disassemble(word, pc), expected)
        << fmt::format("pc 0x{:x} word 0x{:08x}", pc, word);
    ++compared;
  }
  EXPECT_GT(compared, 1000u) << "objdump listing too short: is " << elf << " built?";
}

}  // namespace
}  // namespace ipu::test

// The tile's instruction set (RV32IMF + Zicsr + Xipu) as data: the spec table expanded from
// rv32imf.def and xipu.def, the decoder and the disassembler that read it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "iss/insn_class.h"

namespace ipu::iss {

// How the immediate is assembled from the instruction word (RISC-V unprivileged spec, ch. 2).
enum class ImmKind : uint8_t { ImmNone, ImmI, ImmS, ImmB, ImmU, ImmJ, Shamt, Csr };

enum class Op : uint16_t {
  kUndecoded = 0,  // predecode-cache slot not yet decoded
  kIllegal,        // no table entry matches
#define INSN(id, ...) id,
#define XINSN(id, ...) id,
#include "rv32imf.def"
#include "xipu.def"
#undef XINSN
#undef INSN
  kCount
};

enum class Isa : uint8_t { kRv32imf, kXipu };

struct InsnSpec {
  Op op;
  std::string_view mnemonic;
  uint32_t match;
  uint32_t mask;
  ImmKind imm;
  std::string_view operands;  // assembler syntax, e.g. "rd,off(rs1)"
  unsigned issue_slots;       // issue slots of its context the instruction occupies
  Isa isa;
  bool writes_xrd;  // destination is an integer register (x0 writes are discarded)
  bool has_rounding_mode;
  // Xipu only: the C intrinsic in firmware's ipu_xipu.h and a one-line summary for the docs.
  std::string_view c_return;
  std::string_view c_name;
  std::string_view c_params;
  std::string_view summary;
};

// The whole table, in declaration order (RV32IMF first, then Xipu).
struct InsnTable {
  const InsnSpec* begin() const;
  const InsnSpec* end() const;
  size_t size() const { return static_cast<size_t>(end() - begin()); }
};
InsnTable instruction_table();

// Spec of a decoded op; nullptr for kUndecoded/kIllegal.
const InsnSpec* spec_of(Op op);

// A decoded instruction: fields as in the word, immediate sign-extended and assembled. 16
// bytes, so the interpreter's fast loops turn an entry's address into its pc with a shift.
struct alignas(16) Decoded {
  Op op = Op::kUndecoded;
  uint8_t rd = 0, rs1 = 0, rs2 = 0, rs3 = 0;
  uint8_t rm = 0;  // funct3 rounding-mode field; 7 = dynamic (frm)
  int32_t imm = 0;
};

// Decodes one 32-bit instruction word. Returns op == kIllegal when no table entry matches or
// when a static rounding mode is reserved (5, 6).
Decoded decode(uint32_t word);

// Disassembles in GNU objdump's no-aliases syntax with ABI register names, e.g.
// "addi a0,sp,16", "jal ra,0x4c0a0", "fcvt.w.s a0,fa0,rtz". pc resolves pc-relative targets.
std::string disassemble(uint32_t word, uint32_t pc);

std::string_view x_register_name(unsigned index);
std::string_view f_register_name(unsigned index);

}  // namespace ipu::iss

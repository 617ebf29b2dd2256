#include "isa.h"

#include <fmt/format.h>

#include <array>

#include "csr.h"

namespace ipu::iss {
namespace {

constexpr bool first_operand_is(std::string_view operands, std::string_view name) {
  return operands.substr(0, operands.find(',')) == name;
}

constexpr bool has_token(std::string_view operands, std::string_view token) {
  return operands.find(token) != std::string_view::npos;
}

// clang-format off
#define INSN(id, mnemonic, match, mask, imm, operands, slots, ...)                            \
  InsnSpec{Op::id, mnemonic, match, mask, ImmKind::imm, operands, slots, kIsa,               \
           first_operand_is(operands, "rd"), has_token(operands, "rm"), {}, {}, {}, {}},
#define XINSN(id, mnemonic, match, mask, imm, operands, slots, c_return, c_name, c_params,    \
              summary, ...)                                                                  \
  InsnSpec{Op::id, mnemonic, match, mask, ImmKind::imm, operands, slots, kIsa,               \
           first_operand_is(operands, "rd"), has_token(operands, "rm"), c_return, c_name,    \
           c_params, summary},
// clang-format on

constexpr InsnSpec kTable[] = {
#define kIsa Isa::kRv32imf
#include "rv32imf.def"
#undef kIsa
#define kIsa Isa::kXipu
#include "xipu.def"
#undef kIsa
};
#undef XINSN
#undef INSN

static_assert(std::size(kTable) + 2 == static_cast<size_t>(Op::kCount));

constexpr int32_t sign_extend(uint32_t value, unsigned bits) {
  const uint32_t m = 1u << (bits - 1);
  return static_cast<int32_t>((value ^ m) - m);
}

int32_t immediate(ImmKind kind, uint32_t w) {
  switch (kind) {
    case ImmKind::ImmNone: return 0;
    case ImmKind::ImmI: return sign_extend(w >> 20, 12);
    case ImmKind::ImmS: return sign_extend(((w >> 25) << 5) | ((w >> 7) & 0x1f), 12);
    case ImmKind::ImmB:
      return sign_extend(((w >> 31) << 12) | (((w >> 7) & 1) << 11) | (((w >> 25) & 0x3f) << 5) |
                             (((w >> 8) & 0xf) << 1),
                         13);
    case ImmKind::ImmU: return static_cast<int32_t>(w & 0xfffff000u);
    case ImmKind::ImmJ:
      return sign_extend(((w >> 31) << 20) | (((w >> 12) & 0xff) << 12) | (((w >> 20) & 1) << 11) |
                             (((w >> 21) & 0x3ff) << 1),
                         21);
    case ImmKind::Shamt: return static_cast<int32_t>((w >> 20) & 0x1f);
    case ImmKind::Csr: return static_cast<int32_t>(w >> 20);
  }
  return 0;
}

constexpr std::array<std::string_view, 32> kXNames = {
    "zero", "ra", "sp", "gp", "tp",  "t0",  "t1", "t2", "s0", "s1", "a0",
    "a1",   "a2", "a3", "a4", "a5",  "a6",  "a7", "s2", "s3", "s4", "s5",
    "s6",   "s7", "s8", "s9", "s10", "s11", "t3", "t4", "t5", "t6"};
constexpr std::array<std::string_view, 32> kFNames = {
    "ft0", "ft1", "ft2", "ft3", "ft4",  "ft5",  "ft6", "ft7", "fs0",  "fs1", "fa0",
    "fa1", "fa2", "fa3", "fa4", "fa5",  "fa6",  "fa7", "fs2", "fs3",  "fs4", "fs5",
    "fs6", "fs7", "fs8", "fs9", "fs10", "fs11", "ft8", "ft9", "ft10", "ft11"};
constexpr std::array<std::string_view, 8> kRoundingNames = {"rne", "rtz", "rdn", "rup",
                                                            "rmm", "rm5", "rm6", "dyn"};

}  // namespace

const InsnSpec* InsnTable::begin() const { return std::begin(kTable); }
const InsnSpec* InsnTable::end() const { return std::end(kTable); }
InsnTable instruction_table() { return {}; }

const InsnSpec* spec_of(Op op) {
  const auto index = static_cast<size_t>(op);
  if (index < 2 || index >= static_cast<size_t>(Op::kCount)) return nullptr;
  return &kTable[index - 2];
}

Decoded decode(uint32_t word) {
  Decoded d;
  d.op = Op::kIllegal;
  for (const InsnSpec& s : kTable) {
    if ((word & s.mask) != s.match) continue;
    d.rm = static_cast<uint8_t>((word >> 12) & 7);
    if (s.has_rounding_mode && (d.rm == 5 || d.rm == 6)) return d;  // reserved modes
    d.op = s.op;
    d.rd = static_cast<uint8_t>((word >> 7) & 31);
    d.rs1 = static_cast<uint8_t>((word >> 15) & 31);
    d.rs2 = static_cast<uint8_t>((word >> 20) & 31);
    d.rs3 = static_cast<uint8_t>(word >> 27);
    d.imm = immediate(s.imm, word);
    return d;
  }
  return d;
}

std::string_view x_register_name(unsigned index) { return kXNames.at(index); }
std::string_view f_register_name(unsigned index) { return kFNames.at(index); }

std::string disassemble(uint32_t word, uint32_t pc) {
  const Decoded d = decode(word);
  const InsnSpec* s = spec_of(d.op);
  if (s == nullptr) return fmt::format(".word 0x{:08x}", word);

  std::string out(s->mnemonic);
  std::string_view ops = s->operands;
  bool first = true;
  while (!ops.empty()) {
    const size_t comma = ops.find(',');
    const std::string_view tok = ops.substr(0, comma);
    ops = comma == std::string_view::npos ? std::string_view{} : ops.substr(comma + 1);
    std::string text;
    // Pair, quad and accumulator operands (rdp, fdp, fs1p, fdq, fda) print their first register.
    std::string_view base_tok = tok;
    const char last = tok.back();
    if (tok.size() > 2 && (last == 'p' || last == 'q' || last == 'a')) base_tok.remove_suffix(1);
    if (base_tok != tok) {
      if (base_tok == "rd")
        text = kXNames[d.rd];
      else if (base_tok == "fd")
        text = kFNames[d.rd];
      else if (base_tok == "fs1")
        text = kFNames[d.rs1];
      else if (base_tok == "fs2")
        text = kFNames[d.rs2];
      else if (base_tok == "fs3")
        text = kFNames[d.rs3];
    } else if (tok == "rd")
      text = kXNames[d.rd];
    else if (tok == "rs1")
      text = kXNames[d.rs1];
    else if (tok == "rs2")
      text = kXNames[d.rs2];
    else if (tok == "fd")
      text = kFNames[d.rd];
    else if (tok == "fs1")
      text = kFNames[d.rs1];
    else if (tok == "fs2")
      text = kFNames[d.rs2];
    else if (tok == "fs3")
      text = kFNames[d.rs3];
    else if (tok == "imm")
      text = fmt::format("{}", d.imm);
    else if (tok == "shamt")
      text = fmt::format("0x{:x}", d.imm);
    else if (tok == "uimm")
      text = fmt::format("0x{:x}", static_cast<uint32_t>(d.imm) >> 12);
    else if (tok == "off(rs1)")
      text = fmt::format("{}({})", d.imm, kXNames[d.rs1]);
    else if (tok == "target")
      text = fmt::format("0x{:x}", pc + static_cast<uint32_t>(d.imm));
    else if (tok == "zimm")
      text = fmt::format("{}", d.rs1);
    else if (tok == "csr") {
      const std::string_view name = csr_name(static_cast<unsigned>(d.imm));
      text = name.empty() ? fmt::format("0x{:x}", d.imm) : std::string(name);
    } else if (tok == "rm") {
      if (d.rm == 7) continue;  // dynamic rounding is the default and not printed
      text = kRoundingNames[d.rm];
    }
    out += first ? " " : ",";
    out += text;
    first = false;
  }
  return out;
}

std::string_view insn_class_name(InsnClass cls) {
  static constexpr std::string_view kNames[] = {"integer",     "branch", "load",    "store",
                                                "fpu",         "simd",   "amp-f16", "amp-f32",
                                                "amp-weights", "control"};
  static_assert(std::size(kNames) == kInsnClasses);
  return cls < InsnClass::kCount ? kNames[static_cast<size_t>(cls)] : "?";
}

}  // namespace ipu::iss

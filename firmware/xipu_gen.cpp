// xipu_gen: writes the parts of the firmware and docs that come from the Xipu instruction table
// (iss/xipu.def), so that they can never disagree with the simulator.
//
//   xipu_gen --header FILE   C intrinsics, one per Xipu instruction (firmware's ipu_xipu.h)
//   xipu_gen --docs FILE     the reference page (docs/xipu.md)
//
// Each intrinsic emits its instruction with GNU as's .insn directive. Scalar operands use
// ordinary asm constraints; register pairs and quads are pinned to fixed registers (ft0-ft5
// for sources, ft8-ft11 for results, t3/t4 for integer pairs) because ilp32f has no 64-bit FP
// type that GCC could allocate to a pair.
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "iss/csr.h"
#include "iss/isa.h"

namespace {

using ipu::iss::InsnSpec;

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char ch : text) {
    if (ch == '(') ++depth;
    if (ch == ')') --depth;
    if (ch == sep && depth == 0) {
      out.push_back(cur);
      cur.clear();
      continue;
    }
    cur += ch;
  }
  if (!cur.empty()) out.push_back(cur);
  for (std::string& s : out) {
    const size_t b = s.find_first_not_of(' '), e = s.find_last_not_of(' ');
    s = b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
  }
  return out;
}

// "ipu_f32x2 a" -> {"ipu_f32x2", "a"}; "void (*fn)(void *)" -> {type with name, "fn"}.
std::pair<std::string, std::string> param_name(const std::string& decl) {
  const size_t star = decl.find("(*");
  if (star != std::string::npos) {
    const size_t close = decl.find(')', star);
    return {decl, decl.substr(star + 2, close - star - 2)};
  }
  const size_t cut = decl.find_last_of(" *");
  return {decl.substr(0, cut + 1), decl.substr(cut + 1)};
}

bool is_destination(const std::string& tok) {
  return tok.rfind("rd", 0) == 0 || tok.rfind("fd", 0) == 0;
}

// Fixed registers of pair/quad operands: sources ft0.. by position, results ft8...
const char* kPairSource[] = {"ft0", "ft2", "ft4"};
const char* kFixedF[] = {"ft0", "ft1", "ft2", "ft3", "ft4",  "ft5",
                         "ft6", "ft7", "ft8", "ft9", "ft10", "ft11"};

std::string intrinsic(const InsnSpec& s) {
  const std::vector<std::string> tokens = split(s.operands, ',');
  std::vector<std::string> params = split(s.c_params, ',');
  std::string dest;
  std::vector<std::string> sources;
  for (const std::string& t : tokens) {
    if (dest.empty() && sources.empty() && is_destination(t))
      dest = t;
    else
      sources.push_back(t);
  }

  const bool noreturn = s.c_return == "noreturn";
  const std::string ret = noreturn ? "void" : std::string(s.c_return);
  std::ostringstream body, outs, ins;
  std::vector<std::string> out_list, in_list;
  std::string fields[4] = {"x0", "x0", "x0", "x0"};  // rd rs1 rs2 rs3
  std::string result;                                // expression returned
  std::string epilogue;                              // statements after the instruction
  size_t p = 0;

  // Destination.
  if (dest == "rd") {
    body << "  uint32_t rd_;\n";
    out_list.push_back("[rd] \"=r\"(rd_)");
    fields[0] = "%[rd]";
    result = fmt::format("({})rd_", ret);
  } else if (dest == "rdp") {
    body << "  register uint32_t lo_ __asm__(\"t3\"), hi_ __asm__(\"t4\");\n";
    out_list.push_back("\"=r\"(lo_)");
    out_list.push_back("\"=r\"(hi_)");
    fields[0] = "t3";
    result = "((uint64_t)hi_ << 32) | lo_";
  } else if (dest == "fd") {
    body << "  float fd_;\n";
    out_list.push_back("[fd] \"=f\"(fd_)");
    fields[0] = "%[fd]";
    // A vector type wraps its register (.r[0]); a float is the register itself.
    result = ret == "float" ? std::string("fd_") : fmt::format("({}){{{{fd_}}}}", ret);
  } else if (dest == "fda") {
    const auto [type, name] = param_name(params.at(p++));
    body << fmt::format("  float fd_ = {};\n", name);
    out_list.push_back("[fd] \"+f\"(fd_)");
    fields[0] = "%[fd]";
    result = "fd_";
  } else if (dest == "fdp" || dest == "fdq") {
    const unsigned n = dest == "fdp" ? 2 : 4;
    for (unsigned i = 0; i < n; ++i) {
      body << fmt::format("  register float d{}_ __asm__(\"{}\");\n", i, kFixedF[8 + i]);
      out_list.push_back(fmt::format("\"=f\"(d{}_)", i));
    }
    fields[0] = "ft8";
    result = n == 2 ? fmt::format("({}){{{{d0_, d1_}}}}", ret)
                    : fmt::format("({}){{{{d0_, d1_, d2_, d3_}}}}", ret);
  }

  // Sources.
  unsigned pair_index = 0;
  for (size_t i = 0; i < sources.size(); ++i) {
    const std::string& tok = sources[i];
    const auto [type, name] = param_name(params.at(p++));
    const unsigned field = tok.find("s1") != std::string::npos   ? 1
                           : tok.find("s2") != std::string::npos ? 2
                                                                 : 3;
    if (tok == "rs1p") {  // a load and a store pointer in t5/t6, advanced by the instruction
      body << fmt::format(
          "  register uint32_t p0_ __asm__(\"t5\") = (uint32_t)(uintptr_t){0}->load, p1_ "
          "__asm__(\"t6\") = "
          "(uint32_t)(uintptr_t){0}->store;\n",
          name);
      out_list.push_back("\"+r\"(p0_)");
      out_list.push_back("\"+r\"(p1_)");
      fields[1] = "t5";
      epilogue += fmt::format(
          "  {0}->load = (const void *)(uintptr_t)p0_;\n  {0}->store = (void *)(uintptr_t)p1_;\n",
          name);
    } else if (tok == "off(rs1)") {  // an address; the intrinsic's offset is 0
      in_list.push_back(fmt::format("[rs1] \"r\"((uint32_t)(uintptr_t)({}))", name));
      fields[1] = "0(%[rs1])";
    } else if (tok[0] == 'r') {
      in_list.push_back(fmt::format("[{}] \"r\"((uint32_t)(uintptr_t)({}))", tok, name));
      fields[field] = fmt::format("%[{}]", tok);
    } else if (tok.back() == 'p') {
      const unsigned base = 2 * pair_index++;
      body << fmt::format(
          "  register float s{}_ __asm__(\"{}\") = {}.r[0], s{}_ __asm__(\"{}\") = {}.r[1];\n",
          base, kFixedF[base], name, base + 1, kFixedF[base + 1], name);
      in_list.push_back(fmt::format("\"f\"(s{}_)", base));
      in_list.push_back(fmt::format("\"f\"(s{}_)", base + 1));
      fields[field] = kPairSource[base / 2];
    } else {
      // A vector type holds its register in r[0]; a float is the register itself.
      const bool scalar = type.find("float") != std::string::npos;
      in_list.push_back(fmt::format("[{}] \"f\"({}{})", tok, name, scalar ? "" : ".r[0]"));
      fields[field] = fmt::format("%[{}]", tok);
    }
  }

  const uint32_t opcode = s.match & 0x7f, funct3 = (s.match >> 12) & 7;
  std::string insn;
  if (s.imm == ipu::iss::ImmKind::ImmI) {  // a load: rd, offset(rs1)
    insn = fmt::format(".insn i 0x{:x}, {}, {}, {}", opcode, funct3, fields[0], fields[1]);
  } else if (s.imm == ipu::iss::ImmKind::ImmS) {  // a store: rs2, offset(rs1)
    insn = fmt::format(".insn s 0x{:x}, {}, {}, {}", opcode, funct3, fields[2], fields[1]);
  } else if (s.operands.find("fs3") != std::string_view::npos) {
    insn = fmt::format(".insn r4 0x{:x}, {}, {}, {}, {}, {}, {}", opcode, funct3,
                       (s.match >> 25) & 3, fields[0], fields[1], fields[2], fields[3]);
  } else {
    insn = fmt::format(".insn r 0x{:x}, {}, {}, {}, {}, {}", opcode, funct3, s.match >> 25,
                       fields[0], fields[1], fields[2]);
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i];
    return out;
  };

  std::ostringstream out;
  const std::string syntax =
      s.operands.empty() ? std::string(s.mnemonic) : fmt::format("{} {}", s.mnemonic, s.operands);
  out << fmt::format("/* {} ({} issue slot{}): {} */\n", syntax, s.issue_slots,
                     s.issue_slots == 1 ? "" : "s", s.summary);
  out << "static inline " << (noreturn ? "__attribute__((noreturn)) " : "") << ret << " "
      << s.c_name << "(" << (s.c_params.empty() ? "void" : std::string(s.c_params)) << ") {\n";
  out << body.str();
  out << fmt::format("  __asm__ volatile(\"{}\" : {} : {} : \"memory\");\n", insn, join(out_list),
                     join(in_list));
  out << epilogue;
  if (noreturn)
    out << "  __builtin_unreachable();\n";
  else if (!result.empty())
    out << "  return " << result << ";\n";
  out << "}\n\n";
  return out.str();
}

std::string header() {
  std::ostringstream out;
  out << "/* ipu_xipu.h: C intrinsics for the Xipu instructions. Generated by firmware/xipu_gen "
         "from\n"
         " * iss/xipu.def; do not edit. Include ipu.h, which defines the vector types. */\n"
         "#ifndef IPU_XIPU_H\n#define IPU_XIPU_H\n\n#include <stdint.h>\n\n";
  for (const InsnSpec& s : ipu::iss::instruction_table())
    if (s.isa == ipu::iss::Isa::kXipu) out << intrinsic(s);
  out << "#endif /* IPU_XIPU_H */\n";
  return out.str();
}

std::string docs() {
  std::ostringstream out;
  out << "# Xipu instruction reference\n\n"
         "Generated by `firmware/xipu_gen --docs` from `iss/xipu.def`, the table that the "
         "simulator's decoder, executor and disassembler also read; do not edit by hand. "
         "The machine model (contexts, issue slots, lanes, rounding, AMP) is in "
         "[tile.md](tile.md) and [xipu-model.md](xipu-model.md).\n\n"
         "| instruction | operands | encoding (match / mask) | issue slots | C intrinsic | what it "
         "does |\n"
         "|---|---|---|---|---|---|\n";
  for (const InsnSpec& s : ipu::iss::instruction_table()) {
    if (s.isa != ipu::iss::Isa::kXipu) continue;
    out << fmt::format("| `{}` | `{}` | `{:08x}` / `{:08x}` | {} | `{} {}({})` | {} |\n",
                       s.mnemonic, s.operands.empty() ? "-" : s.operands, s.match, s.mask,
                       s.issue_slots, s.c_return, s.c_name,
                       s.c_params.empty() ? "void" : s.c_params, s.summary);
  }
  out << "\nOperand tokens: `rdp` an even integer register pair, `fdp`/`fs1p`/`fs2p`/`fs3p` even "
         "FP "
         "register pairs (64-bit operands), `fdq` four FP registers from a multiple of 4, `fda` an "
         "FP "
         "register read as an accumulator and written. An odd pair register is an illegal "
         "instruction.\n\n"
         "## Xipu CSRs\n\n| CSR | number | meaning |\n|---|---|---|\n";
  for (const ipu::iss::CsrInfo& c : ipu::iss::kCsrTable)
    if (c.name.rfind("ipu_", 0) == 0)
      out << fmt::format("| `{}` | `0x{:03x}` | {} |\n", c.name, c.number, c.meaning);
  return out.str();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 ||
      (std::string_view(argv[1]) != "--header" && std::string_view(argv[1]) != "--docs")) {
    fmt::print(stderr, "usage: xipu_gen --header FILE | --docs FILE\n");
    return 2;
  }
  const std::string text = std::string_view(argv[1]) == "--header" ? header() : docs();
  std::ofstream out(argv[2], std::ios::binary);
  out << text;
  if (!out) {
    fmt::print(stderr, "xipu_gen: cannot write {}\n", argv[2]);
    return 1;
  }
  return 0;
}

#include "sdk/compiler/stack_usage.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <stdexcept>
#include <string_view>

#include "iss/isa.h"

namespace ipu::sdk {
namespace {

constexpr unsigned kRa = 1, kSp = 2, kT0 = 5;

// GCC's -msave-restore prologues (picolibc is built with them): `jal t0, __riscv_save_N` stores
// ra and s0..s(N-1) below sp and leaves sp lower by 4 (N + 1) bytes rounded up to 16, for the
// caller's frame. Returns false for any other name.
bool save_millicode_frame(const std::string& name, uint32_t& bytes) {
  constexpr std::string_view kPrefix = "__riscv_save_";
  if (name.rfind(kPrefix, 0) != 0 || name.size() == kPrefix.size() ||
      name.size() > kPrefix.size() + 2 ||
      name.find_first_not_of("0123456789", kPrefix.size()) != std::string::npos)
    return false;
  const unsigned saved = static_cast<unsigned>(std::stoul(name.substr(kPrefix.size())));
  if (saved > 12) return false;
  bytes = (4 * (saved + 1) + 15) / 16 * 16;
  return true;
}

// The image's loaded bytes by address, to read instruction and data words from.
class Memory {
 public:
  explicit Memory(const ElfImage& image) {
    for (const ElfSegment& s : image.segments) segments_.push_back(&s);
  }
  // The word at `address`, false when no segment's file data holds all four bytes.
  bool word(uint32_t address, uint32_t& out) const {
    for (const ElfSegment* s : segments_)
      if (address >= s->vaddr && uint64_t{address} + 4 <= uint64_t{s->vaddr} + s->data.size()) {
        std::memcpy(&out, s->data.data() + (address - s->vaddr), 4);
        return true;
      }
    return false;
  }
  const std::vector<const ElfSegment*>& segments() const { return segments_; }

 private:
  std::vector<const ElfSegment*> segments_;
};

}  // namespace

std::string stacks_summary(const FirmwareStacks& stacks) {
  const auto chain = [](const std::vector<std::string>& c) {
    return c.empty() ? std::string() : fmt::format(" ({})", fmt::join(c, " > "));
  };
  std::string line = fmt::format("stacks: supervisor {} bytes{}, {} workers {} bytes each{}",
                                 stacks.supervisor_bytes, chain(stacks.supervisor_chain),
                                 kWorkerContexts, stacks.worker_bytes, chain(stacks.worker_chain));
  if (!stacks.why.empty()) line += "; the linker script's size kept for the " + stacks.why;
  return line;
}

StackUsage::StackUsage(const ElfImage& image) {
  const Memory memory(image);
  for (const auto& [name, size] : image.function_sizes) {
    const auto at = image.symbols.find(name);
    if (at == image.symbols.end() || functions_.count(at->second) != 0) continue;  // an alias
    Function f;
    f.name = name;
    f.start = at->second;
    f.end = at->second + size;
    functions_.emplace(f.start, std::move(f));
  }
  // The entry point (crt0's _start) is hand-written and has no size: it runs up to the next
  // function, or the end of its segment.
  if (functions_.count(image.entry) == 0)
    for (const ElfSegment& segment : image.segments)
      if (segment.executable && image.entry >= segment.vaddr &&
          image.entry < segment.vaddr + segment.data.size()) {
        Function f;
        const auto start = image.symbols.find("_start");
        f.name = start != image.symbols.end() && start->second == image.entry ? "_start"
                                                                              : "the entry point";
        f.start = image.entry;
        const auto next = functions_.upper_bound(image.entry);
        f.end = next != functions_.end()
                    ? next->first
                    : segment.vaddr + static_cast<uint32_t>(segment.data.size());
        functions_.emplace(f.start, std::move(f));
        break;
      }
  std::set<uint32_t> taken;
  for (auto& [start, f] : functions_) {
    // Registers whose value the code so far has set to a constant (lui, addi on one), as a
    // frame over 2 KiB is taken: lui t0, hi; addi t0, t0, lo; add sp, sp, t0. Straight-line
    // reasoning is enough for prologues; a register written any other way is forgotten.
    uint32_t value[32] = {};
    bool constant[32] = {true};  // x0
    // The previous instruction, when it set a register's upper bits (lui, auipc): an addi or a
    // jalr on the same register completes an address, not a frame or a call through a pointer.
    iss::Decoded upper;
    uint32_t upper_value = 0;
    bool have_upper = false;
    for (uint32_t pc = f.start; pc < f.end; pc += 4) {
      uint32_t word = 0;
      if (!memory.word(pc, word) || (word & 3u) != 3u) {
        f.defect =
            fmt::format("{} holds a word at {:#x} that is not a 32-bit instruction", f.name, pc);
        break;
      }
      const iss::Decoded d = iss::decode(word);
      const bool completes = have_upper && d.rs1 == upper.rd;
      const uint32_t formed = upper_value + static_cast<uint32_t>(d.imm);
      const iss::InsnSpec* spec = iss::spec_of(d.op);
      if (d.op == iss::Op::kIllegal) {
        f.defect = fmt::format("{} holds an illegal instruction at {:#x}", f.name, pc);
        break;
      } else if (d.op == iss::Op::lui || d.op == iss::Op::auipc) {
        if (d.rd == kSp) f.sets_own_stack = true;
      } else if (d.op == iss::Op::addi) {
        if (completes && functions_.count(formed) != 0) taken.insert(formed);
        if (d.rd == kSp && d.rs1 == kSp && !completes && d.imm < 0)
          f.frame += static_cast<uint32_t>(-d.imm);
        // addi sp, s0, imm restores sp from the frame pointer: an epilogue, no frame of its own.
      } else if ((d.op == iss::Op::add || d.op == iss::Op::sub) && d.rd == kSp &&
                 (d.rs1 == kSp || (d.op == iss::Op::add && d.rs2 == kSp))) {
        // sp moved by a register: a frame over 2 KiB when the register holds a constant.
        const unsigned by = d.rs1 == kSp ? d.rs2 : d.rs1;
        if (!constant[by]) {
          f.defect = fmt::format(
              "{} moves sp by a register at {:#x} (alloca or a "
              "variable-length array): its frame is not static",
              f.name, pc);
          break;
        }
        const auto delta = static_cast<int32_t>(d.op == iss::Op::add ? value[by] : 0u - value[by]);
        if (delta < 0) f.frame += static_cast<uint32_t>(-static_cast<int64_t>(delta));
      } else if (d.op == iss::Op::jal) {
        const uint32_t target = pc + static_cast<uint32_t>(d.imm);
        if (d.rd == kT0) {  // a save-restore prologue: its stores are the caller's frame
          const auto callee = functions_.find(target);
          uint32_t bytes = 0;
          if (callee == functions_.end() || !save_millicode_frame(callee->second.name, bytes)) {
            f.defect = fmt::format(
                "{} calls {:#x} with link register t0 at {:#x}, which is not "
                "a save-restore prologue",
                f.name, target, pc);
            break;
          }
          f.frame += bytes;
        } else if (d.rd != 0 || target < f.start || target >= f.end) {
          f.callees.push_back(target);
        }
      } else if (d.op == iss::Op::jalr) {
        if (d.rd == 0 && d.rs1 == kRa && d.imm == 0) {
          // a return
        } else if (completes) {
          f.callees.push_back(formed);  // auipc + jalr: a call beyond jal's reach
        } else if (d.rs1 == 0) {
          // A call of an absolute address: a weak function left undefined (at 0) is called
          // only behind a test of its address; any other must be a function.
          if (functions_.count(static_cast<uint32_t>(d.imm)) != 0)
            f.callees.push_back(static_cast<uint32_t>(d.imm));
        } else {
          f.calls_through_pointer = true;  // or a switch's jump table: counted alike
        }
      } else if (d.rd == kSp && spec != nullptr && spec->writes_xrd) {
        if (d.op == iss::Op::lw)
          f.sets_own_stack = true;  // the worker entry loads its context's stack top
        else
          f.defect =
              fmt::format("{} sets sp at {:#x} in a way whose frame is not static", f.name, pc);
      }
      if (spec != nullptr && spec->writes_xrd && d.rd != 0) {
        if (d.op == iss::Op::lui) {
          constant[d.rd] = true;
          value[d.rd] = static_cast<uint32_t>(d.imm);
        } else if (d.op == iss::Op::addi && constant[d.rs1]) {
          constant[d.rd] = true;
          value[d.rd] = value[d.rs1] + static_cast<uint32_t>(d.imm);
        } else {
          constant[d.rd] = false;
        }
      }
      have_upper = d.op == iss::Op::lui || d.op == iss::Op::auipc;
      if (have_upper) {
        upper = d;
        upper_value = (d.op == iss::Op::auipc ? pc : 0) + static_cast<uint32_t>(d.imm);
      }
    }
  }
  // A function whose address the image holds as a word (a function pointer in data, a table)
  // may be called through a pointer.
  for (const ElfSegment* s : memory.segments())
    for (uint32_t offset = (4 - s->vaddr % 4) % 4; offset + 4 <= s->data.size(); offset += 4) {
      uint32_t word = 0;
      std::memcpy(&word, s->data.data() + offset, 4);
      if (functions_.count(word) != 0) taken.insert(word);
    }
  uint32_t ignored = 0;
  for (uint32_t start : taken)
    if (!functions_.at(start).sets_own_stack &&
        !save_millicode_frame(functions_.at(start).name, ignored))
      address_taken_.push_back(start);
}

const StackDepth& StackUsage::depth_of(uint32_t start) const {
  Result& r = results_[start];
  if (r.done) return r.depth;
  const Function& f = functions_.at(start);
  if (r.in_progress) {
    r.depth = StackDepth{};
    r.depth.unknown_why = fmt::format("{} calls itself through a chain of calls", f.name);
    return r.depth;
  }
  r.in_progress = true;
  StackDepth d;
  d.chain = {f.name};
  if (!f.defect.empty()) {
    d.unknown_why = f.defect;
  } else {
    d.known = true;
    uint32_t deepest = 0;
    std::vector<std::string> deepest_chain;
    std::vector<uint32_t> callees = f.callees;
    if (f.calls_through_pointer)
      callees.insert(callees.end(), address_taken_.begin(), address_taken_.end());
    for (uint32_t callee : callees) {
      if (functions_.count(callee) == 0) {
        d = StackDepth{};
        d.unknown_why = fmt::format("{} calls {:#x}, where no function starts", f.name, callee);
        break;
      }
      // A function that sets its own stack (the worker entry) does not run on this one.
      if (functions_.at(callee).sets_own_stack) continue;
      const StackDepth& c = depth_of(callee);
      if (!c.known) {
        d = c;
        break;
      }
      if (c.bytes > deepest || deepest_chain.empty()) {
        deepest = c.bytes;
        deepest_chain = c.chain;
      }
    }
    if (d.known) {
      d.bytes = f.frame + deepest;
      d.chain.insert(d.chain.end(), deepest_chain.begin(), deepest_chain.end());
    }
  }
  // Recursion found below leaves this entry marked; a later query must find it again.
  Result& done = results_[start];
  done.in_progress = false;
  done.done = true;
  done.depth = std::move(d);
  return done.depth;
}

StackDepth StackUsage::deepest(const std::vector<std::string>& entries) const {
  StackDepth best;
  best.known = true;
  for (const std::string& name : entries) {
    const auto f = std::find_if(functions_.begin(), functions_.end(),
                                [&](const auto& e) { return e.second.name == name; });
    if (f == functions_.end()) {
      StackDepth none;
      none.unknown_why = fmt::format("no function is named {}", name);
      return none;
    }
    const StackDepth& d = depth_of(f->first);
    if (!d.known) return d;
    if (best.chain.empty() || d.bytes > best.bytes) best = d;
  }
  return best;
}

}  // namespace ipu::sdk

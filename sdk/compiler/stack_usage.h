// The stack a linked firmware's functions need, found from their code as Poplar sizes a tile's
// stacks from its vertices' call graphs (poplar/StackSizeDefs.hpp): a function's frame is what
// its prologue takes from sp, and its depth that frame plus its deepest callee's. The compiler
// gives the supervisor and each worker exactly what their entries need, where the linker
// script's defaults (16 KiB and 6 x 8 KiB) took 64 KiB of every tile; crt0 reads the sizes
// from the control program's header.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sdk/image/elf_reader.h"

namespace ipu::sdk {

struct StackDepth {
  bool known = false;
  uint32_t bytes = 0;              // the deepest chain's frames, when known
  std::vector<std::string> chain;  // that chain, the entry first
  std::string unknown_why;         // when not known: the function and what defeats the analysis
};

// A tile's stacks as the compiler sizes them (ipu_tile_program's supervisor_stack_bytes and
// worker_stack_bytes; firmware/tile.ld's __supervisor_stack_size and __worker_stack_size are
// the defaults).
struct FirmwareStacks {
  // The linker script's defaults, kept where the analysis fails.
  uint32_t supervisor_bytes = 16 * 1024;  // with the workers' context table at its top
  uint32_t worker_bytes = 8 * 1024;       // each of the six workers'
  std::vector<std::string> supervisor_chain, worker_chain;  // the deepest chains found
  std::string why;                                          // why a default stayed, if one did
};
// One line: each stack's bytes and the chain that needs them, or why a default stayed.
std::string stacks_summary(const FirmwareStacks& stacks);

// crt0's table of the six workers' stack bounds and TLS blocks, 16 bytes each, at the top of
// the supervisor's stack region.
inline constexpr uint32_t kWorkerContexts = 6;  // tile.ld's __worker_contexts
inline constexpr uint32_t kWorkerContextTableBytes = 16 * kWorkerContexts;

class StackUsage {
 public:
  // Decodes every function symbol of the image's executable segments once.
  explicit StackUsage(const ElfImage& image);

  // The deepest of the entries' chains. Not known when a function on a chain adjusts sp by a
  // register (alloca, a variable-length array), recurses, holds a word the tile cannot decode,
  // or calls through a pointer into such a function; `entries` that name no function are
  // errors too.
  StackDepth deepest(const std::vector<std::string>& entries) const;

 private:
  struct Function {
    std::string name;
    uint32_t start = 0, end = 0;
    uint32_t frame = 0;             // bytes its prologues take from sp
    std::vector<uint32_t> callees;  // start addresses of direct calls and tail calls
    bool calls_through_pointer = false;
    bool sets_own_stack = false;  // loads sp absolutely (_start, the worker entry)
    std::string defect;           // why its frame is not static, if it is not
  };
  struct Result {
    bool done = false, in_progress = false;
    StackDepth depth;
  };
  const StackDepth& depth_of(uint32_t start) const;

  std::map<uint32_t, Function> functions_;  // by start address
  std::vector<uint32_t> address_taken_;     // functions whose address the image holds
  mutable std::map<uint32_t, Result> results_;
};

}  // namespace ipu::sdk

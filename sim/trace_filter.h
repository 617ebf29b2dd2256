// The filters of ipu-sim --trace-instructions, from the command line: --trace-tiles,
// --trace-contexts, --trace-cycles and --trace-pc (docs/debugging.md).
#pragma once

#include <string>

#include "hw/machine/platform.h"
#include "sdk/image/elf_reader.h"

namespace ipu::sim {

struct TraceFilterText {
  std::string tiles;     // "0,3-5": machine tile numbers
  std::string contexts;  // "0,2-4": 0 the supervisor, 1.. the workers
  std::string cycles;    // "FROM:TO", "FROM:" or ":TO": issue cycles, TO excluded
  std::string pc;        // "LOW:HIGH" (hex with 0x, HIGH excluded) or a function's name
  std::string limit;     // the most lines printed ("": the default)
};

// Throws std::invalid_argument naming the option and what is wrong with its value: a tile the
// machine does not have (`tiles`), a context past the workers (`contexts`), an empty range, a
// function the image has no symbol and size for.
hw::TraceFilter parse_trace_filter(const TraceFilterText& text, const sdk::ElfImage& image,
                                   unsigned tiles, unsigned contexts);

}  // namespace ipu::sim

#include "single_tile.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <chrono>
#include <ostream>
#include <vector>

namespace ipu::sim {

SingleTilePlatform::SingleTilePlatform(const sc_core::sc_module_name& name,
                                       const RunOptions& options, std::ostream& console,
                                       std::ostream& trace)
    : sc_module(name), host("host"), options_(options), tile_("tile0", options.tile, 0) {
  host.bind(tile_.memory);
  tile_.core().set_console([&console](unsigned context, std::string_view line) {
    fmt::print(console, "[t0:c{}] {}\n", context, line);
    console.flush();
  });
  tile_.core().set_fast_path(options.fast_interpreter);
  tile_.core().set_locator(options.locate_pc);
  tile_.core().set_debug(options.debugger);
  if (options.trace_instructions) {
    tile_.core().set_trace([&trace](const hw::Context& c, uint32_t pc, uint32_t word) {
      fmt::print(trace, "[t0:c{}] cycle {:>10} pc 0x{:08x}: {:08x}  {}\n", c.id, c.issue_cycle, pc,
                 word, hw::disassemble(word, pc));
    });
  }
}

void SingleTilePlatform::write(uint32_t address, const uint8_t* data, size_t size) {
  // Before elaboration ends the tile's multi-initiator socket is not connected yet, so the
  // loader writes SRAM directly (zero time, as a debug transport would).
  tile_.load(address, data, size);
}

void SingleTilePlatform::load(const sdk::ElfImage& image) {
  sdk::check_within_window(image, options_.tile.sram_base, options_.tile.sram_bytes);
  for (const sdk::ElfSegment& s : image.segments) {
    const std::vector<uint8_t> bytes = s.memory_image();
    if (!bytes.empty()) write(s.paddr, bytes.data(), bytes.size());
  }
  const auto tohost = image.symbols.find("tohost");
  tile_.core().set_tohost(tohost != image.symbols.end() ? tohost->second : 0);
  entry_ = image.entry;
}

RunReport SingleTilePlatform::run() {
  const uint64_t limit = options_.max_cycles == 0 ? ~uint64_t{0} : options_.max_cycles;
  tile_.start(entry_, limit);
  const auto t0 = std::chrono::steady_clock::now();
  sc_core::sc_start();
  const auto t1 = std::chrono::steady_clock::now();

  const hw::Core& core = tile_.core();
  RunReport r;
  r.outcome = tile_.outcome();
  r.cycles = core.cycles();
  r.instructions = core.instructions_retired();
  r.clock_hz = options_.tile.clock_hz;
  r.simulated_seconds = static_cast<double>(r.cycles) / r.clock_hz;
  r.host_seconds = std::chrono::duration<double>(t1 - t0).count();
  for (unsigned i = 0; i <= core.worker_contexts(); ++i) {
    const hw::Context& c = core.context(i);
    r.contexts.push_back({i, c.instret, c.issues, c.runs, i == 0 ? r.cycles : c.active_cycles});
  }
  return r;
}

void print_report(std::ostream& out, const RunReport& r) {
  const double mips =
      r.host_seconds > 0 ? static_cast<double>(r.instructions) / r.host_seconds / 1e6 : 0;
  fmt::print(out, "\n== ipu-sim run summary ==\n");
  switch (r.outcome.reason) {
    case hw::StopReason::kExited:
      fmt::print(out, "result               exited with status {}\n", r.outcome.exit_status);
      break;
    case hw::StopReason::kFault:
      fmt::print(out, "result               stopped by a fault\n");
      break;
    default: fmt::print(out, "result               stopped at the cycle limit\n"); break;
  }
  fmt::print(out, "instructions retired {}\n", r.instructions);
  fmt::print(out, "tile cycles          {}\n", r.cycles);
  fmt::print(out, "simulated time       {:.3f} us at {:.3f} GHz\n", r.simulated_seconds * 1e6,
             r.clock_hz / 1e9);
  fmt::print(out, "host time            {:.3f} s\n", r.host_seconds);
  fmt::print(out, "simulator speed      {:.1f} MIPS\n", mips);
  fmt::print(out, "context  instructions  issue slots  runs  active cycles\n");
  for (const ContextSummary& c : r.contexts) {
    if (c.runs == 0) continue;
    fmt::print(out, "{:>7}  {:>12}  {:>11}  {:>4}  {:>13}\n",
               c.id == 0 ? std::string("sup") : fmt::format("w{}", c.id), c.instructions,
               c.issue_slots, c.runs, c.active_cycles);
  }
}

}  // namespace ipu::sim

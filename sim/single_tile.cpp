#include "single_tile.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <ostream>
#include <vector>

#include "hw/machine/platform.h"

namespace ipu::sim {

SingleTilePlatform::SingleTilePlatform(const sc_core::sc_module_name& name,
                                       const SingleTileOptions& options, std::ostream& console,
                                       std::ostream& trace)
    : sc_module(name), host("host"), options_(options), tile_("tile0", options.tile, 0) {
  host.bind(tile_.memory);
  tile_.core().set_console([&console](unsigned context, std::string_view line) {
    fmt::print(console, "[t0:c{}] {}\n", context, line);
    console.flush();
  });
  tile_.core().set_fast_path(options.fast_interpreter());
  tile_.core().set_locator(options.locate_pc);
  tile_.core().set_debug(options.debugger);
  if (options.trace_instructions) {
    tile_.core().set_trace([&trace, filter = &options_.trace_filter](const hw::Context& c,
                                                                     uint32_t pc, uint32_t word) {
      if (!filter->accepts(c, pc)) return;
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
  r.counts.exited = r.outcome.reason == hw::StopReason::kExited;
  r.counts.exit_status = r.outcome.exit_status;
  for (unsigned i = 0; i <= core.worker_contexts(); ++i)
    r.counts.contexts.push_back(hw::context_counts(core, i));
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
  hw::print_context_table(out, {r.counts}, 1, 1);
}

void write_stats_json(std::ostream& out, const RunReport& r, const hw::MachineConfig& config,
                      const hw::StatsSource& source) {
  nlohmann::ordered_json image, summary;
  image["file"] = source.image;
  image["checksum"] =
      source.image_checksum ? fmt::format("0x{:08x}", *source.image_checksum) : std::string();
  summary["result"] = r.outcome.reason == hw::StopReason::kExited  ? "exited"
                      : r.outcome.reason == hw::StopReason::kFault ? "fault"
                                                                   : "cycle limit";
  summary["exit_status"] = r.outcome.exit_status;
  summary["cycles"] = r.cycles;
  summary["seconds"] = r.simulated_seconds;
  summary["instructions"] = r.instructions;
  fmt::print(
      out, "{{\n  \"config\": {},\n  \"image\": {},\n  \"summary\": {},\n  \"contexts\": {}\n}}\n",
      hw::config_json(config), image.dump(), summary.dump(), hw::contexts_json({r.counts}));
}

}  // namespace ipu::sim

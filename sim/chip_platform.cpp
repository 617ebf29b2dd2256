#include "chip_platform.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <charconv>
#include <chrono>
#include <ostream>
#include <regex>

#include "sdk/image/elf_writer.h"

namespace ipu::sim {

ChipPlatform::ChipPlatform(const ChipRunOptions& options, const sdk::ElfImage& image,
                           std::ostream& console, std::ostream& trace)
    : options_(options) {
  hw::validate(options_.chip);
  // An SDK image records the chip it was built for: refuse it on another configuration.
  const auto manifest = image.sections.find(".ipu.manifest");
  if (manifest != image.sections.end()) {
    const std::string text(manifest->second.begin(), manifest->second.end());
    std::smatch tiles, clock;
    if (!std::regex_search(text, tiles, std::regex(R"("tiles": (\d+))")) ||
        !std::regex_search(text, clock, std::regex(R"("clock_hz": ([0-9.e+]+))")))
      throw sdk::ImageError(fmt::format(
          "{}: the .ipu.manifest section is corrupt (no target tiles and clock)", image.path));
    unsigned built_tiles = 0;
    double built_clock = 0;
    const std::string tiles_text = tiles[1], clock_text = clock[1];
    auto parses = [](const std::string& number, auto& value) {
      const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
      return ec == std::errc() && end == number.data() + number.size();
    };
    if (!parses(tiles_text, built_tiles) || !parses(clock_text, built_clock))
      throw sdk::ImageError(fmt::format(
          "{}: the .ipu.manifest section is corrupt: target tiles '{}' and clock '{}' are not a "
          "tile count and a frequency",
          image.path, tiles_text, clock_text));
    if (built_tiles != options_.chip.tiles || built_clock != options_.chip.tile.clock_hz)
      throw sdk::ImageError(fmt::format(
          "{}: built for a {}-tile chip at {} Hz, but the configuration is {} tiles at {} Hz",
          image.path, built_tiles, built_clock, options_.chip.tiles, options_.chip.tile.clock_hz));
  }
  const hw::TileConfig& t = options_.chip.tile;
  const auto per_tile = sdk::split_by_tile(image, t.sram_base, t.sram_bytes, options_.chip.tiles);
  std::vector<unsigned> active;
  active.reserve(per_tile.size());
  for (const auto& [tile, segments] : per_tile) active.push_back(tile);
  chip_ = std::make_unique<hw::Ipu>("ipu", options_.chip, active);
  const auto tohost = image.symbols.find("tohost");
  for (const auto& entry : per_tile) {
    const unsigned tile = entry.first;  // named: the lambdas below capture it
    const auto& segments = entry.second;
    hw::Tile& target = chip_->tile(tile);
    for (const sdk::TileSegment& s : segments)
      target.load(s.address, s.bytes.data(), s.bytes.size());
    target.core().set_tohost(tohost != image.symbols.end() ? tohost->second : 0);
    target.core().set_console([&console, tile](unsigned context, std::string_view line) {
      fmt::print(console, "[t{}:c{}] {}\n", tile, context, line);
    });
    if (options_.trace_instructions) {
      target.core().set_trace([&trace, tile](const hw::Context& c, uint32_t pc, uint32_t word) {
        fmt::print(trace, "[t{}:c{}] cycle {:>10} pc 0x{:08x}: {:08x}  {}\n", tile, c.id,
                   c.issue_cycle, pc, word, hw::disassemble(word, pc));
      });
    }
  }
  if (options_.rtl.any()) {
    rtl_ = std::make_unique<tlm_rtl::RtlPlatform>("rtl", options_.chip, options_.rtl,
                                                  options_.rtl_trace);
    rtl_->install(*chip_);
  }
  entry_ = image.entry;
  segments_ = per_tile;
}

ChipRunReport ChipPlatform::run() {
  if (options_.load_and_start) chip_->start(entry_, max_cycles());
  const auto t0 = std::chrono::steady_clock::now();
  try {
    sc_core::sc_start();
  } catch (...) {  // an RTL block that departed from its model: say so, by name
    if (rtl_ && !rtl_->mismatch().empty()) throw tlm_rtl::RtlMismatch(rtl_->mismatch());
    throw;
  }
  const auto t1 = std::chrono::steady_clock::now();
  ChipRunReport r;
  r.outcome = chip_->outcome();
  r.tiles = static_cast<unsigned>(chip_->active_tiles().size());
  r.cycles = chip_->cycles();
  r.instructions = chip_->instructions_retired();
  r.supersteps = chip_->sync_network().barriers().size();
  for (const hw::ExchangeRecord& e : chip_->exchange().records()) r.exchange_words += e.words;
  r.clock_hz = options_.chip.tile.clock_hz;
  r.host_seconds = std::chrono::duration<double>(t1 - t0).count();
  if (rtl_) {
    r.rtl = rtl_->stats();
    r.rtl_trace_files = rtl_->trace_files();
    r.rtl_mismatch = rtl_->mismatch();
  }
  if (options_.memory_hash) {
    uint64_t h = 0xcbf29ce484222325u;  // FNV-1a, 64-bit
    const hw::TileConfig& t = options_.chip.tile;
    for (unsigned id : chip_->active_tiles()) {
      const hw::Core& core = chip_->tile(id).core();
      for (uint32_t a = t.sram_base; a < t.sram_base + t.sram_bytes; a += 4) {
        const uint32_t w = core.read_word(a);
        for (int b = 0; b < 4; ++b) h = (h ^ ((w >> (8 * b)) & 0xff)) * 0x100000001b3u;
      }
    }
    r.memory_hash = h;
  }
  return r;
}

void print_report(std::ostream& out, const ChipRunReport& r) {
  const double seconds = static_cast<double>(r.cycles) / r.clock_hz;
  const double mips =
      r.host_seconds > 0 ? static_cast<double>(r.instructions) / r.host_seconds / 1e6 : 0;
  fmt::print(out, "\n== ipu-sim run summary ==\n");
  switch (r.outcome.result) {
    case hw::ChipOutcome::Result::kExited:
      fmt::print(out, "result               exited with status {}\n", r.outcome.exit_status);
      break;
    case hw::ChipOutcome::Result::kFault:
      fmt::print(out, "result               stopped by a fault\n");
      break;
    case hw::ChipOutcome::Result::kCycleLimit:
      fmt::print(out, "result               stopped at the cycle limit\n");
      break;
    case hw::ChipOutcome::Result::kDeadlock:
      fmt::print(out, "result               deadlock\n");
      break;
  }
  fmt::print(out, "tiles                {}\n", r.tiles);
  fmt::print(out, "supersteps           {}\n", r.supersteps);
  fmt::print(out, "tile cycles          {}\n", r.cycles);
  fmt::print(out, "simulated time       {:.3f} us at {:.3f} GHz\n", seconds * 1e6,
             r.clock_hz / 1e9);
  fmt::print(out, "exchange             {} words ({} bytes)\n", r.exchange_words,
             4 * r.exchange_words);
  fmt::print(out, "instructions retired {}\n", r.instructions);
  fmt::print(out, "host time            {:.3f} s\n", r.host_seconds);
  fmt::print(out, "simulator speed      {:.1f} MIPS\n", mips);
  tlm_rtl::print_rtl_stats(out, r.rtl, r.rtl_trace_files);
  if (r.memory_hash) fmt::print(out, "memory hash          {:016x}\n", *r.memory_hash);
}

}  // namespace ipu::sim

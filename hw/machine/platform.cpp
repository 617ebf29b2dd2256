#include "platform.h"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <ostream>

#include "base/byte_stream.h"
#include "base/fnv1a.h"

namespace ipu::hw {

unsigned RunOptions::host_threads() const { return threads != 0 ? threads : host_cores(); }

Platform::Platform(const PlatformOptions& options, LoadedProgram program, std::ostream& console,
                   std::ostream& trace)
    : options_(options), program_(std::move(program)) {
  std::vector<unsigned> active;
  active.reserve(program_.tiles.size());
  for (const auto& [tile, segments] : program_.tiles) active.push_back(tile);
  machine_ = std::make_unique<Machine>("machine", options_.machine, active);
  machine_->set_host_threads(options_.host_threads());
  machine_->compute_pool().set_serial(options_.trace_instructions || options_.debugger != nullptr);
  machine_->exchange().record_flows(options_.trace_flows);
  machine_->exchange().set_locators(options_.locate_pc, options_.locate_data);
  machine_->keep_records(options_.keep_records);
  MpiJob* const ranks =
      options_.ranks != nullptr && options_.ranks->spread() ? options_.ranks : nullptr;
  if (ranks != nullptr) {
    // What needs a tile's registers or memory, or every instruction, in one process.
    const char* alone = options_.trace_instructions    ? "--trace-instructions"
                        : options_.debugger != nullptr ? "a debugger (--gdb)"
                        : !options_.load_and_start     ? "a host program (the SDK runtime)"
                                                       : nullptr;
    if (alone != nullptr)
      throw std::invalid_argument(fmt::format(
          "{} needs the whole machine in one process; it cannot run over {} MPI ranks yet", alone,
          ranks->size()));
    ranks->assign(options_.machine.chips, options_.machine.chip.tiles);
    machine_->compute_pool().set_share(ranks);
  }
  const iss::TileConfig& t = options_.machine.chip.tile;
  for (const auto& entry : program_.tiles) {
    Tile& target = machine_->tile(entry.first);
    target.set_replica(ranks != nullptr && !ranks->runs_here(entry.first));
    const std::string label = target.core().tile_label();
    const std::string prefix =  // "[t5:c1]" on one chip, "[c2:t5:c1]" on a machine
        machine_->chips() > 1 ? fmt::format("c{}:t{}", target.chip(), target.id())
                              : fmt::format("t{}", target.id());
    for (const LoadedProgram::Segment& s : entry.second) {
      if (s.bytes.size() > s.size)
        throw std::invalid_argument(
            fmt::format("{}: a segment at 0x{:08x} holds {} bytes, more than its size of {} bytes",
                        label, s.address, s.bytes.size(), s.size));
      if (s.address < t.sram_base ||
          s.address + uint64_t{s.size} > uint64_t{t.sram_base} + t.sram_bytes)
        throw std::invalid_argument(
            fmt::format("{}: a segment at 0x{:08x} of {} bytes lies outside the tile's SRAM", label,
                        s.address, s.size));
      if (options_.load_and_start) target.load(s.address, s.bytes.data(), s.bytes.size());
    }
    target.core().set_tohost(program_.tohost);
    target.core().set_fast_path(options_.fast_interpreter());
    target.core().set_locator(options_.locate_pc);
    target.core().set_debug(options_.debugger);
    if (options_.profile_workers)
      target.core().profile().enable(
          options_.worker_run_log == 0
              ? 0
              : std::max(kLeastWorkerRuns, options_.worker_run_log / program_.tiles.size()));
    target.set_console([&console, prefix](unsigned context, std::string_view line) {
      fmt::print(console, "[{}:c{}] {}\n", prefix, context, line);
    });
    if (options_.trace_instructions && options_.trace_filter.traces_tile(entry.first)) {
      // Traced bursts run on the simulation thread: one count for every tile, no lock.
      target.core().set_trace([&trace, prefix, filter = &options_.trace_filter,
                               printed = &traced_lines_](const iss::Context& c, uint32_t pc,
                                                         uint32_t word) {
        if (!filter->accepts(c, pc)) return;
        if (filter->limit != 0 && *printed >= filter->limit) {
          if (*printed == filter->limit)
            fmt::print(trace,
                       "ipu-sim: --trace-instructions-limit {} reached: the rest of the trace is "
                       "left out\n",
                       filter->limit);
          *printed = filter->limit + 1;
          return;
        }
        ++*printed;
        fmt::print(trace, "[{}:c{}] cycle {:>10} pc 0x{:08x}: {:08x}  {}\n", prefix, c.id,
                   c.issue_cycle, pc, word, iss::disassemble(word, pc));
      });
    }
  }
}

RunReport Platform::run() {
  if (options_.load_and_start && !started_) machine_->start(program_.entry, max_cycles());
  started_ = true;
  const auto t0 = std::chrono::steady_clock::now();
  sc_core::sc_start();
  const auto t1 = std::chrono::steady_clock::now();
  RunReport r = count_run(*machine_);
  r.outcome = machine_->outcome();
  r.host_seconds = std::chrono::duration<double>(t1 - t0).count();
  if (options_.ranks != nullptr) r.ranks = options_.ranks->size();
  r.shares = machine_->compute_pool().batches();
  r.burst_seconds = machine_->compute_pool().burst_seconds();
  r.share_seconds = machine_->compute_pool().share_seconds();
  if (options_.ranks != nullptr && options_.ranks->spread()) {
    std::vector<uint8_t> mine;
    base::ByteWriter(mine).put(r.burst_seconds);
    const std::vector<uint8_t> all = options_.ranks->all_gather(mine);
    base::ByteReader in(all.data(), all.size());
    for (unsigned rank = 0; !in.done(); ++rank) {
      const auto seconds = in.get<double>();
      if (seconds > r.slowest_burst_seconds)
        r.slowest_burst_seconds = seconds, r.slowest_rank = rank;
    }
  }
  if (options_.memory_hash) r.memory_hash = memory_hash();
  return r;
}

uint64_t Platform::memory_hash() {
  // FNV-1a, 64-bit: of each tile's SRAM, then of the tiles' hashes in machine-tile order, so
  // that ranks hash their own tiles and the result does not depend on how tiles are shared.
  const iss::TileConfig& t = options_.machine.chip.tile;
  const std::vector<unsigned>& active = machine_->active_tiles();
  std::vector<uint64_t> hashes(active.size());
  machine_->compute_pool().for_each(active.size(), [&](size_t i) {
    const Tile& tile = machine_->tile(active[i]);
    if (tile.replica()) return;
    base::Fnv1a h;
    for (uint32_t a = t.sram_base; a < t.sram_base + t.sram_bytes; a += 4)
      h.add(tile.core().read_word(a));
    hashes[i] = h.value;
  });
  if (options_.ranks != nullptr && options_.ranks->spread()) {
    std::vector<uint8_t> mine;
    base::ByteWriter out(mine);
    for (size_t i = 0; i < active.size(); ++i)
      if (!machine_->tile(active[i]).replica()) out.put(i), out.put(hashes[i]);
    const std::vector<uint8_t> all = options_.ranks->all_gather(mine);
    base::ByteReader in(all.data(), all.size());
    while (!in.done()) {
      const auto i = in.get<size_t>();
      in.get(hashes.at(i));
    }
  }
  base::Fnv1a h;
  for (uint64_t tile_hash : hashes) h.add(tile_hash);
  return h.value;
}

}  // namespace ipu::hw

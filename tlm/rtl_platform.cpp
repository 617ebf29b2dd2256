#include "tlm/rtl_platform.h"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <stdexcept>

#include "hw/ipu/ipu.h"
#include "hw/machine/platform.h"

namespace ipu::tlm_rtl {

RtlSelection RtlSelection::parse(const std::string& list) {
  RtlSelection s;
  std::istringstream in(list);
  std::string name;
  while (std::getline(in, name, ',')) {
    if (name == "all")
      s = {true, true, true, true, true};
    else if (name == "none")
      continue;
    else if (name == "prng")
      s.prng = true;
    else if (name == "sr")
      s.sr = true;
    else if (name == "amp")
      s.amp = true;
    else if (name == "sync")
      s.sync = true;
    else if (name == "xmux")
      s.xmux = true;
    else
      throw std::invalid_argument(fmt::format(
          "unknown block '{}' in '{}'; the blocks are prng, sr, amp, sync and xmux (or all, "
          "or none)",
          name, list));
  }
  return s;
}

std::string RtlSelection::text() const {
  std::string out;
  for (auto [on, name] : {std::pair{prng, "prng"}, std::pair{sr, "sr"}, std::pair{amp, "amp"},
                          std::pair{sync, "sync"}, std::pair{xmux, "xmux"}})
    if (on) out += (out.empty() ? "" : ",") + std::string(name);
  return out.empty() ? "none" : out;
}

RtlPlatform::RtlPlatform(const sc_core::sc_module_name& name, const hw::ChipConfig& chip,
                         const RtlSelection& blocks, const std::string& trace)
    : sc_module(name), blocks_(blocks), clock_hz_(chip.tile.clock_hz), trace_(trace) {
  if (!trace_.empty() && (trace_.size() < 5 || trace_.substr(trace_.size() - 4) != ".fst"))
    throw std::invalid_argument(fmt::format(
        "--rtl-trace {}: the waveforms are FST; give a file name ending in .fst", trace_));
  if ((blocks.sync || blocks.xmux) && chip.tiles > kRtlMaxTiles)
    throw std::invalid_argument(
        fmt::format("--rtl sync/xmux: the RTL is built for up to {} tiles, the chip has {}",
                    kRtlMaxTiles, chip.tiles));
  if (blocks.xmux && chip.exchange.words_per_cycle != 1)
    throw std::invalid_argument(
        fmt::format("--rtl xmux: the receive mux RTL takes one word per sender per cycle, but "
                    "exchange.words-per-cycle is {}",
                    chip.exchange.words_per_cycle));
  if (blocks.prng) add(prng_, to_prng_, "prng");
  if (blocks.sr) add(sr_, to_sr_, "sr");
  if (blocks.amp) add(amp_, to_amp_, "amp");
  if (blocks.sync) add(sync_, to_sync_, "sync");
  if (blocks.xmux) add(xmux_, to_xmux_, "xmux");
}

template <class Block>
void RtlPlatform::add(std::unique_ptr<Block>& block, std::unique_ptr<Socket>& socket,
                      const char* name) {
  block = std::make_unique<Block>(name, clock_hz_);
  socket = std::make_unique<Socket>(fmt::format("to_{}", name).c_str());
  socket->bind(block->socket);
  if (!trace_.empty()) {
    const std::string file = fmt::format("{}.{}.fst", trace_.substr(0, trace_.size() - 4), name);
    block->trace_to(file);
    trace_files_.push_back(file);
  }
}

template <class Transaction>
void RtlPlatform::call(Socket& socket, Transaction& transaction, const char* block) {
  try {
    transport(socket, transaction, block);
  } catch (const RtlMismatch& e) {
    if (mismatch_.empty()) mismatch_ = e.what();
    throw;
  }
}

iss::TileDatapaths RtlPlatform::tile_datapaths() {
  iss::TileDatapaths tile;
  if (prng_) tile.prng = this;
  if (sr_) tile.f32_to_f16 = this;
  if (amp_) tile.amp = this;
  return tile;
}

void RtlPlatform::install(hw::Machine& machine) {
  if (installed_ == &machine) return;
  for (unsigned id : machine.active_tiles())
    machine.tile(id).core().set_datapaths(tile_datapaths());
  // One verilated model serves every tile: their bursts take turns on the simulation thread.
  if (prng_ || sr_ || amp_) machine.compute_pool().set_serial(true);
  if (sync_) machine.sync_network().set_barrier_datapath(this);
  if (xmux_) machine.exchange().set_receive_mux(this);
  installed_ = &machine;
}

hw::RunReport run_platform(hw::Platform& platform, RtlPlatform* rtl) {
  if (rtl != nullptr) rtl->install(platform.machine());
  try {
    return platform.run();
  } catch (...) {
    if (rtl != nullptr && !rtl->mismatch().empty()) throw RtlMismatch(rtl->mismatch());
    throw;
  }
}

std::vector<RtlBlockStats> RtlPlatform::stats() const {
  std::vector<RtlBlockStats> out;
  auto add_stats = [&out](const auto& block, const char* name) {
    if (block) out.push_back({name, block->transactions(), block->clocks(), block->host_seconds()});
  };
  add_stats(prng_, "prng");
  add_stats(sr_, "sr");
  add_stats(amp_, "amp");
  add_stats(sync_, "sync");
  add_stats(xmux_, "xmux");
  return out;
}

uint64_t RtlPlatform::next(iss::Xoroshiro128aox& state) {
  PrngTransaction t{state, 0};
  call(*to_prng_, t, "prng");
  state = t.state;
  return t.out;
}

uint32_t RtlPlatform::convert(uint32_t a, unsigned rm, uint32_t& flags, uint32_t random) {
  F32ToF16Transaction t{a, rm, random, 0, 0};
  call(*to_sr_, t, "sr");
  flags |= t.flags;
  return t.y;
}

void RtlPlatform::run(std::vector<iss::AmpLaneRow>& rows) {
  AmpLaneTransaction t{&rows};
  call(*to_amp_, t, "amp");
}

uint64_t RtlPlatform::release(const std::vector<unsigned>& members,
                              const std::vector<std::pair<unsigned, uint64_t>>& arrivals,
                              unsigned latency) {
  BarrierTransaction t{&members, &arrivals, latency, 0};
  call(*to_sync_, t, "sync");
  return t.release;
}

// On a machine the exchange names a sender by its machine tile (chip x tiles + tile), beyond the
// RTL's bus of 4096 senders from the third Mk2 chip on. The mux only compares each word's
// sender with the tile's select, so a receiver's phase goes to the RTL with its senders
// renumbered one to one: those on the bus keep their numbers (every sender of one chip, as
// before), the others take numbers no sender or select of the phase has, from the top down.
void RtlPlatform::run(const hw::RxSchedule& schedule, hw::RxDecisions& decisions) {
  const auto off_bus = [](unsigned id) { return id >= kRtlMaxTiles; };
  bool renumber = false;
  for (const hw::RxWord& w : schedule.words) renumber |= off_bus(w.source);
  for (const hw::RxCycle& c : schedule.cycles)
    renumber |= c.select_write && c.select >= 0 && off_bus(static_cast<unsigned>(c.select));
  if (!renumber) {
    ExchangeRxTransaction t{&schedule, &decisions};
    call(*to_xmux_, t, "xmux");
    return;
  }
  std::vector<unsigned> on_bus;  // the numbers the phase already uses
  for (const hw::RxWord& w : schedule.words)
    if (!off_bus(w.source)) on_bus.push_back(w.source);
  for (const hw::RxCycle& c : schedule.cycles)
    if (c.select_write && c.select >= 0 && !off_bus(static_cast<unsigned>(c.select)))
      on_bus.push_back(static_cast<unsigned>(c.select));
  std::sort(on_bus.begin(), on_bus.end());
  std::map<unsigned, unsigned> number;  // off-bus sender -> its number on the bus
  unsigned next = kRtlMaxTiles;
  const auto on_the_bus = [&](unsigned id) {
    if (!off_bus(id)) return id;
    auto [it, added] = number.try_emplace(id, 0);
    if (added) {
      do --next;  // a phase has far fewer senders than the bus has numbers
      while (std::binary_search(on_bus.begin(), on_bus.end(), next));
      it->second = next;
    }
    return it->second;
  };
  renumbered_ = schedule;
  for (hw::RxWord& w : renumbered_.words) w.source = on_the_bus(w.source);
  for (hw::RxCycle& c : renumbered_.cycles)
    if (c.select_write && c.select >= 0)
      c.select = static_cast<int>(on_the_bus(static_cast<unsigned>(c.select)));
  ExchangeRxTransaction t{&renumbered_, &decisions};
  try {
    call(*to_xmux_, t, "xmux");
  } catch (const RtlMismatch& e) {
    // The RTL's report names senders by their numbers on its bus: say whose they are.
    std::string names;
    for (const auto& [machine_tile, on_bus_number] : number)
      names += fmt::format("{}{} is machine tile {}", names.empty() ? "" : ", ", on_bus_number,
                           machine_tile);
    mismatch_ = fmt::format("{} (senders renumbered onto the RTL's bus: {})", e.what(), names);
    throw RtlMismatch(mismatch_);
  }
}

void print_rtl_stats(std::ostream& out, const std::vector<RtlBlockStats>& stats,
                     const std::vector<std::string>& trace_files) {
  if (stats.empty()) return;
  std::string line;
  for (const RtlBlockStats& s : stats)
    line += fmt::format("{}{} {} transactions in {} clocks", line.empty() ? "" : ", ", s.block,
                        s.transactions, s.clocks);
  fmt::print(out, "rtl blocks           {}\n", line);
  if (!trace_files.empty())
    fmt::print(out, "rtl waveforms        {}\n", fmt::join(trace_files, " "));
}

}  // namespace ipu::tlm_rtl

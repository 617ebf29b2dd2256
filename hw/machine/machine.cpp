#include "machine.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

namespace ipu::hw {
namespace {

std::vector<unsigned> sorted(std::vector<unsigned> tiles) {
  std::sort(tiles.begin(), tiles.end());
  return tiles;
}

}  // namespace

Machine::Machine(const sc_core::sc_module_name& name, const MachineConfig& config,
                 std::vector<unsigned> active_tiles)
    : sc_module(name),
      config_((validate(config), config)),
      active_(sorted(std::move(active_tiles))),
      links_("links", config.chips, config.ipulink, config.chip.tile.clock_hz),
      sync_("sync", config.chip.sync, config.shape(), active_),
      exchange_("exchange", config.chip.exchange, config.shape(), active_, &links_),
      gateways_(config.gateway, config.shape(), ChipEdge::of(config.chip.exchange)),
      compute_("compute", 1) {
  const unsigned per_chip = config_.chip.tiles;
  if (!active_.empty() && active_.back() >= per_chip * config_.chips)
    throw std::invalid_argument(
        fmt::format("{} does not exist on a machine of {} chips of {} tiles",
                    tile_name(active_.back()), config_.chips, per_chip));
  // Chips in order, each binding its tiles in order: the exchange's sockets follow active_.
  for (unsigned c = 0; c < config_.chips; ++c) {
    std::vector<unsigned> local;
    for (unsigned t : active_)
      if (t / per_chip == c) local.push_back(t % per_chip);
    chips_.push_back(std::make_unique<Ipu>(fmt::format("ipu{}", c).c_str(), config_.chip, local, c,
                                           config_.chips, sync_, exchange_));
  }
  const TilePrices prices = tile_prices(config_.energy);
  for (unsigned t : active_) {
    tile(t).set_compute_pool(&compute_);
    tile(t).set_energy_prices(prices);
  }
  exchange_.set_parallel_for(
      [this](size_t n, const std::function<void(size_t)>& fn) { compute_.for_each(n, fn); });
  if (gateways_.present()) {
    exchange_.set_gateways(&gateways_);
    for (unsigned t : active_) tile(t).core().set_streaming_memory(gateways_.memory_bytes());
  }
  sync_.on_release([this](const BarrierRecord& b) { exchange_.open_phase(b); });
}

void Machine::start(uint32_t entry, uint64_t max_cycles) {
  for (auto& chip : chips_) chip->start(entry, max_cycles);
}

uint64_t Machine::cycles() const {
  uint64_t c = 0;
  for (const auto& chip : chips_) c = std::max(c, chip->cycles());
  return c;
}

uint64_t Machine::instructions_retired() const {
  uint64_t n = 0;
  for (const auto& chip : chips_) n += chip->instructions_retired();
  return n;
}

ChipOutcome Machine::outcome() const {
  std::vector<const Tile*> tiles;
  for (unsigned t : active_) tiles.push_back(&tile(t));
  return bsp_outcome(tiles, sync_, exchange_, config_.chip.tiles, config_.chips);
}

void Machine::keep_records(bool keep) {
  sync_.keep_records(keep);
  exchange_.keep_records(keep);
  for (unsigned t : active_) tile(t).keep_timeline(keep);
}

}  // namespace ipu::hw

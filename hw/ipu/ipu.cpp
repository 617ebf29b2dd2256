#include "ipu.h"

#include <fmt/format.h>

#include <algorithm>

namespace ipu::hw {

Ipu::Ipu(const sc_core::sc_module_name& name, const ChipConfig& config,
         std::vector<unsigned> active_tiles)
    : Ipu(name, config, std::move(active_tiles), 0, 1, nullptr, nullptr) {}

Ipu::Ipu(const sc_core::sc_module_name& name, const ChipConfig& config,
         std::vector<unsigned> active_tiles, unsigned chip, unsigned chips, SyncNetwork& sync,
         Exchange& exchange)
    : Ipu(name, config, std::move(active_tiles), chip, chips, &sync, &exchange) {}

Ipu::Ipu(const sc_core::sc_module_name& name, const ChipConfig& config,
         std::vector<unsigned> active_tiles, unsigned chip, unsigned chips, SyncNetwork* sync,
         Exchange* exchange)
    : sc_module(name),
      config_(config),
      chip_(chip),
      active_((std::sort(active_tiles.begin(), active_tiles.end()), active_tiles)),
      sync_(sync),
      exchange_(exchange),
      host_memory_("host_memory"),
      pcie_("pcie", config.pcie, active_),
      host_mmio_("host_mmio") {
  validate(config_, chips);
  if (sync_ == nullptr) {  // a chip alone: its own sync network and exchange
    own_sync_ = std::make_unique<SyncNetwork>("sync", config.sync, config.shape(), active_);
    own_exchange_ =
        std::make_unique<Exchange>("exchange", config.exchange, config.shape(), active_);
    sync_ = own_sync_.get();
    exchange_ = own_exchange_.get();
    sync_->on_release([this](const BarrierRecord& b) { exchange_->open_phase(b); });
  }
  pcie_.to_host.bind(host_memory_.bus);
  host_mmio_.bind(pcie_.mmio);
  for (unsigned id : active_) {
    if (id >= config_.tiles)
      throw std::invalid_argument(
          fmt::format("tile {} does not exist on a {}-tile chip", id, config_.tiles));
    auto tile = std::make_unique<Tile>(fmt::format("tile{}", id).c_str(), config_.tile, id);
    tile->set_machine(chip, chips, config_.tiles, static_cast<unsigned>(active_.size()));
    tile->sync.bind(*sync_);
    tile->exchange.bind(*exchange_);
    exchange_->to_tiles.bind(tile->memory);
    pcie_.to_tiles.bind(tile->memory);
    tiles_.emplace(id, std::move(tile));
  }
}

uint32_t Ipu::mmio(bool write, uint32_t offset, uint32_t value) {
  tlm::tlm_generic_payload p;
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  p.set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
  p.set_address(offset);
  p.set_data_ptr(reinterpret_cast<unsigned char*>(&value));
  p.set_data_length(4);
  p.set_streaming_width(4);
  host_mmio_->b_transport(p, delay);
  if (!p.is_response_ok())
    throw std::runtime_error(
        fmt::format("PCIe MMIO {} of 0x{:x} refused", write ? "write" : "read", offset));
  return value;
}

uint32_t Ipu::mmio_read(uint32_t offset) { return mmio(false, offset, 0); }
void Ipu::mmio_write(uint32_t offset, uint32_t value) { mmio(true, offset, value); }

void Ipu::start(uint32_t entry, uint64_t max_cycles) {
  for (auto& [id, tile] : tiles_) tile->start(entry, max_cycles);
}

uint64_t Ipu::cycles() const {
  uint64_t c = 0;
  for (const auto& [id, tile] : tiles_) c = std::max(c, tile->core().cycles());
  return c;
}

uint64_t Ipu::instructions_retired() const {
  uint64_t n = 0;
  for (const auto& [id, tile] : tiles_) n += tile->core().instructions_retired();
  return n;
}

namespace {

// "tile 5 waits in ipu.sync on group 0 since cycle 123", for deadlock reports.
std::string where(const Tile& t) {
  const std::string name = t.core().tile_label();
  switch (t.waiting()) {
    case TileWait::kFinished: {
      const TileOutcome& o = t.outcome();
      if (o.reason == iss::StopReason::kExited)
        return fmt::format("{} exited with status {}", name, o.exit_status);
      if (o.reason == iss::StopReason::kFault) return fmt::format("{} stopped by a fault", name);
      return fmt::format("{} stopped at the cycle limit ({} cycles)", name, t.core().cycles());
    }
    case TileWait::kSync:
      return fmt::format("{} waits in ipu.sync on group {} since cycle {} at {}", name,
                         t.core().sync_group() < SyncNetwork::kExternal
                             ? std::to_string(t.core().sync_group())
                             : fmt::format("0x{:x}", t.core().sync_group()),
                         t.core().blocked_at(), t.core().where(t.core().context(0).pc));
    case TileWait::kExchange:
      return fmt::format("{} waits at the end of its exchange phase since cycle {} at {}", name,
                         t.core().blocked_at(), t.core().where(t.core().context(0).pc));
    case TileWait::kRunning: break;
  }
  return fmt::format("{} is running", name);
}

}  // namespace

ChipOutcome Ipu::outcome() const {
  std::vector<const Tile*> tiles;
  for (const auto& [id, t] : tiles_) tiles.push_back(t.get());
  return bsp_outcome(tiles, *sync_, *exchange_, config_.tiles, 1);
}

ChipOutcome bsp_outcome(const std::vector<const Tile*>& tiles, const SyncNetwork& sync,
                        const Exchange& exchange, unsigned tiles_per_chip, unsigned chips) {
  std::map<unsigned, const Tile*> by_machine_tile;
  for (const Tile* t : tiles) by_machine_tile[t->machine_id()] = t;
  auto tile = [&](unsigned machine_tile) -> const Tile& {
    return *by_machine_tile.at(machine_tile);
  };
  auto name = [&](unsigned machine_tile) { return tile_name(machine_tile, tiles_per_chip, chips); };
  ChipOutcome out;
  std::vector<std::string> faults, limits;
  bool all_finished = true;
  uint64_t latest = 0;
  for (const Tile* t : tiles) {
    latest = std::max(latest, t->core().cycles());
    if (t->waiting() != TileWait::kFinished) {
      all_finished = false;
      continue;
    }
    const TileOutcome& o = t->outcome();
    if (o.reason == iss::StopReason::kFault) {
      if (std::find(faults.begin(), faults.end(), o.message) == faults.end())
        faults.push_back(o.message);
    } else if (o.reason == iss::StopReason::kCycleLimit) {
      limits.push_back(o.message);
    } else if (out.exit_status == 0) {
      out.exit_status = o.exit_status;
    }
  }
  // Tiles left waiting, and where every tile of an incomplete barrier or exchange is.
  std::string stuck;
  for (const SyncNetwork::Pending& p : sync.pending()) {
    std::vector<std::string> arrived;
    for (const auto& [t, c] : p.arrived)
      arrived.push_back(fmt::format("{} (cycle {})", chips > 1 ? name(t) : std::to_string(t), c));
    stuck += fmt::format("\n  {}: tiles {} arrived; {} missing:", p.group, fmt::join(arrived, ", "),
                         p.missing.size());
    for (unsigned m : p.missing) {
      stuck += "\n    " + where(tile(m));
      const Tile& t = tile(m);
      if (t.waiting() != TileWait::kFinished ||
          t.outcome().reason == iss::StopReason::kCycleLimit) {
        std::string contexts = t.core().describe_running_contexts();
        if (!contexts.empty() && contexts.back() == '\n') contexts.pop_back();
        if (!contexts.empty()) stuck += "\n    " + contexts.substr(2);
      }
    }
  }
  std::map<uint64_t, std::vector<unsigned>> exchange_waits;
  for (const auto& [phase, t, cycle] : exchange.waiting()) exchange_waits[phase].push_back(t);
  for (const auto& [phase, waiting] : exchange_waits) {
    std::vector<std::string> names;
    for (unsigned t : waiting) names.push_back(chips > 1 ? name(t) : std::to_string(t));
    stuck += fmt::format("\n  exchange phase {}: tiles {} wait at the end of their exchange phase",
                         phase, fmt::join(names, ", "));
  }

  // The same fault, or the cycle limit, on 1472 tiles is a few reports and a count, not 1472.
  static constexpr size_t kShown = 3;
  const auto first_reports = [](const std::vector<std::string>& reports, const char* more) {
    const std::vector<std::string> shown(
        reports.begin(),
        reports.begin() + static_cast<std::ptrdiff_t>(std::min(kShown, reports.size())));
    std::string text = fmt::format("{}", fmt::join(shown, "\n"));
    if (reports.size() > kShown)
      text += fmt::format("\n... and {} more {}", reports.size() - kShown, more);
    return text;
  };
  if (!faults.empty()) {
    out.result = ChipOutcome::Result::kFault;
    out.message = first_reports(faults, "faults");
    if (!stuck.empty()) out.message += "\nand these tiles were left waiting:" + stuck;
  } else if (!limits.empty()) {
    out.result = ChipOutcome::Result::kCycleLimit;
    out.message = first_reports(limits, "tiles at the cycle limit");
    if (!stuck.empty()) out.message += "\nand these tiles were left waiting:" + stuck;
  } else if (!all_finished) {
    out.result = ChipOutcome::Result::kDeadlock;
    out.message = fmt::format("deadlock: no tile can make progress (latest cycle {}){}", latest,
                              stuck.empty() ? std::string("") : stuck);
  }
  return out;
}

}  // namespace ipu::hw

#include "ipu.h"

#include <fmt/format.h>

#include <algorithm>

namespace ipu::hw {

Ipu::Ipu(const sc_core::sc_module_name& name, const ChipConfig& config,
         std::vector<unsigned> active_tiles)
    : sc_module(name),
      config_(config),
      active_((std::sort(active_tiles.begin(), active_tiles.end()), active_tiles)),
      sync_("sync", config, active_),
      exchange_("exchange", config, active_),
      host_memory_("host_memory"),
      pcie_("pcie", config.pcie, active_),
      host_mmio_("host_mmio") {
  pcie_.to_host.bind(host_memory_.bus);
  host_mmio_.bind(pcie_.mmio);
  validate(config_);
  for (unsigned id : active_) {
    if (id >= config_.tiles)
      throw std::invalid_argument(
          fmt::format("tile {} does not exist on a {}-tile chip", id, config_.tiles));
    auto tile = std::make_unique<Tile>(fmt::format("tile{}", id).c_str(), config_.tile, id);
    tile->core().set_tile_count(config_.tiles);
    tile->sync.bind(sync_);
    tile->exchange.bind(exchange_);
    exchange_.to_tiles.bind(tile->memory);
    pcie_.to_tiles.bind(tile->memory);
    tiles_.emplace(id, std::move(tile));
  }
  sync_.on_release([this](const BarrierRecord& b) { exchange_.open_phase(b); });
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

std::string Ipu::where(unsigned id) const {
  const Tile& t = tile(id);
  switch (t.waiting()) {
    case TileWait::kFinished: {
      const TileOutcome& o = t.outcome();
      if (o.reason == StopReason::kExited)
        return fmt::format("tile {} exited with status {}", id, o.exit_status);
      if (o.reason == StopReason::kFault) return fmt::format("tile {} stopped by a fault", id);
      return fmt::format("tile {} stopped at the cycle limit ({} cycles)", id, t.core().cycles());
    }
    case TileWait::kSync:
      return fmt::format("tile {} waits in ipu.sync on group {} since cycle {}", id,
                         t.core().sync_group(), t.core().blocked_at());
    case TileWait::kExchange:
      return fmt::format("tile {} waits at the end of its exchange phase since cycle {}", id,
                         t.core().blocked_at());
    case TileWait::kRunning: break;
  }
  return fmt::format("tile {} is running", id);
}

ChipOutcome Ipu::outcome() const {
  ChipOutcome out;
  std::vector<std::string> faults, limits;
  bool all_finished = true;
  for (const auto& [id, t] : tiles_) {
    if (t->waiting() != TileWait::kFinished) {
      all_finished = false;
      continue;
    }
    const TileOutcome& o = t->outcome();
    if (o.reason == StopReason::kFault) {
      if (std::find(faults.begin(), faults.end(), o.message) == faults.end())
        faults.push_back(o.message);
    } else if (o.reason == StopReason::kCycleLimit) {
      limits.push_back(o.message);
    } else if (out.exit_status == 0) {
      out.exit_status = o.exit_status;
    }
  }
  // Tiles left waiting, and where every tile of an incomplete barrier or exchange is.
  std::string stuck;
  for (const SyncNetwork::Pending& p : sync_.pending()) {
    std::vector<std::string> arrived;
    for (const auto& [t, c] : p.arrived) arrived.push_back(fmt::format("{} (cycle {})", t, c));
    stuck += fmt::format("\n  sync group {}: tiles {} arrived; {} missing:", p.group,
                         fmt::join(arrived, ", "), p.missing.size());
    for (unsigned m : p.missing) {
      stuck += "\n    " + where(m);
      const Tile& t = tile(m);
      if (t.waiting() != TileWait::kFinished || t.outcome().reason == StopReason::kCycleLimit) {
        std::string contexts = t.core().describe_running_contexts();
        if (!contexts.empty() && contexts.back() == '\n') contexts.pop_back();
        if (!contexts.empty()) stuck += "\n    " + contexts.substr(2);
      }
    }
  }
  std::map<uint64_t, std::vector<unsigned>> exchange_waits;
  for (const auto& [phase, t, cycle] : exchange_.waiting()) exchange_waits[phase].push_back(t);
  for (const auto& [phase, waiting] : exchange_waits)
    stuck += fmt::format("\n  exchange phase {}: tiles {} wait at the end of their exchange phase",
                         phase, fmt::join(waiting, ", "));

  if (!faults.empty()) {
    out.result = ChipOutcome::Result::kFault;
    constexpr size_t kShown = 3;  // the same fault on 1472 tiles is one report, not 1472
    const std::vector<std::string> shown(
        faults.begin(),
        faults.begin() + static_cast<std::ptrdiff_t>(std::min(kShown, faults.size())));
    out.message = fmt::format("{}", fmt::join(shown, "\n"));
    if (faults.size() > kShown)
      out.message += fmt::format("\n... and {} more faults", faults.size() - kShown);
    if (!stuck.empty()) out.message += "\nand these tiles were left waiting:" + stuck;
  } else if (!limits.empty()) {
    out.result = ChipOutcome::Result::kCycleLimit;
    out.message = fmt::format("{}", fmt::join(limits, "\n"));
    if (!stuck.empty()) out.message += "\nand these tiles were left waiting:" + stuck;
  } else if (!all_finished) {
    out.result = ChipOutcome::Result::kDeadlock;
    out.message = fmt::format("deadlock: no tile can make progress (latest cycle {}){}", cycles(),
                              stuck.empty() ? std::string("") : stuck);
  }
  return out;
}

}  // namespace ipu::hw

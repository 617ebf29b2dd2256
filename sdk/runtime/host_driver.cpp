#include "host_driver.h"

#include <fmt/format.h>

#include <map>

namespace ipu::sdk {
namespace {
constexpr uint32_t kIntCause = hw::PcieEndpoint::kIntCause,
                   kIntEnable = hw::PcieEndpoint::kIntEnable;
}  // namespace

HostDriver::HostDriver(const sc_core::sc_module_name& name, hw::Machine& machine)
    : sc_module(name), machine_(machine) {
  SC_THREAD(boot_thread);
}

void HostDriver::boot(const hw::LoadedProgram& program, uint64_t max_cycles) {
  program_ = &program;
  max_cycles_ = max_cycles;
}

bool HostDriver::dma(bool to_device, const std::vector<Piece>& pieces) {
  const unsigned per_chip = machine_.config().chip.tiles;
  std::map<unsigned, std::vector<Piece>> by_chip;
  for (const Piece& p : pieces)
    if (p.bytes > 0) by_chip[p.tile / per_chip].push_back(p);
  if (by_chip.size() == 1)
    return dma_chip(to_device, by_chip.begin()->first, by_chip.begin()->second);
  // Every chip's endpoint at once.
  size_t running = by_chip.size();
  bool ok = true;
  sc_core::sc_event all_done;
  for (const auto& [chip, share] : by_chip)
    sc_core::sc_spawn([&, chip = chip, &share = share] {
      ok = dma_chip(to_device, chip, share) && ok;
      if (--running == 0) all_done.notify(sc_core::SC_ZERO_TIME);
    });
  if (running > 0) wait(all_done);
  return ok;
}

bool HostDriver::dma_chip(bool to_device, unsigned chip_id, const std::vector<Piece>& pieces) {
  const unsigned per_chip = machine_.config().chip.tiles;
  hw::Ipu& chip = machine_.chip(chip_id);
  const unsigned c = to_device ? 0 : 1;
  const uint32_t channel = hw::PcieEndpoint::channel_base(c);
  chip.mmio_write(kIntEnable, 7);
  const uint32_t done_before = chip.mmio_read(channel + hw::PcieEndpoint::kDone);
  size_t issued = 0, done = 0;
  bool ok = true;
  while (done < pieces.size()) {
    // Keep the queue full: each transfer's latency overlaps the data of those ahead of it.
    while (issued < pieces.size() && issued - done < hw::PcieEndpoint::kQueueDepth) {
      const Piece& p = pieces[issued++];
      chip.start_dma(c, chip.host_memory().map(p.host, p.bytes), p.tile % per_chip, p.address,
                     static_cast<uint32_t>(p.bytes));
    }
    // A transfer that fails still completes (DONE counts it) but raises the error bit instead.
    const uint32_t cause = chip.mmio_read(kIntCause) & (4u | 1u << c);
    if (cause == 0) {
      wait(chip.pcie().interrupt);
      continue;
    }
    if ((cause & 4) && ok) {
      error_ = machine_.chips() > 1 ? fmt::format("chip {}: {}", chip_id, chip.pcie().last_error())
                                    : chip.pcie().last_error();
      ok = false;
    }
    chip.mmio_write(kIntCause, cause);
    done = chip.mmio_read(channel + hw::PcieEndpoint::kDone) - done_before;
  }
  chip.host_memory().unmap_all();
  return ok;
}

void HostDriver::boot_thread() {
  if (program_ == nullptr) return;  // no image to load: nothing to do
  for (unsigned c = 0; c < machine_.chips(); ++c)
    sc_core::sc_spawn([this, c] { load_chip(c); }, fmt::format("load_chip_{}", c).c_str());
  wait(all_loaded_);
  if (!error_.empty()) {
    sc_core::sc_stop();
    return;
  }
  load_seconds_ = sc_core::sc_time_stamp().to_seconds();
  machine_.start(program_->entry, max_cycles_);
}

void HostDriver::load_chip(unsigned chip) {
  const unsigned per_chip = machine_.config().chip.tiles;
  std::vector<Piece> pieces;
  for (auto t = program_->tiles.lower_bound(chip * per_chip);
       t != program_->tiles.end() && t->first < (chip + 1) * per_chip; ++t)
    for (const auto& s : t->second)
      if (!s.bytes.empty())
        pieces.push_back(
            {const_cast<uint8_t*>(s.bytes.data()), s.bytes.size(), t->first, s.address});
  if (!pieces.empty() && !dma_chip(true, chip, pieces))
    error_ = fmt::format("loading chip {} over PCIe failed: {}", chip, error_);
  if (++loaded_chips_ == machine_.chips()) all_loaded_.notify(sc_core::SC_ZERO_TIME);
}

}  // namespace ipu::sdk

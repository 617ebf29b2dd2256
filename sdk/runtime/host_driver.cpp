#include "host_driver.h"

#include <fmt/format.h>

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

bool HostDriver::dma(bool to_device, uint8_t* host, size_t bytes, unsigned tile, uint32_t address) {
  if (bytes == 0) return true;
  const unsigned per_chip = machine_.config().chip.tiles;
  hw::Ipu& chip_ = machine_.chip(tile / per_chip);
  tile %= per_chip;
  const unsigned c = to_device ? 0 : 1;
  const uint64_t bus = chip_.host_memory().map(host, bytes);
  chip_.mmio_write(kIntEnable, 7);
  chip_.start_dma(c, bus, tile, address, static_cast<uint32_t>(bytes));
  for (;;) {
    const uint32_t cause = chip_.mmio_read(kIntCause);
    if (cause & 4) {
      error_ = chip_.pcie().last_error();
      chip_.mmio_write(kIntCause, 4);
      chip_.host_memory().unmap_all();
      return false;
    }
    if (cause & (1u << c)) {
      chip_.mmio_write(kIntCause, 1u << c);
      chip_.host_memory().unmap_all();
      return true;
    }
    wait(chip_.pcie().interrupt);
  }
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
  for (auto t = program_->tiles.lower_bound(chip * per_chip);
       t != program_->tiles.end() && t->first < (chip + 1) * per_chip; ++t)
    for (const auto& s : t->second)
      if (error_.empty() &&
          !dma(true, const_cast<uint8_t*>(s.bytes.data()), s.bytes.size(), t->first, s.address))
        error_ =
            fmt::format("loading {} over PCIe failed: {}", machine_.tile_name(t->first), error_);
  if (++loaded_chips_ == machine_.chips()) all_loaded_.notify(sc_core::SC_ZERO_TIME);
}

}  // namespace ipu::sdk

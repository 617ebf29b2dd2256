// One IPU chip: its tiles (those with a program) and its PCIe endpoint, wired to a sync network
// and an exchange: its own on a chip alone (a PCIe card), the machine's when it is one chip of
// several (hw/machine). Tiles run their compute and exchange phases temporally decoupled; the
// sync network brings their local times together at each barrier. After the simulation,
// outcome() says how the program ended: every tile exited, a tile faulted, a tile hit the
// cycle limit, or no tile could make progress (deadlock), with a report naming tiles, contexts
// and pcs.
#pragma once

#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <systemc>
#include <vector>

#include "hw/common/run_report.h"
#include "hw/exchange/exchange.h"
#include "hw/ipu/chip_config.h"
#include "hw/pcie/host_memory.h"
#include "hw/pcie/pcie_endpoint.h"
#include "hw/sync/sync_network.h"
#include "hw/tile/tile.h"

namespace ipu::hw {

class Ipu : public sc_core::sc_module {
 public:
  // A chip on its own: it owns its sync network and exchange.
  Ipu(const sc_core::sc_module_name& name, const ChipConfig& config,
      std::vector<unsigned> active_tiles);
  // Chip `chip` of a machine of `chips`: its tiles (the chip's own numbers) join the machine's
  // sync network and exchange, which must list them as machine tiles.
  Ipu(const sc_core::sc_module_name& name, const ChipConfig& config,
      std::vector<unsigned> active_tiles, unsigned chip, unsigned chips, SyncNetwork& sync,
      Exchange& exchange);

  // Starts every active tile's supervisor at `entry` (cycle 0 for all of them).
  void start(uint32_t entry, uint64_t max_cycles);

  Tile& tile(unsigned id) { return *tiles_.at(id); }
  const Tile& tile(unsigned id) const { return *tiles_.at(id); }
  const std::vector<unsigned>& active_tiles() const { return active_; }
  const ChipConfig& config() const { return config_; }
  unsigned chip_index() const { return chip_; }
  const SyncNetwork& sync_network() const { return *sync_; }
  SyncNetwork& sync_network() { return *sync_; }
  PcieEndpoint& pcie() { return pcie_; }
  // The host's MMIO access to the PCIe endpoint's registers (a TLM initiator bound to it).
  uint32_t mmio_read(uint32_t offset);
  void mmio_write(uint32_t offset, uint32_t value);
  // Programs DMA channel c (0: host->device, 1: device->host) and rings its doorbell;
  // completion raises INT_CAUSE bit c (error: bit 2) and the endpoint's interrupt event.
  void start_dma(unsigned c, uint64_t host_bus_address, unsigned tile, uint32_t tile_address,
                 uint32_t bytes) {
    const uint32_t base = PcieEndpoint::channel_base(c);
    mmio_write(base + PcieEndpoint::kHostAddressLow, static_cast<uint32_t>(host_bus_address));
    mmio_write(base + PcieEndpoint::kHostAddressHigh,
               static_cast<uint32_t>(host_bus_address >> 32));
    mmio_write(base + PcieEndpoint::kTile, tile);
    mmio_write(base + PcieEndpoint::kTileAddress, tile_address);
    mmio_write(base + PcieEndpoint::kBytes, bytes);
    mmio_write(base + PcieEndpoint::kDoorbell, 1);
  }
  const PcieEndpoint& pcie() const { return pcie_; }
  HostMemory& host_memory() { return host_memory_; }
  const Exchange& exchange() const { return *exchange_; }
  Exchange& exchange() { return *exchange_; }

  // Call after sc_start() has returned (on a chip alone; a machine reports for all its chips).
  ChipOutcome outcome() const;
  uint64_t cycles() const;  // the latest tile cycle reached
  uint64_t instructions_retired() const;

 private:
  Ipu(const sc_core::sc_module_name& name, const ChipConfig& config,
      std::vector<unsigned> active_tiles, unsigned chip, unsigned chips, SyncNetwork* sync,
      Exchange* exchange);
  uint32_t mmio(bool write, uint32_t offset, uint32_t value);

  ChipConfig config_;
  unsigned chip_ = 0;
  std::vector<unsigned> active_;
  std::map<unsigned, std::unique_ptr<Tile>> tiles_;
  std::unique_ptr<SyncNetwork> own_sync_;  // a chip alone
  std::unique_ptr<Exchange> own_exchange_;
  SyncNetwork* sync_;
  Exchange* exchange_;
  HostMemory host_memory_;  // the host side of the PCIe link: buffers the runtime maps
  PcieEndpoint pcie_;
  tlm_utils::simple_initiator_socket<Ipu> host_mmio_;
};

// How a run on these tiles (in machine tile order, every chip's) ended, with the report for
// anything but a normal exit.
ChipOutcome bsp_outcome(const std::vector<const Tile*>& tiles, const SyncNetwork& sync,
                        const Exchange& exchange, unsigned tiles_per_chip, unsigned chips);

}  // namespace ipu::hw

// The host side of the runtime: drives each chip's PCIe endpoint through its MMIO registers
// (hw/pcie/pcie_endpoint.h) to load an image and to move stream data. Every byte between host
// and device goes through an endpoint's DMA engine and takes its simulated time; the chips of
// a machine load in parallel, and start together once all are loaded.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <systemc>
#include <vector>

#include "hw/ipu/ipu.h"
#include "hw/machine/platform.h"

namespace ipu::sdk {

class HostDriver : public sc_core::sc_module {
 public:
  HostDriver(const sc_core::sc_module_name& name, hw::Machine& machine);

  // At the start of simulation: load every segment over its chip's PCIe, then start the tiles.
  void boot(const hw::LoadedProgram& program, uint64_t max_cycles);

  // Host memory and where on a machine tile (chip * chip tiles + tile) it goes or comes from.
  struct Piece {
    uint8_t* host;
    size_t bytes;
    unsigned tile;
    uint32_t address;
  };
  // Moves the pieces between host memory and the tiles, through each tile's chip's endpoint,
  // every chip at once, each keeping its DMA queue full so that transfer latencies overlap
  // (blocking; call from a SystemC thread). Returns false (with error()) if an endpoint
  // reports an error.
  bool dma(bool to_device, const std::vector<Piece>& pieces);

  double load_seconds() const { return load_seconds_; }
  const std::string& error() const { return error_; }

 private:
  SC_HAS_PROCESS(HostDriver);
  void boot_thread();
  void load_chip(unsigned chip);
  // One chip's share of dma(): returns false (with error_) on an endpoint error.
  bool dma_chip(bool to_device, unsigned chip, const std::vector<Piece>& pieces);

  hw::Machine& machine_;
  unsigned loaded_chips_ = 0;
  sc_core::sc_event all_loaded_;
  const hw::LoadedProgram* program_ = nullptr;
  uint64_t max_cycles_ = 0;
  double load_seconds_ = 0;
  std::string error_;
};

}  // namespace ipu::sdk

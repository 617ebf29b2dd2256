// The host side of the runtime: drives the chip's PCIe endpoint through its MMIO registers
// (hw/pcie/pcie_endpoint.h) to load an image and to move stream data. Every byte between host
// and device goes through the endpoint's DMA engine and takes its simulated time.
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
  HostDriver(const sc_core::sc_module_name& name, hw::Ipu& chip);

  // At the start of simulation: load every segment over PCIe, then start the tiles.
  void boot(const hw::LoadedProgram& program, uint64_t max_cycles);

  // Moves `bytes` between host memory and a tile (blocking; call from a SystemC thread).
  // Returns false (with error()) if the endpoint reports an error.
  bool dma(bool to_device, uint8_t* host, size_t bytes, unsigned tile, uint32_t address);

  double load_seconds() const { return load_seconds_; }
  const std::string& error() const { return error_; }

 private:
  SC_HAS_PROCESS(HostDriver);
  void boot_thread();

  hw::Ipu& chip_;
  const hw::LoadedProgram* program_ = nullptr;
  uint64_t max_cycles_ = 0;
  double load_seconds_ = 0;
  std::string error_;
};

}  // namespace ipu::sdk

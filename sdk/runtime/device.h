// The SDK runtime: a device that runs a compiled executable on the virtual platform in this
// process: a chip or a machine of several. Connect host buffers to the executable's streams,
// write tensors, run, read tensors; on a replicated executable each replica has its own stream
// data and its own copy of every tensor. The image is loaded, and stream data moved at host
// syncs, only through each chip's PCIe endpoint (hw/pcie): its DMA engine's bandwidth and
// latency (pcie.* parameters) give the load and transfer times. write_tensor and read_tensor
// are zero-time debug accesses.
// A fault, schedule error or deadlock on the device surfaces as a DeviceError carrying the
// platform's report. SystemC elaborates once per process: one Device runs per process.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <sstream>
#include <string>

#include "hw/machine/platform.h"
#include "sdk/compiler/compiler.h"
#include "sdk/runtime/host_driver.h"
#include "tlm/rtl_platform.h"

namespace ipu::sdk {

class DeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct DeviceOptions {
  uint64_t max_cycles = 0;    // per tile; 0: no limit
  bool memory_hash = false;   // hash the active tiles' SRAM after the run (DeviceReport::run)
  tlm_rtl::RtlSelection rtl;  // blocks computed by their verilated RTL (ipu-sim --rtl)
  std::string rtl_trace;      // FST waveforms of those blocks
};

struct DeviceReport {
  hw::RunReport run;
  std::vector<tlm_rtl::RtlBlockStats> rtl;  // the --rtl blocks' transactions and clocks
  std::vector<std::string> rtl_trace_files;
  double load_seconds = 0;  // loading the image over PCIe, before the tiles start
  uint64_t image_bytes = 0;
  uint64_t host_to_device_bytes = 0, device_to_host_bytes = 0;  // stream data
  uint64_t host_transfer_cycles = 0;                            // tile cycles spent in host syncs
};

class Device {
 public:
  Device(const Executable& executable, DeviceOptions options = {});

  // Host memory for a stream: exactly replicas x elements x element size bytes, replica r's
  // data at r x elements x element size.
  void connect_stream(const std::string& name, void* buffer, size_t bytes);
  // Host memory for one replica's stream: exactly elements x element size bytes.
  void connect_stream(const std::string& name, unsigned replica, void* buffer, size_t bytes);
  // Every replica's copy of the tensor gets `data`.
  void write_tensor(const std::string& name, const void* data, size_t bytes);
  void write_tensor(const std::string& name, unsigned replica, const void* data, size_t bytes);
  void read_tensor(const std::string& name, void* data, size_t bytes) const;  // replica 0's
  void read_tensor(const std::string& name, unsigned replica, void* data, size_t bytes) const;

  // Runs the program to its end; throws DeviceError with the report if it does not exit 0.
  const DeviceReport& run();
  const std::string& console() const { return console_text_; }
  const hw::Ipu& chip() const { return platform_->machine().chip(0); }
  const hw::Machine& machine() const { return platform_->machine(); }

 private:
  uint64_t host_sync(unsigned transfer);
  size_t tensor_bytes(const std::string& name, size_t bytes, unsigned replica,
                      const char* what) const;
  unsigned machine_tile(unsigned replica, unsigned tile) const {
    return replica * exe_.replica_tiles + tile;
  }

  Executable exe_;
  DeviceOptions options_;
  std::ostringstream console_, trace_;
  std::string console_text_;
  std::unique_ptr<hw::Platform> platform_;
  std::unique_ptr<tlm_rtl::RtlPlatform> rtl_;
  std::unique_ptr<HostDriver> driver_;
  std::map<std::string, std::vector<uint8_t*>> streams_;  // per replica (null: not connected)
  DeviceReport report_;
  bool ran_ = false;
};

}  // namespace ipu::sdk

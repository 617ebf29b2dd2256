// The SDK runtime: a device that runs a compiled executable on the virtual platform in this
// process: a chip or a machine of several. Connect host buffers to the executable's streams,
// write tensors, run, read tensors; on a replicated executable each replica has its own stream
// data and its own copy of every tensor (streams over PCIe, or on an IPU-Machine over the
// gateway's RoCE ports into streaming memory: see CompileOptions::host_link). The image loads
// once; then run(name) runs any of the
// executable's programs, as often as the host likes: between runs the simulation stays alive,
// paused with every tile waiting at its dispatch sync for the host to name the next program. The
// image is loaded, and stream data moved at host syncs, only through each chip's PCIe endpoint
// (hw/pcie): its DMA engine's bandwidth and latency (pcie.* parameters) give the load and transfer
// times. write_tensor and read_tensor are zero-time debug accesses. A fault, schedule error or
// deadlock on the device surfaces as a DeviceError carrying the platform's report, and the device
// runs nothing more. SystemC elaborates once per process: one Device per process.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
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
  uint64_t max_cycles = 2'000'000'000;  // per tile, over every run, as ipu-sim; 0: no limit
  bool memory_hash = false;   // hash the active tiles' SRAM after the run (DeviceReport::run)
  tlm_rtl::RtlSelection rtl;  // blocks computed by their verilated RTL (ipu-sim --rtl)
  std::string rtl_trace;      // FST waveforms of those blocks
};

// What one run() did: its counts and times are that run's alone.
struct DeviceReport {
  std::string program;
  hw::RunReport run;
  std::vector<tlm_rtl::RtlBlockStats> rtl;  // the --rtl blocks' transactions and clocks
  std::vector<std::string> rtl_trace_files;
  double load_seconds = 0;  // loading the image over PCIe, before the first run
  uint64_t image_bytes = 0;
  uint64_t host_to_device_bytes = 0, device_to_host_bytes = 0;  // stream data
  uint64_t host_transfer_cycles = 0;  // tile cycles spent in host syncs (the dispatch's included)
};

class Device {
 public:
  // Throws DeviceError for a second Device in the process (SystemC elaborates one design).
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

  // Zero-time access to entry `entry` of a remote buffer in replica `replica`'s streaming
  // memory (bytes: exactly one entry).
  void write_remote(const std::string& name, unsigned replica, unsigned entry, const void* data,
                    size_t bytes);
  void read_remote(const std::string& name, unsigned replica, unsigned entry, void* data,
                   size_t bytes) const;

  // Runs the named program to its end; throws DeviceError with the platform's report if a tile
  // faults, hangs or stops, or for a name the executable lacks (which runs nothing). Host
  // buffers may be refilled, and streams reconnected, between runs.
  const DeviceReport& run(const std::string& program);
  // Runs the executable's only program.
  const DeviceReport& run();
  unsigned runs() const { return runs_; }
  const std::string& console() const { return console_text_; }
  const hw::Ipu& chip() const { return platform_->machine().chip(0); }
  const hw::Machine& machine() const { return platform_->machine(); }

 private:
  uint64_t host_sync(unsigned transfer);
  // The dispatch sync: waits (paused) for run() to name a program, then writes its index to
  // every tile over PCIe.
  uint64_t dispatch();
  // Tile cycles the host has taken since `begin` (simulated time), counted in the report.
  uint64_t host_cycles_since(const sc_core::sc_time& begin);
  void check_replica(const char* what, const std::string& name, unsigned replica) const;
  size_t tensor_bytes(const std::string& name, size_t bytes, unsigned replica,
                      const char* what) const;
  // Where the entry lies: (gateway, streaming-memory address); checks name, replica, entry, size.
  std::pair<unsigned, uint64_t> remote_entry(const std::string& name, unsigned replica,
                                             unsigned entry, size_t bytes, const char* what) const;
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
  hw::RunReport total_;              // the platform's counts at the end of the last run
  std::optional<uint32_t> command_;  // the program the next dispatch starts
  bool at_dispatch_ = false;         // paused at a dispatch sync, waiting for a command
  sc_core::sc_event resume_;
  std::string failure_;  // why the device stopped for good
  unsigned runs_ = 0;
};

}  // namespace ipu::sdk

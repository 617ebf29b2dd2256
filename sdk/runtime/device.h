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
#include <utility>

#include "hw/common/run_report.h"
#include "hw/energy/energy.h"
#include "hw/machine/run_options.h"
#include "report/output_options.h"
#include "sdk/compiler/compiler.h"
#include "sdk/runtime/debug_options.h"
#include "sdk/runtime/profile.h"
#include "tlm/rtl_selection.h"

namespace ipu::hw {
class Machine;
}  // namespace ipu::hw

namespace ipu::sdk {

class DeviceImpl;

class DeviceError : public std::runtime_error {
 public:
  explicit DeviceError(const std::string& what,
                       std::optional<hw::ChipOutcome> outcome = std::nullopt)
      : std::runtime_error(what), outcome_(std::move(outcome)) {}
  // How the device stopped when the program failed (a fault, the cycle limit, a deadlock, a
  // tile's exit) rather than a use of this API; its report is what().
  const std::optional<hw::ChipOutcome>& outcome() const { return outcome_; }

 private:
  std::optional<hw::ChipOutcome> outcome_;
};

// The run options (hw/machine/run_options.h), the output files written after every run
// (report/output_options.h: stats, trace, report), the debugging aids (debug_options.h: GDB,
// RTL blocks) and the device's own.
struct DeviceOptions : hw::RunOptions, report::OutputOptions, DebugOptions {
  // Profile what the workers run (profile()); on whenever stats, trace or report is written.
  bool profile = false;
  // Keep every superstep's records (the tiles' timelines, the barriers, the exchange phases)
  // for machine() to show. false: only the counts the reports need, unless statistics, a
  // trace, a report or a profile need them, so that running programs again and again does not
  // grow the device (ipu-sim run of a saved image).
  bool keep_records = true;
};

// What one run() did: its counts and times are that run's alone.
struct DeviceReport {
  std::string program;
  hw::RunReport run;
  hw::EnergyReport energy;                  // that run's energy and average power (docs/energy.md)
  std::vector<tlm_rtl::RtlBlockStats> rtl;  // the --rtl blocks' transactions and clocks
  std::vector<std::string> rtl_trace_files;
  double load_seconds = 0;   // loading the image over PCIe, before the first run
  uint64_t image_bytes = 0;  // of the image, sent over PCIe (not the zeros its segments end in)
  uint64_t host_to_device_bytes = 0, device_to_host_bytes = 0;  // stream data
  uint64_t host_transfer_cycles = 0;  // tile cycles spent in host syncs (the dispatch's included)
  // Stream bytes the host sent ahead, into a stream's second buffer while the tiles ran on
  // (CompileOptions::prefetch_streams).
  uint64_t prefetched_bytes = 0;
  // Where the workers' cycles went in every run so far (Device::profile(); empty unless
  // DeviceOptions::profile, stats or trace is set).
  Profile profile;
};

class Device {
 public:
  // Throws DeviceError for a second Device in the process (SystemC elaborates one design).
  Device(const Executable& executable, DeviceOptions options = {});
  // Takes the executable over: a POD's image is gigabytes, and a copy would double them.
  Device(Executable&& executable, DeviceOptions options = {});
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

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
  // faults, hangs or stops, or for a name the executable lacks (which runs nothing); throws
  // ImageError, the device stopped for good, when the image's firmware asks the host for a
  // transfer its runtime section does not list. Host buffers may be refilled, and streams
  // reconnected, between runs.
  const DeviceReport& run(const std::string& program);
  // Runs the executable's only program.
  const DeviceReport& run();

  unsigned runs() const;
  unsigned gdb_port() const;  // where the GDB server listens (DeviceOptions::gdb_port); 0: none
  const std::string& console() const;  // what the tiles printed, every run so far

  // Writes the run statistics so far (every run's) as ipu-sim run --stats does: the machine's
  // configuration, the image's checksum, a summary and every superstep (none when
  // DeviceOptions::keep_records is off and nothing else needs them).
  void write_stats(std::ostream& out) const;
  // Where the workers' cycles went so far, per compute set, codelet and vertex
  // (sdk/runtime/profile.h); empty unless DeviceOptions::profile, stats or trace is set.
  Profile profile() const;

  // The simulated machine, for tests and tools inside this tree (hw/machine/machine.h).
  const hw::Machine& machine() const;

 private:
  std::unique_ptr<DeviceImpl> impl_;
};

}  // namespace ipu::sdk

// The device's simulation, behind Device (device.h) so that the SDK's public headers carry no
// SystemC, platform or RTL headers. Not installed.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "debug/gdb_server.h"
#include "hw/machine/platform.h"
#include "report/run_statistics.h"
#include "sdk/runtime/device.h"
#include "sdk/runtime/host_driver.h"
#include "tlm/rtl_platform.h"

namespace ipu::sdk {

class Symbolizer;

class DeviceImpl {
 public:
  // Device's operations (device.h says what each does).
  DeviceImpl(Executable executable, DeviceOptions options);
  ~DeviceImpl();  // tells an attached GDB that the program has ended
  void connect_stream(const std::string& name, void* buffer, size_t bytes);
  void connect_stream(const std::string& name, unsigned replica, void* buffer, size_t bytes);
  void write_tensor(const std::string& name, const void* data, size_t bytes);
  void write_tensor(const std::string& name, unsigned replica, const void* data, size_t bytes);
  void read_tensor(const std::string& name, void* data, size_t bytes) const;
  void read_tensor(const std::string& name, unsigned replica, void* data, size_t bytes) const;
  void write_remote(const std::string& name, unsigned replica, unsigned entry, const void* data,
                    size_t bytes);
  void read_remote(const std::string& name, unsigned replica, unsigned entry, void* data,
                   size_t bytes) const;
  const DeviceReport& run(const std::string& program);
  const DeviceReport& run();
  unsigned runs() const { return runs_; }
  unsigned gdb_port() const { return gdb_ ? gdb_->port() : 0; }
  const std::string& console() const { return console_text_; }
  const hw::Machine& machine() const { return platform_->machine(); }
  void write_stats(std::ostream& out) const;
  // Every kept superstep named for its program step (sdk/runtime/superstep_labels.h).
  std::vector<report::SuperstepLabel> superstep_labels() const;
  Profile profile() const;

 private:
  // The host's part of host sync `transfer`, reached at `cycle`: returns the cycles it takes.
  uint64_t host_sync(unsigned transfer, uint64_t cycle);
  uint64_t gateway_host_sync(const HostTransfer& t, uint64_t cycle);
  // host_sync() for the sync network: what it cannot do stops the simulation, and run() reports
  // why, instead of an exception through the SystemC kernel.
  uint64_t serve_host_sync(unsigned transfer, uint64_t cycle);
  // Sets each stream's uses left in a run of `program` (StreamTurns::left_in_run).
  void count_stream_uses(unsigned program);
  bool profiling() const {
    return options_.profile || !options_.stats.empty() || !options_.trace.empty() ||
           !options_.report.empty();
  }
  // Writes a file of the run's outputs; a failure to is an error unless the run failed already.
  void write_output(const std::string& path, const char* what,
                    const std::function<void(std::ostream&)>& writer);
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

  Executable exe_;  // its image's segments emptied once loaded (the platform holds them)
  uint32_t image_checksum_ = 0;  // of the image as compiled
  DeviceOptions options_;
  std::ostringstream console_, trace_;
  std::string console_text_;
  std::shared_ptr<const Symbolizer> symbolizer_;  // names the function of a pc in reports
  std::unique_ptr<hw::Platform> platform_;
  std::unique_ptr<tlm_rtl::RtlPlatform> rtl_;
  std::unique_ptr<HostDriver> driver_;
  // After platform_: gone (and unhooked from the cores) before the platform is.
  std::unique_ptr<debug::GdbServer> gdb_;
  std::map<std::string, std::vector<uint8_t*>> streams_;  // per replica (null: not connected)
  // A stream over the gateway: its uses since the load (which of its buffers is next: the
  // tiles count the same way), its uses left in this run, and the next use's transfers if the
  // host has started them (gateway, transfer; per replica).
  struct StreamTurns {
    uint64_t uses = 0, left_in_run = 0;
    std::vector<std::pair<unsigned, uint64_t>> next;
  };
  std::map<std::string, StreamTurns> stream_turns_;
  std::map<unsigned, std::map<std::string, uint64_t>> stream_uses_per_run_;  // by program
  static constexpr uint64_t kMaxHostSyncsCounted = uint64_t{1} << 24;
  DeviceReport report_;
  hw::RunReport total_;                 // the platform's counts at the end of the last run
  std::optional<uint32_t> command_;     // the program the next dispatch starts
  std::vector<unsigned> run_programs_;  // every run's program, in order (superstep labels)
  uint32_t running_ = 0;                // the program the tiles run (its index)
  bool at_dispatch_ = false;            // paused at a dispatch sync, waiting for a command
  sc_core::sc_event resume_;
  std::string failure_;  // why the device stopped for good
  // What a host sync threw (serve_host_sync), for run() to throw once the run has stopped.
  std::exception_ptr host_failure_;
  unsigned runs_ = 0;
};

}  // namespace ipu::sdk

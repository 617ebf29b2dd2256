// One run of a test firmware image (built in the tree, in IPU_TEST_FIRMWARE_DIR) on a platform
// of the given machine configuration: the platform stays alive so tests can inspect the
// machine's tiles, sync records, links and gateways after the run.
#pragma once

#include <memory>
#include <sstream>
#include <string>

#include "hw/machine/platform.h"
#include "sdk/image/program.h"

namespace ipu::test {

struct ImageRun {
  std::ostringstream console, trace;
  std::unique_ptr<hw::Platform> platform;
  hw::RunReport report;

  ImageRun(const std::string& image, const hw::MachineConfig& machine, uint64_t max_cycles) {
    hw::PlatformOptions options;
    options.machine = machine;
    options.max_cycles = max_cycles;
    sc_core::sc_set_time_resolution(1, sc_core::SC_FS);
    platform = std::make_unique<hw::Platform>(
        options,
        sdk::load_program(sdk::read_elf(std::string(IPU_TEST_FIRMWARE_DIR) + "/" + image + ".elf"),
                          options.machine),
        console, trace);
    report = platform->run();
  }
  const hw::Machine& machine() const { return platform->machine(); }
};

// A run on a machine preset (m2000, pod16, ...).
struct MachineRun : ImageRun {
  MachineRun(const std::string& image, const std::string& preset)
      : ImageRun(image, hw::machine_preset(preset), 10'000'000) {}
};

}  // namespace ipu::test

#include "hw/machine/host_footprint.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "iss/isa.h"

namespace ipu::hw {

HostFootprint estimate_host_footprint(const MachineConfig& machine, const LoadedProgram& program,
                                      uint64_t tiles_here) {
  const uint64_t sram = machine.chip.tile.sram_bytes;
  const uint64_t predecode = (sram / 4 + 1) * sizeof(iss::Decoded);
  const uint64_t tiles = program.tiles.empty() ? 0 : tiles_here;
  // The image's bytes per tile, on average over its tiles (a rank holds a share of them).
  uint64_t loaded = 0, code = 0;
  for (const auto& [tile, segments] : program.tiles)
    for (const LoadedProgram::Segment& s : segments) loaded += s.size, code += s.code_bytes;
  const uint64_t each_loaded = program.tiles.empty() ? 0 : loaded / program.tiles.size();
  const uint64_t each_code = program.tiles.empty() ? 0 : code / program.tiles.size();
  const uint64_t each_predecoded = each_code / 4 * sizeof(iss::Decoded);
  HostFootprint e;
  e.tiles = tiles;
  e.least = tiles * (kTileStateBytes + each_loaded + each_predecoded);
  e.most = tiles * (kTileStateBytes + sram + each_predecoded);
  e.reserved = tiles * (sram + predecode);
  return e;
}

HostCapacity host_capacity() {
  HostCapacity h;
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    std::istringstream fields(line);
    std::string name;
    uint64_t kib = 0;
    if (fields >> name >> kib && name == "MemAvailable:") h.available = kib * 1024;
  }
  std::ifstream status("/proc/self/status");
  while (std::getline(status, line)) {
    std::istringstream fields(line);
    std::string name;
    uint64_t kib = 0;
    if (fields >> name >> kib && name == "VmSize:") h.mapped = kib * 1024;
  }
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    h.address_space = limit.rlim_cur;
  return h;
}

std::string gibibytes(uint64_t bytes) {
  return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
}

std::optional<std::string> check_host_footprint(const HostFootprint& e, const HostCapacity& host,
                                                const std::string& machine_name) {
  const std::string what = fmt::format("{} active tiles of {}", e.tiles, machine_name);
  if (host.address_space && e.reserved + host.mapped > *host.address_space)
    throw std::runtime_error(fmt::format(
        "{} reserve {} of address space for their SRAM and predecode caches (backed only where "
        "the program touches them); with the {} this process maps already, more than it may map "
        "({}, ulimit -v): raise the limit, or run fewer chips or tiles, or split the machine "
        "over MPI ranks",
        what, gibibytes(e.reserved), gibibytes(host.mapped), gibibytes(*host.address_space)));
  if (host.available != 0 && e.least > host.available)
    throw std::runtime_error(fmt::format(
        "{} need at least {} of host memory (each tile's state, image and predecoded code), "
        "more than this host has available ({}): run fewer chips or tiles, or split the machine "
        "over MPI ranks on several hosts",
        what, gibibytes(e.least), gibibytes(host.available)));
  if (host.available != 0 && e.most > host.available)
    return fmt::format(
        "{} may need up to {} of host memory if the program touches all of their SRAM (at "
        "least {}); this host has {} available, and the kernel ends a process that runs out",
        what, gibibytes(e.most), gibibytes(e.least), gibibytes(host.available));
  return std::nullopt;
}

}  // namespace ipu::hw

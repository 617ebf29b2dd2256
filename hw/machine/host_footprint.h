// What a run costs the host in memory, before it runs: ipu-sim warns when a run may not fit the
// host and refuses one that cannot, with the figures, instead of being killed by the kernel's
// OOM killer part way (or ending in std::bad_alloc under `ulimit -v`).
//
// Each active tile holds its SRAM and its predecode cache as zero pages that the kernel backs
// only where the program touches them (iss/zero_pages.h): a run needs at least every tile's
// fixed state and its loaded image, and at most that plus every tile's whole SRAM. The address
// space is reserved whole, so `ulimit -v` limits the reservation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "hw/common/loaded_program.h"
#include "hw/machine/machine_config.h"

namespace ipu::hw {

// A tile's state beyond its SRAM and predecode cache (its core, SystemC process, timeline and
// queues): measured, as peak RSS over active tiles of bench/chip_host_cost's loop, whose
// program touches little SRAM (1472 tiles: 137 MiB, 93 KiB each with the pages it touches).
inline constexpr uint64_t kTileStateBytes = 64 * 1024;

struct HostFootprint {
  uint64_t tiles = 0;     // active tiles simulated by this process
  uint64_t least = 0;     // resident whatever the program does: state, images, their predecode
  uint64_t most = 0;      // resident if the program touches every tile's whole SRAM
  uint64_t reserved = 0;  // address space mapped (SRAM and predecode caches, whole)
};
// `tiles_here`: the active tiles this process simulates (all of them, or a rank's share).
HostFootprint estimate_host_footprint(const MachineConfig& machine, const LoadedProgram& program,
                                      uint64_t tiles_here);

struct HostCapacity {
  uint64_t available = 0;                 // MemAvailable (/proc/meminfo)
  std::optional<uint64_t> address_space;  // RLIMIT_AS (ulimit -v), if any
  uint64_t mapped = 0;                    // this process's address space so far (VmSize)
};
HostCapacity host_capacity();

// Checks the estimate against the host: throws std::runtime_error with the figures when the
// run cannot fit (its least above the memory available, or its reservation and what the
// process maps already above the address space limit); returns a warning when it may not (its
// most above the memory available).
// `machine_name`: what the messages call the machine ("pod64: 64 chips x 1472 tiles").
std::optional<std::string> check_host_footprint(const HostFootprint& estimate,
                                                const HostCapacity& host,
                                                const std::string& machine_name);

// "2.1 GiB"
std::string gibibytes(uint64_t bytes);

}  // namespace ipu::hw

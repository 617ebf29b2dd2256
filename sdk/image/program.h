// An image as a machine loads it: each segment on its chip (p_flags) and tile (physical
// address), checked against the machine's configuration, and the manifest's target (an SDK
// image records the machine it was built for) compared with it.
#pragma once

#include <optional>
#include <string>

#include "hw/common/loaded_program.h"
#include "hw/machine/machine_config.h"
#include "sdk/image/elf_reader.h"

namespace ipu::sdk {

// Throws ImageError naming the image, the segment and its file offset, or the manifest field,
// when the image does not fit the machine: a chip or tile it does not have, a segment outside
// the tile's SRAM window or overlapping another on its tile, an entry point outside SRAM, a
// corrupt manifest, or a manifest built for another configuration.
hw::LoadedProgram load_program(const ElfImage& image, const hw::MachineConfig& machine);

// The machine an SDK image was built for, as its .ipu.manifest's "target" records it.
struct ManifestTarget {
  std::string preset;  // "" in a manifest that does not name one
  uint64_t chips = 1, tiles = 0;
  double clock_hz = 0;
};
// None for an image without a manifest; throws ImageError naming the image for a manifest that
// is not JSON or whose target lacks whole tiles (and chips) or a numeric clock.
std::optional<ManifestTarget> manifest_target(const ElfImage& image);

// Checks the image's .ipu.manifest (if any) against the machine: its target tiles, clock and
// chips must be the configuration's. Throws ImageError with the reason.
void check_manifest(const ElfImage& image, const hw::MachineConfig& machine);

}  // namespace ipu::sdk

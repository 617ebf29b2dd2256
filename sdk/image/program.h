// An image as a machine loads it: each segment on its chip (p_flags) and tile (physical
// address), checked against the machine's configuration, and the manifest's target (an SDK
// image records the machine it was built for) compared with it.
#pragma once

#include "hw/machine/machine_config.h"
#include "hw/machine/platform.h"
#include "sdk/image/elf_reader.h"

namespace ipu::sdk {

// Throws ImageError naming the image, the segment and its file offset, or the manifest field,
// when the image does not fit the machine: a chip or tile it does not have, a segment outside
// the tile's SRAM window or overlapping another on its tile, an entry point outside SRAM, a
// corrupt manifest, or a manifest built for another configuration.
hw::LoadedProgram load_program(const ElfImage& image, const hw::MachineConfig& machine);

// Checks the image's .ipu.manifest (if any) against the machine: its target tiles, clock and
// chips must be the configuration's. Throws ImageError with the reason.
void check_manifest(const ElfImage& image, const hw::MachineConfig& machine);

}  // namespace ipu::sdk

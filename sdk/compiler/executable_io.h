// An executable saved in its image. The compiler writes what the runtime needs beyond the
// image's segments (where each tensor's pieces lie, the streams and the host transfers that move
// them, remote buffers, the programs, the compute sets and their vertices) as JSON into the
// image's .ipu.runtime section, which the image's checksum covers. read_executable() gives the
// executable back from a saved image, so that `ipu-sim run IMAGE --stream NAME=FILE` runs it
// as the program that built it did (docs/sdk.md).
#pragma once

#include <string>

#include "sdk/compiler/compiler.h"

namespace ipu::sdk {

inline constexpr const char* kRuntimeSection = ".ipu.runtime";

// The .ipu.runtime section's JSON for an executable.
std::string runtime_json(const Executable& executable);

bool has_runtime_section(const ElfImage& image);

// The executable a saved image holds, on `machine` (which check_manifest() has found to be the
// one it was built for). Throws ImageError naming the image and the field when the section is
// missing, is not valid JSON, or holds anything the runtime could not use safely: a piece
// outside its tensor or its tile's SRAM, a tile beyond the machine, a transfer naming an unknown
// stream or tensor or sizes that differ, a remote buffer beyond its gateway's memory.
Executable read_executable(const ElfImage& image, const hw::MachineConfig& machine);

}  // namespace ipu::sdk

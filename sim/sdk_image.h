// `ipu-sim run IMAGE` of an image the SDK compiler saved (it has a .ipu.runtime section): the
// SDK runtime loads it over PCIe and runs its programs as the host program that built it would,
// with each host stream's data read from, or written to, a file of a batch a run (--stream
// NAME=FILE), and tensors written before the first program and read after the last, or around a
// named program's runs (--write-tensor, --read-tensor NAME[@PROGRAM]=FILE).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "hw/machine/machine_config.h"
#include "sdk/image/elf_reader.h"
#include "sdk/runtime/device.h"

namespace ipu::sim {

struct SdkImageRun {
  std::vector<std::string> programs;  // --program NAME[:N], run in order (none: the only one)
  std::vector<std::string> streams;   // --stream NAME=FILE
  // --write-tensor NAME=FILE before the first program, --read-tensor NAME=FILE after the last.
  std::vector<std::string> write_tensors, read_tensors;
  sdk::DeviceOptions device;  // --stats, --trace, --report, --gdb, --threads, ...
  std::string image_path;     // the image's file: no output may be written over it
};

// Runs the image and returns the exit status ipu-sim gives: the programs' (0 when each came
// back to the host), a fault's, the cycle limit's or a deadlock's. Throws ImageError for an
// image whose runtime section is unusable and std::invalid_argument for bad --stream and
// --program options (naming the option, the stream and the file), and for an output file that
// is also the image, an input or another output; writes no output file unless every program
// ran to its end.
int run_sdk_image(const sdk::ElfImage& image, const hw::MachineConfig& machine,
                  const SdkImageRun& run, std::ostream& out);

// For `ipu-sim info`: an SDK image's programs, the file each stream takes, and the command that
// runs it on the machine it was built for (its manifest's preset, tiles and clock). Prints
// nothing for an image without a runtime section; throws ImageError for a corrupt one.
void print_run_hint(const sdk::ElfImage& image, std::ostream& out);

}  // namespace ipu::sim

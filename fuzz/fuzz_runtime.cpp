// libFuzzer target: the .ipu.runtime section of a saved SDK executable, as ipu-sim run reads it
// (sdk/compiler/executable_io.h). The input is the section's bytes in an image that gives a
// program to every tile of an M2000 of 4-tile chips but the last. read_executable must refuse
// it with an ImageError or give an executable the runtime can use; an accepted section must
// also read back the same after runtime_json() writes it again. Anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "hw/machine/machine_config.h"
#include "sdk/compiler/executable_io.h"
#include "sdk/image/elf_writer.h"

// SystemC's library (linked for the configuration checks) refers to sc_main; libFuzzer owns main.
extern "C" int sc_main(int, char**) { return 0; }

namespace {

using namespace ipu;

const hw::MachineConfig& machine() {
  static const hw::MachineConfig m = [] {
    hw::MachineConfig c = hw::machine_preset("m2000");
    c.chip.tiles = 4;
    return c;
  }();
  return m;
}

// Every tile but chip 3's last holds 64 bytes of program at the start of its SRAM.
sdk::ElfImage image_with_section(const uint8_t* data, size_t size) {
  sdk::ElfImage image;
  image.path = "<fuzz>";
  const uint32_t base = machine().chip.tile.sram_base;
  image.entry = base;
  unsigned index = 0;
  for (unsigned chip = 0; chip < machine().chips; ++chip)
    for (unsigned tile = 0; tile < machine().chip.tiles; ++tile) {
      if (chip == 3 && tile == 3) continue;
      sdk::ElfSegment s;
      s.index = index++;
      s.vaddr = base;
      s.paddr = sdk::tile_physical_address(tile, base);
      s.mem_size = 64;
      s.chip = chip;
      s.executable = true;
      s.data.assign(64, 0);
      image.segments.push_back(std::move(s));
    }
  image.sections[sdk::kRuntimeSection].assign(data, data + size);
  return image;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sdk::Executable exe;
  try {
    exe = sdk::read_executable(image_with_section(data, size), machine());
  } catch (const sdk::ImageError&) {
    return 0;
  }
  // What was accepted is written and read back unchanged.
  const std::string text = sdk::runtime_json(exe);
  const sdk::Executable again = sdk::read_executable(
      image_with_section(reinterpret_cast<const uint8_t*>(text.data()), text.size()), machine());
  if (sdk::runtime_json(again) != text) std::abort();
  return 0;
}

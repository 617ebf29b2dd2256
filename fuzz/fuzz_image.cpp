// libFuzzer target: an image file as ipu-sim reads it. The bytes go through the ELF reader
// (segments, symbols, sections, the checksum over everything that runs) and, when it accepts
// them, through the loader of the machine it names (the JSON manifest, tiles and chips against
// an M2000's). Any outcome but an ImageError / std::invalid_argument, or a clean load, is a
// finding: a crash, a sanitizer report, a hang or unbounded memory.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "hw/machine/machine_config.h"
#include "sdk/image/elf_reader.h"
#include "sdk/image/program.h"

// SystemC's library (linked for the configuration checks) refers to sc_main; libFuzzer owns main.
extern "C" int sc_main(int, char**) { return 0; }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ipu::hw::MachineConfig machine = ipu::hw::machine_preset("m2000");
  const std::vector<uint8_t> bytes(data, data + size);
  try {
    const ipu::sdk::ElfImage image = ipu::sdk::parse_elf("<fuzz>", bytes);
    (void)ipu::sdk::load_program(image, machine);
  } catch (const ipu::sdk::ImageError&) {
  } catch (const std::invalid_argument&) {
  }
  return 0;
}

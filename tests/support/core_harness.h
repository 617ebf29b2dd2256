// Runs the tile core without SystemC, so that many small programs can run in one test process.
#pragma once

#include <fmt/format.h>

#include <cstring>
#include <string>
#include <vector>

#include "iss/core.h"
#include "sdk/image/elf_reader.h"

namespace ipu::test {

struct CoreHarness {
  iss::TileConfig config;
  std::vector<uint8_t> sram;
  iss::Core core;
  std::vector<std::string> console;  // "c<context>: <line>"

  explicit CoreHarness(const iss::TileConfig& c = {})
      : config(c), sram(c.sram_bytes, 0), core(config, sram.data()) {
    core.set_console([this](unsigned context, std::string_view line) {
      console.push_back(fmt::format("c{}: {}", context, line));
    });
  }

  uint32_t base() const { return config.sram_base; }

  void write_bytes(uint32_t address, const void* data, size_t size) {
    std::memcpy(sram.data() + (address - config.sram_base), data, size);
    core.invalidate(address, static_cast<uint32_t>(size));
  }
  void write_word(uint32_t address, uint32_t value) { write_bytes(address, &value, 4); }
  uint32_t read_word(uint32_t address) const { return core.read_word(address); }

  // Places instruction words at the start of SRAM and resets the supervisor to run them.
  void load_words(const std::vector<uint32_t>& words) {
    write_bytes(base(), words.data(), words.size() * 4);
    core.reset(base());
  }

  void load_elf(const std::string& path) {
    const sdk::ElfImage image = sdk::read_elf(path);
    sdk::check_within_window(image, config.sram_base, config.sram_bytes);
    for (const sdk::ElfSegment& s : image.segments) {
      const std::vector<uint8_t> bytes = s.memory_image();
      write_bytes(s.paddr, bytes.data(), bytes.size());
    }
    const auto tohost = image.symbols.find("tohost");
    core.set_tohost(tohost == image.symbols.end() ? 0 : tohost->second);
    core.reset(image.entry);
  }

  iss::StopReason run(uint64_t max_cycles = 1'000'000'000) { return core.run(max_cycles); }

  iss::Context& supervisor() { return core.context(0); }
  uint32_t& x(unsigned r) { return core.context(0).x[r]; }
  uint32_t& f(unsigned r) { return core.context(0).f[r]; }
};

}  // namespace ipu::test

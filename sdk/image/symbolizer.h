// Where a tile pc is in the program's source: the function from the image's symbol table and,
// where the image carries DWARF line information (firmware built with -g), the file and line.
// Fault, stall and deadlock reports append it to the pc they name. The ELF is read with
// elfutils' libelf and libdw, not with a parser of our own.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "sdk/image/elf_reader.h"

namespace ipu::sdk {

class Symbolizer {
 public:
  // Reads the ELF file at `path`. An image without symbols or unreadable as ELF gives a
  // symbolizer that knows nothing (locate returns ""): reports then name the pc alone.
  explicit Symbolizer(const std::string& path);
  // From an image in memory (an SDK executable): its function symbols, and source lines when
  // it carries its firmware's DWARF (kDebugSection).
  explicit Symbolizer(const ElfImage& image);
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // "main at null_deref.c:9", "main" without line information for the pc, "" when no function
  // symbol covers it. Safe to call from several threads.
  std::string locate(uint32_t pc) const;
  // The name of the function covering pc ("" when none does).
  std::string function(uint32_t pc) const;
  // The data symbol (an object with a size) covering address: "out" or "out+8"; "" when none
  // does. Safe to call from several threads.
  std::string data(uint32_t address) const;

  size_t functions() const;  // function symbols read
  bool has_lines() const;    // the image has DWARF line information

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ipu::sdk

#include <zlib.h>

#include <cstring>

#include "elf_reader.h"

namespace ipu::sdk {

// CRC-32 (zlib) over the entry point, every loadable segment's addresses, sizes and data, and
// the manifest and runtime sections: everything that decides what runs and on what. Stored by
// write_elf in section .ipu.checksum.
uint32_t image_checksum(const ElfImage& image) {
  uLong crc = crc32(0L, Z_NULL, 0);
  auto add = [&crc](const void* p, size_t n) {
    crc = crc32(crc, static_cast<const Bytef*>(p), static_cast<uInt>(n));
  };
  add(&image.entry, 4);
  for (const ElfSegment& s : image.segments) {
    const uint32_t fields[4] = {s.vaddr, s.paddr, s.mem_size, static_cast<uint32_t>(s.data.size())};
    add(fields, sizeof fields);
    if (!s.data.empty()) add(s.data.data(), s.data.size());
    if (s.chip != 0) add(&s.chip, sizeof s.chip);  // one-chip images keep their checksums
  }
  for (const char* name : {".ipu.manifest", ".ipu.runtime"}) {
    const auto section = image.sections.find(name);
    if (section != image.sections.end() && !section->second.empty())
      add(section->second.data(), section->second.size());
  }
  return static_cast<uint32_t>(crc);
}

}  // namespace ipu::sdk

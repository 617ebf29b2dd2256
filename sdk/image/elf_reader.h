// Reads a firmware image: a 32-bit little-endian RISC-V ELF executable. Every check names the
// fault and the file offset it applies to, so a truncated or corrupt file is refused with a
// one-line reason, never a crash. Written here rather than with libelf so that each error can
// point at the exact header field or byte range that is wrong.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ipu::sdk {

class ImageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ElfSegment {
  unsigned index = 0;        // program header index
  uint32_t file_offset = 0;  // p_offset
  uint32_t vaddr = 0;
  uint32_t paddr = 0;
  uint32_t mem_size = 0;  // bytes past the file data are zero (.bss)
  unsigned chip = 0;      // the chip of a machine image (kChipFlagShift in p_flags)
  bool executable = false;
  std::vector<uint8_t> data;  // p_filesz bytes

  // The segment as it lies in memory: its file data followed by zeros up to mem_size.
  std::vector<uint8_t> memory_image() const {
    std::vector<uint8_t> bytes(data);
    bytes.resize(mem_size, 0);
    return bytes;
  }
};

// A machine image names each segment's chip in the OS-specific bits of p_flags (PF_MASKOS,
// 0x0ff00000: chips 0-255); one-chip images leave them 0.
inline constexpr unsigned kChipFlagShift = 20;
inline constexpr uint32_t kChipFlagMask = 0x0ff00000u;
inline constexpr unsigned kMaxImageChips = 256;

struct ElfImage {
  std::string path;
  uint32_t entry = 0;
  std::vector<ElfSegment> segments;         // PT_LOAD segments, in file order
  std::map<std::string, uint32_t> symbols;  // from .symtab, when present
  // The function symbols among them (STT_FUNC with a size): name -> bytes of code. Kept by
  // write_elf so that reports on a combined image still name functions.
  std::map<std::string, uint32_t> function_sizes;
  // The data objects among them (STT_OBJECT with a size): name -> bytes. Kept by write_elf so
  // that exchange errors on a combined image still name the globals they touch.
  std::map<std::string, uint32_t> object_sizes;
  // Non-loaded sections the tools read (".ipu.manifest"): written by write_elf, and read back
  // by read_elf for names starting with ".ipu", and the DWARF sections (".debug_info", ...).
  std::map<std::string, std::vector<uint8_t>> sections;
};

// The section of an SDK executable that holds its firmware ELF file as linked, DWARF included:
// Symbolizer reads source lines from it.
inline constexpr std::string_view kDebugSection = ".ipu.debug";

// CRC-32 of what an image loads (entry, segments); write_elf stores it in .ipu.checksum and
// parse_elf refuses an image whose stored checksum does not match.
uint32_t image_checksum(const ElfImage& image);

// Images larger than ELF32's 32-bit file offsets reach are refused before they are read, as is
// anything but a regular file. Every tile of a POD64 running a 12.9 KB program (the token ring
// with its console) is a 1.22 GB image.
inline constexpr uint64_t kMaxImageBytes = uint64_t{UINT32_MAX};
// Throws ImageError("PATH: <fault> at file offset 0x..").
ElfImage read_elf(const std::string& path);
ElfImage parse_elf(const std::string& name, const std::vector<uint8_t>& bytes);

// Throws ImageError when a segment or the entry point lies outside [base, base + bytes).
void check_within_window(const ElfImage& image, uint32_t base, uint32_t bytes);

}  // namespace ipu::sdk

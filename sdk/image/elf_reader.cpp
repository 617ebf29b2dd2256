#include "elf_reader.h"

#include <elf.h>
#include <fmt/format.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "base/input_file.h"

namespace ipu::sdk {
namespace {

class Reader {
 public:
  Reader(const std::string& name, const std::vector<uint8_t>& bytes) : name_(name), bytes_(bytes) {}

  [[noreturn]] void fail(uint64_t offset, const std::string& what) const {
    throw ImageError(fmt::format("{}: {} (file offset 0x{:x})", name_, what, offset));
  }

  // Copies a T from offset, failing with `what` if the file ends first.
  template <typename T>
  T get(uint64_t offset, const char* what) const {
    if (offset + sizeof(T) > bytes_.size())
      fail(offset, fmt::format("truncated: {} needs {} bytes but the file has {}", what,
                               offset + sizeof(T), bytes_.size()));
    T value;
    std::memcpy(&value, bytes_.data() + offset, sizeof(T));
    return value;
  }

  void need(uint64_t offset, uint64_t size, const std::string& what) const {
    if (offset + size > bytes_.size())
      fail(offset, fmt::format("truncated: {} spans 0x{:x}-0x{:x} but the file has 0x{:x} bytes",
                               what, offset, offset + size, bytes_.size()));
  }

  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  const std::string& name_;
  const std::vector<uint8_t>& bytes_;
};

void read_ipu_sections(const Reader& r, const Elf32_Ehdr& eh, ElfImage& image) {
  if (eh.e_shoff == 0 || eh.e_shnum == 0 || eh.e_shstrndx >= eh.e_shnum) return;
  const auto names = r.get<Elf32_Shdr>(eh.e_shoff + uint64_t{eh.e_shstrndx} * sizeof(Elf32_Shdr),
                                       "section header");
  r.need(names.sh_offset, names.sh_size, "the section name table");
  for (unsigned i = 0; i < eh.e_shnum; ++i) {
    const uint64_t at = eh.e_shoff + uint64_t{i} * sizeof(Elf32_Shdr);
    const auto sh = r.get<Elf32_Shdr>(at, "section header");
    if (sh.sh_type != SHT_PROGBITS || sh.sh_name >= names.sh_size) continue;
    const char* begin =
        reinterpret_cast<const char*>(r.bytes().data() + names.sh_offset + sh.sh_name);
    const std::string name(begin, strnlen(begin, names.sh_size - sh.sh_name));
    // The SDK's own sections, and the DWARF a replicated image carries for GDB and reports.
    if (name.rfind(".ipu", 0) != 0 && name.rfind(".debug", 0) != 0) continue;
    r.need(sh.sh_offset, sh.sh_size, fmt::format("section {}", name));
    image.sections[name].assign(r.bytes().begin() + sh.sh_offset,
                                r.bytes().begin() + sh.sh_offset + sh.sh_size);
  }
}

void read_symbols(const Reader& r, const Elf32_Ehdr& eh, ElfImage& image) {
  if (eh.e_shoff == 0 || eh.e_shnum == 0) return;
  if (eh.e_shentsize != sizeof(Elf32_Shdr))
    r.fail(offsetof(Elf32_Ehdr, e_shentsize), fmt::format("section header size is {}, expected {}",
                                                          eh.e_shentsize, sizeof(Elf32_Shdr)));
  r.need(eh.e_shoff, uint64_t{eh.e_shnum} * sizeof(Elf32_Shdr), "the section header table");
  for (unsigned i = 0; i < eh.e_shnum; ++i) {
    const uint64_t at = eh.e_shoff + uint64_t{i} * sizeof(Elf32_Shdr);
    const auto sh = r.get<Elf32_Shdr>(at, "section header");
    if (sh.sh_type != SHT_SYMTAB) continue;
    if (sh.sh_link >= eh.e_shnum)
      r.fail(at + offsetof(Elf32_Shdr, sh_link),
             fmt::format("symbol table {} links to missing section {}", i, sh.sh_link));
    const auto strtab = r.get<Elf32_Shdr>(eh.e_shoff + uint64_t{sh.sh_link} * sizeof(Elf32_Shdr),
                                          "string table header");
    r.need(sh.sh_offset, sh.sh_size, fmt::format("symbol table (section {})", i));
    r.need(strtab.sh_offset, strtab.sh_size, fmt::format("string table (section {})", sh.sh_link));
    for (uint64_t s = 0; s + sizeof(Elf32_Sym) <= sh.sh_size; s += sizeof(Elf32_Sym)) {
      const auto sym = r.get<Elf32_Sym>(sh.sh_offset + s, "symbol");
      // Nameless symbols, and undefined ones (a reference the linker left at address 0), say
      // nothing about where anything is.
      if (sym.st_name == 0 || sym.st_shndx == SHN_UNDEF) continue;
      if (sym.st_name >= strtab.sh_size)
        r.fail(sh.sh_offset + s,
               fmt::format("symbol name offset {} is past the string table", sym.st_name));
      const char* begin =
          reinterpret_cast<const char*>(r.bytes().data() + strtab.sh_offset + sym.st_name);
      const size_t max = strtab.sh_size - sym.st_name;
      const size_t len = strnlen(begin, max);
      if (len == max)
        r.fail(sh.sh_offset + s, "symbol name is not terminated inside the string table");
      image.symbols.emplace(std::string(begin, len), sym.st_value);
      if (ELF32_ST_TYPE(sym.st_info) == STT_FUNC && sym.st_size != 0)
        image.function_sizes.emplace(std::string(begin, len), sym.st_size);
      if (ELF32_ST_TYPE(sym.st_info) == STT_OBJECT && sym.st_size != 0)
        image.object_sizes.emplace(std::string(begin, len), sym.st_size);
    }
  }
}

}  // namespace

ElfImage parse_elf(const std::string& name, const std::vector<uint8_t>& bytes) {
  Reader r(name, bytes);
  if (bytes.empty()) r.fail(0, "empty file, expected an ELF image");
  if (bytes.size() < SELFMAG || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0)
    r.fail(0, "not an ELF file (no \\x7fELF magic)");
  if (bytes.size() < EI_NIDENT) r.fail(bytes.size(), "truncated inside the ELF identification");
  if (bytes[EI_CLASS] == ELFCLASS64)
    r.fail(EI_CLASS, "64-bit ELF; the tile runs RV32 (ELFCLASS32) images");
  if (bytes[EI_CLASS] != ELFCLASS32)
    r.fail(EI_CLASS, fmt::format("unknown ELF class {}", bytes[EI_CLASS]));
  if (bytes[EI_DATA] == ELFDATA2MSB) r.fail(EI_DATA, "big-endian ELF; the tile is little-endian");
  if (bytes[EI_DATA] != ELFDATA2LSB)
    r.fail(EI_DATA, fmt::format("unknown ELF data encoding {}", bytes[EI_DATA]));

  const auto eh = r.get<Elf32_Ehdr>(0, "the ELF header");
  if (eh.e_machine != EM_RISCV)
    r.fail(offsetof(Elf32_Ehdr, e_machine),
           fmt::format("machine is {}, not RISC-V ({})", eh.e_machine, EM_RISCV));
  if (eh.e_flags & 0x1)  // EF_RISCV_RVC
    r.fail(offsetof(Elf32_Ehdr, e_flags),
           "built for the compressed instruction set (ELF flag RVC); a tile runs RV32IMF without "
           "C (compile with -march=rv32imf)");
  if (eh.e_type != ET_EXEC)
    r.fail(offsetof(Elf32_Ehdr, e_type),
           fmt::format("ELF type {} is not an executable (ET_EXEC)", eh.e_type));
  if (eh.e_phnum == 0) r.fail(offsetof(Elf32_Ehdr, e_phnum), "no program headers: nothing to load");
  if (eh.e_phentsize != sizeof(Elf32_Phdr))
    r.fail(offsetof(Elf32_Ehdr, e_phentsize), fmt::format("program header size is {}, expected {}",
                                                          eh.e_phentsize, sizeof(Elf32_Phdr)));
  // Extended numbering: PN_XNUM in e_phnum, the count in section header 0's sh_info.
  uint64_t headers = eh.e_phnum;
  if (eh.e_phnum == PN_XNUM) {
    if (eh.e_shoff == 0)
      r.fail(offsetof(Elf32_Ehdr, e_phnum),
             "e_phnum is PN_XNUM (extended numbering) but there is no section header 0 to hold "
             "the count");
    headers = r.get<Elf32_Shdr>(eh.e_shoff, "section header 0 (the program header count)").sh_info;
    if (headers < PN_XNUM)
      r.fail(eh.e_shoff + offsetof(Elf32_Shdr, sh_info),
             fmt::format("section header 0 gives {} program headers under PN_XNUM, which is for "
                         "{} or more",
                         headers, PN_XNUM));
  }
  r.need(eh.e_phoff, headers * sizeof(Elf32_Phdr), "the program header table");

  ElfImage image;
  image.path = name;
  image.entry = eh.e_entry;
  for (unsigned i = 0; i < headers; ++i) {
    const uint64_t at = eh.e_phoff + uint64_t{i} * sizeof(Elf32_Phdr);
    const auto ph = r.get<Elf32_Phdr>(at, "program header");
    if (ph.p_type != PT_LOAD) continue;
    if (ph.p_filesz > ph.p_memsz)
      r.fail(at, fmt::format("segment {} has file size 0x{:x} larger than its memory size 0x{:x}",
                             i, ph.p_filesz, ph.p_memsz));
    r.need(ph.p_offset, ph.p_filesz, fmt::format("segment {} data", i));
    ElfSegment seg;
    seg.index = i;
    seg.file_offset = ph.p_offset;
    seg.vaddr = ph.p_vaddr;
    seg.paddr = ph.p_paddr;
    seg.mem_size = ph.p_memsz;
    seg.executable = (ph.p_flags & PF_X) != 0;
    seg.chip = (ph.p_flags & kChipFlagMask) >> kChipFlagShift;
    seg.data.assign(bytes.begin() + ph.p_offset, bytes.begin() + ph.p_offset + ph.p_filesz);
    image.segments.push_back(std::move(seg));
  }
  if (image.segments.empty()) r.fail(eh.e_phoff, "no PT_LOAD segment: nothing to load");
  read_symbols(r, eh, image);
  read_ipu_sections(r, eh, image);
  const auto stored = image.sections.find(".ipu.checksum");
  if (stored != image.sections.end()) {
    uint32_t expected = 0;
    if (stored->second.size() == 4) std::memcpy(&expected, stored->second.data(), 4);
    const uint32_t actual = image_checksum(image);
    if (stored->second.size() != 4 || expected != actual)
      throw ImageError(fmt::format(
          "{}: the image is corrupt: its checksum is 0x{:08x} but its contents give 0x{:08x}", name,
          expected, actual));
    image.sections.erase(stored);
  }
  return image;
}

ElfImage read_elf(const std::string& path) {
  std::vector<uint8_t> bytes;
  try {
    bytes = base::read_input_file(path, kMaxImageBytes, "tile image");
  } catch (const std::invalid_argument& e) {
    throw ImageError(e.what());
  }
  return parse_elf(path, bytes);
}

void check_within_window(const ElfImage& image, uint32_t base, uint32_t bytes) {
  const uint64_t end = uint64_t{base} + bytes;
  for (const ElfSegment& s : image.segments) {
    if (s.mem_size == 0) continue;
    if (s.paddr < base || uint64_t{s.paddr} + s.mem_size > end)
      throw ImageError(fmt::format(
          "{}: segment {} (file offset 0x{:x}) occupies 0x{:08x}-0x{:08x}, outside the tile's SRAM "
          "window 0x{:08x}-0x{:08x}",
          image.path, s.index, s.file_offset, s.paddr, uint64_t{s.paddr} + s.mem_size - 1, base,
          end - 1));
  }
  if (image.entry < base || image.entry >= end || (image.entry & 3))
    throw ImageError(fmt::format(
        "{}: entry point 0x{:08x} (ELF header, file offset 0x{:x}) is not a word-aligned address "
        "inside the tile's SRAM window 0x{:08x}-0x{:08x}",
        image.path, image.entry, offsetof(Elf32_Ehdr, e_entry), base, end - 1));
}

}  // namespace ipu::sdk

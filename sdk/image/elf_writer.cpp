#include "elf_writer.h"

#include <elf.h>
#include <fmt/format.h>

#include <cstring>
#include <fstream>

namespace ipu::sdk {
namespace {

template <typename T>
void put(std::vector<uint8_t>& out, size_t at, const T& value) {
  if (out.size() < at + sizeof(T)) out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &value, sizeof(T));
}

void align(std::vector<uint8_t>& out, size_t to) { out.resize((out.size() + to - 1) / to * to, 0); }

}  // namespace

void write_elf(const std::string& path, const ElfImage& image) {
  // e_phnum is 16 bits: from PN_XNUM segments up (a POD64 with every tile programmed has 94,208)
  // it says PN_XNUM, and section header 0's sh_info holds the count (ELF's extended numbering).
  const bool extended = image.segments.size() >= PN_XNUM;
  if (image.segments.size() > UINT32_MAX / sizeof(Elf32_Phdr))
    throw ImageError(fmt::format("{}: {} segments are more than an ELF file can list", path,
                                 image.segments.size()));
  std::vector<uint8_t> out(sizeof(Elf32_Ehdr) + image.segments.size() * sizeof(Elf32_Phdr), 0);
  // Segment data, 4-byte aligned.
  std::vector<Elf32_Phdr> headers;
  for (const ElfSegment& s : image.segments) {
    align(out, 4);
    Elf32_Phdr ph{};
    ph.p_type = PT_LOAD;
    ph.p_offset = static_cast<Elf32_Off>(out.size());
    ph.p_vaddr = s.vaddr;
    ph.p_paddr = s.paddr;
    ph.p_filesz = static_cast<Elf32_Word>(s.data.size());
    ph.p_memsz = s.mem_size;
    if (s.chip >= kMaxImageChips)
      throw ImageError(fmt::format("{}: segment {} is for chip {}; an image holds chips 0-{}", path,
                                   s.index, s.chip, kMaxImageChips - 1));
    ph.p_flags = PF_R | PF_W | (s.executable ? PF_X : 0) | (s.chip << kChipFlagShift);
    ph.p_align = 4;
    out.insert(out.end(), s.data.begin(), s.data.end());
    headers.push_back(ph);
  }
  // Sections: null, .symtab, .strtab, .shstrtab.
  std::string strtab(1, '\0'), shstrtab(1, '\0');
  std::vector<Elf32_Sym> symbols(1);  // the null symbol
  for (const auto& [name, value] : image.symbols) {
    Elf32_Sym sym{};
    sym.st_name = static_cast<Elf32_Word>(strtab.size());
    sym.st_value = value;
    const auto function = image.function_sizes.find(name);
    const auto object = image.object_sizes.find(name);
    const bool is_function = function != image.function_sizes.end();
    const bool is_object = !is_function && object != image.object_sizes.end();
    sym.st_info = ELF32_ST_INFO(STB_GLOBAL, is_function ? STT_FUNC
                                            : is_object ? STT_OBJECT
                                                        : STT_NOTYPE);
    sym.st_size = is_function ? function->second : is_object ? object->second : 0;
    sym.st_shndx = SHN_ABS;
    strtab += name + '\0';
    symbols.push_back(sym);
  }
  auto section_name = [&shstrtab](const char* name) {
    const auto at = static_cast<Elf32_Word>(shstrtab.size());
    shstrtab += std::string(name) + '\0';
    return at;
  };
  std::vector<Elf32_Shdr> sections(1);
  if (extended) sections[0].sh_info = static_cast<Elf32_Word>(image.segments.size());
  align(out, 4);
  Elf32_Shdr symtab{};
  symtab.sh_name = section_name(".symtab");
  symtab.sh_type = SHT_SYMTAB;
  symtab.sh_offset = static_cast<Elf32_Off>(out.size());
  symtab.sh_size = static_cast<Elf32_Word>(symbols.size() * sizeof(Elf32_Sym));
  symtab.sh_link = 2;
  symtab.sh_info = 1;  // index of the first non-local symbol
  symtab.sh_entsize = sizeof(Elf32_Sym);
  symtab.sh_addralign = 4;
  for (const Elf32_Sym& sym : symbols) put(out, out.size(), sym);
  sections.push_back(symtab);
  Elf32_Shdr str{};
  str.sh_name = section_name(".strtab");
  str.sh_type = SHT_STRTAB;
  str.sh_offset = static_cast<Elf32_Off>(out.size());
  str.sh_size = static_cast<Elf32_Word>(strtab.size());
  str.sh_addralign = 1;
  out.insert(out.end(), strtab.begin(), strtab.end());
  sections.push_back(str);
  std::map<std::string, std::vector<uint8_t>> extra_sections = image.sections;
  const uint32_t checksum = image_checksum(image);
  extra_sections[".ipu.checksum"].assign(reinterpret_cast<const uint8_t*>(&checksum),
                                         reinterpret_cast<const uint8_t*>(&checksum) + 4);
  for (const auto& [name, bytes] : extra_sections) {
    Elf32_Shdr extra{};
    extra.sh_name = section_name(name.c_str());
    extra.sh_type = SHT_PROGBITS;
    extra.sh_offset = static_cast<Elf32_Off>(out.size());
    extra.sh_size = static_cast<Elf32_Word>(bytes.size());
    extra.sh_addralign = 1;
    out.insert(out.end(), bytes.begin(), bytes.end());
    sections.push_back(extra);
  }
  Elf32_Shdr shstr{};
  shstr.sh_name = section_name(".shstrtab");
  shstr.sh_type = SHT_STRTAB;
  shstr.sh_offset = static_cast<Elf32_Off>(out.size());
  shstr.sh_size = static_cast<Elf32_Word>(shstrtab.size());
  shstr.sh_addralign = 1;
  out.insert(out.end(), shstrtab.begin(), shstrtab.end());
  sections.push_back(shstr);
  align(out, 4);
  const auto section_table = static_cast<Elf32_Off>(out.size());
  for (const Elf32_Shdr& sh : sections) put(out, out.size(), sh);

  Elf32_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS32;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_EXEC;
  eh.e_machine = EM_RISCV;
  eh.e_version = EV_CURRENT;
  eh.e_entry = image.entry;
  eh.e_phoff = sizeof(Elf32_Ehdr);
  eh.e_shoff = section_table;
  eh.e_flags = 0x2;  // EF_RISCV_FLOAT_ABI_SINGLE, as the toolchain marks ilp32f objects
  eh.e_ehsize = sizeof(Elf32_Ehdr);
  eh.e_phentsize = sizeof(Elf32_Phdr);
  eh.e_phnum = extended ? Elf32_Half{PN_XNUM} : static_cast<Elf32_Half>(headers.size());
  eh.e_shentsize = sizeof(Elf32_Shdr);
  eh.e_shnum = static_cast<Elf32_Half>(sections.size());
  eh.e_shstrndx = static_cast<Elf32_Half>(sections.size() - 1);
  put(out, 0, eh);
  for (size_t i = 0; i < headers.size(); ++i)
    put(out, sizeof(Elf32_Ehdr) + i * sizeof(Elf32_Phdr), headers[i]);

  std::ofstream file(path, std::ios::binary);
  file.write(reinterpret_cast<const char*>(out.data()), static_cast<std::streamsize>(out.size()));
  if (!file) throw ImageError(fmt::format("{}: cannot write the image", path));
}

ElfImage replicate(const ElfImage& source, const std::vector<unsigned>& tiles, unsigned chips,
                   const std::string& path) {
  ElfImage image;
  image.path = path;
  image.entry = source.entry;
  image.symbols = source.symbols;
  image.function_sizes = source.function_sizes;
  image.object_sizes = source.object_sizes;
  for (const auto& [name, bytes] : source.sections)
    if (name.rfind(".debug", 0) == 0) image.sections[name] = bytes;
  for (const ElfSegment& s : source.segments)
    if (s.mem_size != 0 && (tile_of(s.paddr) != 0 || s.chip != 0))
      throw ImageError(fmt::format(
          "{}: segment {} is already for chip {} tile {}: replicate takes one-tile programs",
          source.path, s.index, s.chip, tile_of(s.paddr)));
  image.segments.reserve(source.segments.size() * tiles.size() * chips);
  for (unsigned chip = 0; chip < chips; ++chip)
    for (unsigned t : tiles)
      for (const ElfSegment& s : source.segments) {
        if (s.mem_size == 0) continue;
        ElfSegment copy = s;
        copy.index = static_cast<unsigned>(image.segments.size());
        copy.paddr = tile_physical_address(t, s.paddr);
        copy.chip = chip;
        image.segments.push_back(std::move(copy));
      }
  return image;
}

std::map<unsigned, std::vector<TileSegment>> split_by_tile(const ElfImage& image, uint32_t base,
                                                           uint32_t bytes, unsigned tiles) {
  std::map<unsigned, std::vector<TileSegment>> out;
  for (const ElfSegment& s : image.segments) {
    if (s.mem_size == 0) continue;
    const unsigned tile = tile_of(s.paddr);
    const uint32_t address = address_in_tile(s.paddr);
    if (tile >= tiles)
      throw ImageError(fmt::format(
          "{}: segment {} (file offset 0x{:x}) is for tile {}, but the chip has {} tiles",
          image.path, s.index, s.file_offset, tile, tiles));
    if (address < base || uint64_t{address} + s.mem_size > uint64_t{base} + bytes)
      throw ImageError(
          fmt::format("{}: segment {} (file offset 0x{:x}) occupies 0x{:08x}-0x{:08x} of tile {}, "
                      "outside the tile's SRAM "
                      "window 0x{:08x}-0x{:08x}",
                      image.path, s.index, s.file_offset, address,
                      uint64_t{address} + s.mem_size - 1, tile, base, uint64_t{base} + bytes - 1));
    out[tile].push_back({address, s.memory_image()});
  }
  if (image.entry < base || image.entry >= uint64_t{base} + bytes || (image.entry & 3))
    throw ImageError(
        fmt::format("{}: entry point 0x{:08x} (ELF header, file offset 0x18) is not a word-aligned "
                    "address inside the tile's SRAM window",
                    image.path, image.entry));
  if (out.empty()) throw ImageError(fmt::format("{}: no segment to load on any tile", image.path));
  return out;
}

}  // namespace ipu::sdk

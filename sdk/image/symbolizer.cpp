#include "symbolizer.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <string_view>
#include <vector>

namespace ipu::sdk {

struct Symbolizer::Impl {
  struct Function {
    uint32_t begin = 0, end = 0;  // [begin, end)
    std::string name;
  };
  int fd = -1;
  Elf* elf = nullptr;
  Dwarf* dwarf = nullptr;                           // nullptr: no DWARF in the image
  std::vector<Function> functions;                  // sorted by begin
  std::vector<Function> objects;                    // data symbols, sorted by begin
  std::vector<std::pair<uint64_t, uint64_t>> code;  // executable segments: [begin, end)
  std::mutex mutex;                  // libdw builds its line tables lazily: one lookup at a time
  std::vector<uint8_t> debug_bytes;  // an in-memory ELF for `elf` (kDebugSection)

  explicit Impl(const ElfImage& image) {
    for (const ElfSegment& s : image.segments)
      if (s.executable) code.emplace_back(s.vaddr, uint64_t{s.vaddr} + s.mem_size);
    for (const auto& [name, size] : image.function_sizes) {
      const auto at = image.symbols.find(name);
      // As in an ELF file: only functions whose code the image holds (picolibc has absolute
      // function symbols at address 0).
      if (at == image.symbols.end() || !in_code(at->second) ||
          uint64_t{at->second} + size > (uint64_t{1} << 32))
        continue;
      functions.push_back({at->second, at->second + size, name});
    }
    for (const auto& [name, size] : image.object_sizes) {
      const auto at = image.symbols.find(name);
      if (at != image.symbols.end() && uint64_t{at->second} + size <= (uint64_t{1} << 32))
        objects.push_back({at->second, at->second + size, name});
    }
    sort_functions();
    // Source lines from the firmware ELF the SDK keeps in the executable (functions stay those
    // of the image: they are the same code at the same addresses).
    const auto debug = image.sections.find(std::string(kDebugSection));
    if (debug == image.sections.end() || debug->second.empty() ||
        elf_version(EV_CURRENT) == EV_NONE)
      return;
    debug_bytes = debug->second;
    elf = elf_memory(reinterpret_cast<char*>(debug_bytes.data()), debug_bytes.size());
    if (elf == nullptr || elf_kind(elf) != ELF_K_ELF) return;
    dwarf = dwarf_begin_elf(elf, DWARF_C_READ, nullptr);
  }

  explicit Impl(const std::string& path) {
    if (elf_version(EV_CURRENT) == EV_NONE) return;
    fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    elf = elf_begin(fd, ELF_C_READ, nullptr);
    if (elf == nullptr || elf_kind(elf) != ELF_K_ELF) return;
    read_symbols();
    dwarf = dwarf_begin_elf(elf, DWARF_C_READ, nullptr);
  }
  ~Impl() {
    if (dwarf != nullptr) dwarf_end(dwarf);
    if (elf != nullptr) elf_end(elf);
    if (fd >= 0) close(fd);
  }

  bool in_code(uint64_t address) const {
    for (const auto& [begin, end] : code)
      if (address >= begin && address < end) return true;
    return false;
  }

  // The symbol table's functions and data objects.
  void read_symbols() {
    size_t segments = 0;
    if (elf_getphdrnum(elf, &segments) == 0) {
      for (size_t i = 0; i < segments; ++i) {
        GElf_Phdr header;
        if (gelf_getphdr(elf, static_cast<int>(i), &header) != nullptr &&
            header.p_type == PT_LOAD && (header.p_flags & PF_X))
          code.emplace_back(header.p_vaddr, header.p_vaddr + header.p_memsz);
      }
    }
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
      GElf_Shdr header;
      if (gelf_getshdr(scn, &header) == nullptr || header.sh_type != SHT_SYMTAB ||
          header.sh_entsize == 0)
        continue;
      Elf_Data* data = elf_getdata(scn, nullptr);
      if (data == nullptr) continue;
      const size_t count = header.sh_size / header.sh_entsize;
      for (size_t i = 0; i < count; ++i) {
        GElf_Sym sym;
        if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) break;
        const int type = GELF_ST_TYPE(sym.st_info);
        // Functions with code in the image: defined, and (for an absolute symbol, as a
        // combined image holds) inside an executable segment. Objects: defined, with a size.
        const bool function =
            type == STT_FUNC && !(sym.st_shndx == SHN_ABS && !in_code(sym.st_value));
        if ((!function && type != STT_OBJECT) || sym.st_size == 0 || sym.st_shndx == SHN_UNDEF)
          continue;
        const char* name = elf_strptr(elf, header.sh_link, sym.st_name);
        if (name == nullptr || *name == '\0') continue;
        const uint64_t end = sym.st_value + sym.st_size;
        if (end > (uint64_t{1} << 32)) continue;
        (function ? functions : objects)
            .push_back({static_cast<uint32_t>(sym.st_value), static_cast<uint32_t>(end), name});
      }
    }
    sort_functions();
  }

  // By address; aliases of one address in a fixed order, so that every build names a pc alike
  // (std::sort alone left them in an order that differed between -O1 and -O2 builds). The last
  // of them is the one reports use: the public name (vfprintf, not picolibc's __d_vfprintf).
  void sort_functions() {
    const auto underscores = [](const std::string& n) { return n.find_first_not_of('_'); };
    for (auto* symbols : {&functions, &objects})
      std::sort(symbols->begin(), symbols->end(), [&](const Function& a, const Function& b) {
        if (a.begin != b.begin) return a.begin < b.begin;
        if (underscores(a.name) != underscores(b.name))
          return underscores(a.name) > underscores(b.name);
        return a.name > b.name;
      });
  }

  // The symbol of `symbols` (sorted) covering address, or nullptr.
  static const Function* covering(const std::vector<Function>& symbols, uint32_t address) {
    auto it = std::upper_bound(symbols.begin(), symbols.end(), address,
                               [](uint32_t a, const Function& f) { return a < f.begin; });
    if (it == symbols.begin()) return nullptr;
    --it;  // the last symbol starting at or below address
    return address < it->end ? &*it : nullptr;
  }
  const Function* function_at(uint32_t pc) const { return covering(functions, pc); }

  // "null_deref.c:9", or "" when no line table has a row for pc.
  std::string line_at(uint32_t pc) {
    if (dwarf == nullptr) return {};
    Dwarf_Die cu;
    if (dwarf_addrdie(dwarf, pc, &cu) != nullptr) {
      std::string line = line_in(cu, pc);
      if (!line.empty()) return line;
    }
    // Without usable .debug_aranges (libdw 0.188 rejects some of the RISC-V toolchain's DWARF 5
    // output), the compilation units whose address ranges hold pc, in order.
    Dwarf_Off offset = 0, next = 0;
    size_t header_size = 0;
    while (dwarf_nextcu(dwarf, offset, &next, &header_size, nullptr, nullptr, nullptr) == 0) {
      if (dwarf_offdie(dwarf, offset + header_size, &cu) != nullptr && dwarf_haspc(&cu, pc) == 1) {
        std::string line = line_in(cu, pc);
        if (!line.empty()) return line;
      }
      offset = next;
    }
    return {};
  }

  static std::string_view base_name(const char* path) {
    std::string_view name(path);
    if (const size_t slash = name.rfind('/'); slash != std::string_view::npos)
      name.remove_prefix(slash + 1);
    return name;
  }

  // "token_ring.c:22", or, when pc is in code inlined into the function (the runtime's
  // ipu_send, ...), the line of the outermost call in the function itself with the inlined
  // function after it: "token_ring.c:22 via ipu_receive_into at ipu_xipu.h:67", so that
  // reports point at the caller's own line.
  static std::string line_in(Dwarf_Die& cu, uint32_t pc) {
    Dwarf_Line* line = dwarf_getsrc_die(&cu, pc);
    if (line == nullptr) return {};
    int number = 0;
    const char* file = dwarf_linesrc(line, nullptr, nullptr);
    if (file == nullptr || dwarf_lineno(line, &number) != 0) return {};
    const std::string here = fmt::format("{}:{}", base_name(file), number);
    // The scopes holding pc, innermost first. Past an inlined subroutine they continue in its
    // abstract definition, so its callers in the function's own (concrete) tree come from
    // dwarf_getscopes_die: the last inlined subroutine there was called from the function.
    Dwarf_Die* scopes = nullptr;
    const int n = dwarf_getscopes(&cu, pc, &scopes);
    const Dwarf_Die* innermost = nullptr;
    for (int i = 0; i < n && innermost == nullptr; ++i)
      if (dwarf_tag(&scopes[i]) == DW_TAG_inlined_subroutine) innermost = &scopes[i];
    Dwarf_Die* chain = nullptr;
    const Dwarf_Die* outermost = nullptr;
    if (innermost != nullptr) {
      Dwarf_Die die = *innermost;
      const int m = dwarf_getscopes_die(&die, &chain);
      for (int i = 0; i < m; ++i)
        if (dwarf_tag(&chain[i]) == DW_TAG_inlined_subroutine) outermost = &chain[i];
    }
    std::string result = here;
    if (outermost != nullptr) {
      Dwarf_Attribute attr;
      Dwarf_Word call_file = 0, call_line = 0;
      Dwarf_Files* files = nullptr;
      size_t file_count = 0;
      Dwarf_Die inlined = *innermost, origin = *outermost;
      const char* called = dwarf_formstring(dwarf_attr_integrate(&inlined, DW_AT_name, &attr));
      if (dwarf_formudata(dwarf_attr(&origin, DW_AT_call_file, &attr), &call_file) == 0 &&
          dwarf_formudata(dwarf_attr(&origin, DW_AT_call_line, &attr), &call_line) == 0 &&
          dwarf_getsrcfiles(&cu, &files, &file_count) == 0 && call_file < file_count) {
        const char* caller = dwarf_filesrc(files, call_file, nullptr, nullptr);
        if (caller != nullptr)
          result = fmt::format("{}:{} via {} at {}", base_name(caller), call_line,
                               called != nullptr ? called : "code", here);
      }
    }
    free(scopes);
    free(chain);
    return result;
  }
};

Symbolizer::Symbolizer(const std::string& path) : impl_(std::make_unique<Impl>(path)) {}
Symbolizer::Symbolizer(const ElfImage& image) : impl_(std::make_unique<Impl>(image)) {}
Symbolizer::~Symbolizer() = default;

std::string Symbolizer::locate(uint32_t pc) const {
  const Impl::Function* f = impl_->function_at(pc);
  if (f == nullptr) return {};
  std::lock_guard<std::mutex> lock(impl_->mutex);
  const std::string line = impl_->line_at(pc);
  return line.empty() ? f->name : fmt::format("{} at {}", f->name, line);
}

std::string Symbolizer::function(uint32_t pc) const {
  const Impl::Function* f = impl_->function_at(pc);
  return f == nullptr ? std::string() : f->name;
}

std::string Symbolizer::data(uint32_t address) const {
  const Impl::Function* o = Impl::covering(impl_->objects, address);
  if (o == nullptr) return {};
  return address == o->begin ? o->name : fmt::format("{}+{}", o->name, address - o->begin);
}

size_t Symbolizer::functions() const { return impl_->functions.size(); }
bool Symbolizer::has_lines() const { return impl_->dwarf != nullptr; }

}  // namespace ipu::sdk

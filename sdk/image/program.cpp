#include "program.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "sdk/image/elf_writer.h"

namespace ipu::sdk {

std::optional<ManifestTarget> manifest_target(const ElfImage& image) {
  const auto section = image.sections.find(".ipu.manifest");
  if (section == image.sections.end()) return std::nullopt;
  const nlohmann::json manifest =
      nlohmann::json::parse(section->second.begin(), section->second.end(), nullptr, false);
  if (manifest.is_discarded())
    throw ImageError(fmt::format("{}: the .ipu.manifest section is not valid JSON", image.path));
  const auto target = manifest.find("target");
  if (target == manifest.end() || !target->is_object() || !target->contains("tiles") ||
      !target->contains("clock_hz") || !(*target)["tiles"].is_number_unsigned() ||
      !(*target)["clock_hz"].is_number() ||
      (target->contains("chips") && !(*target)["chips"].is_number_unsigned()))
    throw ImageError(fmt::format(
        "{}: the .ipu.manifest section is corrupt: 'target' needs whole 'tiles' (and 'chips') "
        "and a numeric 'clock_hz'",
        image.path));
  ManifestTarget t;
  const auto preset = target->find("preset");
  if (preset != target->end() && preset->is_string()) t.preset = preset->get<std::string>();
  if (target->contains("chips")) t.chips = (*target)["chips"].get<uint64_t>();
  t.tiles = (*target)["tiles"].get<uint64_t>();
  t.clock_hz = (*target)["clock_hz"].get<double>();
  return t;
}

void check_manifest(const ElfImage& image, const hw::MachineConfig& machine) {
  const std::optional<ManifestTarget> t = manifest_target(image);
  if (!t) return;
  if (t->tiles != machine.chip.tiles || t->clock_hz != machine.chip.tile.clock_hz ||
      t->chips != machine.chips)
    throw ImageError(fmt::format(
        "{}: built for {} chip{} of {} tiles at {} Hz, but the configuration is {} chip{} of {} "
        "tiles at {} Hz",
        image.path, t->chips, t->chips == 1 ? "" : "s", t->tiles, t->clock_hz, machine.chips,
        machine.chips == 1 ? "" : "s", machine.chip.tiles, machine.chip.tile.clock_hz));
}

namespace {

// Of a segment at [begin, end) of its tile, the leading bytes that are code: none of a segment
// that is not executable; of one that is, those below the runtime's __text_end (firmware/tile.ld
// puts .text first), or all of it in an image without that symbol.
uint32_t code_bytes(const ElfImage& image, uint32_t begin, uint32_t end, const ElfSegment& s) {
  if (!s.executable) return 0;
  const auto text_end = image.symbols.find("__text_end");
  if (text_end == image.symbols.end()) return end - begin;
  return text_end->second <= begin ? 0 : std::min(text_end->second, end) - begin;
}

}  // namespace

hw::LoadedProgram load_program(const ElfImage& image, const hw::MachineConfig& machine) {
  check_manifest(image, machine);
  const iss::TileConfig& t = machine.chip.tile;
  const uint32_t base = t.sram_base, bytes = t.sram_bytes;
  hw::LoadedProgram program;
  struct Placed {
    uint32_t begin, end;
    const ElfSegment* segment;
  };
  std::map<unsigned, std::vector<Placed>> placed;
  for (const ElfSegment& s : image.segments) {
    if (s.mem_size == 0) continue;
    const unsigned tile = tile_of(s.paddr);
    const uint32_t address = address_in_tile(s.paddr);
    if (s.chip >= machine.chips)
      throw ImageError(fmt::format(
          "{}: segment {} (file offset 0x{:x}) is for chip {}, but the machine has {} chip{} "
          "(machine.chips; a preset such as m2000 or pod16 sets it)",
          image.path, s.index, s.file_offset, s.chip, machine.chips,
          machine.chips == 1 ? "" : "s"));
    if (tile >= machine.chip.tiles)
      throw ImageError(fmt::format(
          "{}: segment {} (file offset 0x{:x}) is for tile {}, but the chip has {} tiles",
          image.path, s.index, s.file_offset, tile, machine.chip.tiles));
    if (address < base || uint64_t{address} + s.mem_size > uint64_t{base} + bytes)
      throw ImageError(fmt::format(
          "{}: segment {} (file offset 0x{:x}) occupies 0x{:08x}-0x{:08x} of tile {}, outside "
          "the tile's SRAM window 0x{:08x}-0x{:08x}",
          image.path, s.index, s.file_offset, address, uint64_t{address} + s.mem_size - 1, tile,
          base, uint64_t{base} + bytes - 1));
    const unsigned machine_tile = s.chip * machine.chip.tiles + tile;
    placed[machine_tile].push_back({address, address + s.mem_size, &s});
  }
  // Segments of one tile may not overlap: each byte of a tile's SRAM comes from one segment, so
  // the bytes loaded are bounded by the machine's memory.
  for (auto& [machine_tile, segments] : placed) {
    std::sort(segments.begin(), segments.end(),
              [](const Placed& a, const Placed& b) { return a.begin < b.begin; });
    for (size_t i = 1; i < segments.size(); ++i)
      if (segments[i].begin < segments[i - 1].end)
        throw ImageError(fmt::format(
            "{}: segments {} and {} (file offsets 0x{:x} and 0x{:x}) overlap at 0x{:08x} on {}",
            image.path, segments[i - 1].segment->index, segments[i].segment->index,
            segments[i - 1].segment->file_offset, segments[i].segment->file_offset,
            segments[i].begin, hw::tile_name(machine_tile, machine.chip.tiles, machine.chips)));
    auto& out = program.tiles[machine_tile];
    for (const Placed& p : segments)
      out.push_back({p.begin, p.segment->data, p.end - p.begin,
                     code_bytes(image, p.begin, p.end, *p.segment)});
  }
  if (image.entry < base || image.entry >= uint64_t{base} + bytes || (image.entry & 3))
    throw ImageError(
        fmt::format("{}: entry point 0x{:08x} (ELF header, file offset 0x18) is not a word-aligned "
                    "address inside the tile's SRAM window",
                    image.path, image.entry));
  if (program.tiles.empty())
    throw ImageError(fmt::format("{}: no segment to load on any tile", image.path));
  program.entry = image.entry;
  const auto tohost = image.symbols.find("tohost");
  program.tohost = tohost != image.symbols.end() ? tohost->second : 0;
  // The runtime's linker script (firmware/tile.ld) keeps the stacks between the heap's end and
  // the top of SRAM.
  const auto heap_end = image.symbols.find("__heap_end");
  const auto stack_top = image.symbols.find("__supervisor_stack_top");
  if (heap_end != image.symbols.end() && stack_top != image.symbols.end() &&
      heap_end->second <= stack_top->second && stack_top->second <= uint64_t{base} + bytes &&
      heap_end->second >= base)
    program.stack_bytes = stack_top->second - heap_end->second;
  return program;
}

}  // namespace ipu::sdk

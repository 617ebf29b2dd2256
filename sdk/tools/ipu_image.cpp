// ipu-image: builds multi-tile firmware images.
//
//   ipu-image replicate IN.elf --tiles N [--first T] [--chips C] -o OUT.elf
//   ipu-image replicate IN.elf --at T1,T2,... [--chips C] -o OUT.elf
//       the same program on tiles T .. T+N-1, or on the listed tiles (an SPMD image), of each of
//       chips 0 .. C-1 (1 by default): each PT_LOAD segment of IN is copied once per tile with
//       the tile number in its physical address and the chip in its flags (docs/chip.md,
//       docs/machine.md).
//   ipu-image info IMAGE
//       the chips and tiles an image loads and the bytes on each.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "sdk/image/elf_writer.h"
#include "sdk/tools/parse_count.h"
#include "sdk/tools/standard_streams.h"

namespace {

// The largest tile number a physical address can carry (above bit kTileAddressBits).
constexpr unsigned kMaxTile = (1u << (32 - ipu::sdk::kTileAddressBits)) - 1;

constexpr const char* kUsage =
    "usage: ipu-image replicate IN.elf (--tiles N [--first T] | --at T1,T2,...) [--chips C] "
    "-o OUT.elf\n"
    "       ipu-image info IMAGE\n";

int usage() {
  fmt::print(stderr, "{}", kUsage);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  ipu::sdk::open_closed_standard_streams();
  using namespace ipu::sdk;
  if (argc == 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    fmt::print("{}", kUsage);
    fmt::print(
        "\nreplicate: an SPMD image, IN.elf's segments on N tiles from T (or the listed tiles), "
        "on each of C chips\ninfo: what an image holds, chip by chip and tile by tile\n");
    return 0;
  }
  if (argc < 3) return usage();
  const std::string command = argv[1];
  try {
    if (command == "info") {
      const ElfImage image = read_elf(argv[2]);
      std::map<std::pair<unsigned, unsigned>, uint64_t> bytes;  // (chip, tile) -> bytes
      for (const ElfSegment& s : image.segments) bytes[{s.chip, tile_of(s.paddr)}] += s.mem_size;
      fmt::print("{}: entry 0x{:08x}, {} segments on {} tiles\n", image.path, image.entry,
                 image.segments.size(), bytes.size());
      for (const auto& [where, n] : bytes)
        fmt::print("  chip {:3} tile {:4}: {} bytes\n", where.first, where.second, n);
      return 0;
    }
    if (command != "replicate") return usage();
    std::string in = argv[2], out;
    unsigned tiles = 0, first = 0, chips = 1;
    std::vector<unsigned> at;
    for (int i = 3; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--at" && i + 1 < argc) {
        const std::string list = argv[++i];
        for (size_t pos = 0; pos < list.size();) {
          const size_t comma = list.find(',', pos);
          at.push_back(static_cast<unsigned>(
              parse_count("--at", list.substr(pos, comma - pos), 0, kMaxTile)));
          pos = comma == std::string::npos ? list.size() : comma + 1;
        }
      } else if (a == "--tiles" && i + 1 < argc) {
        tiles = static_cast<unsigned>(parse_count("--tiles", argv[++i], 1, kMaxTile + 1));
      } else if (a == "--first" && i + 1 < argc) {
        first = static_cast<unsigned>(parse_count("--first", argv[++i], 0, kMaxTile));
      } else if (a == "--chips" && i + 1 < argc) {
        chips = static_cast<unsigned>(parse_count("--chips", argv[++i], 1, kMaxImageChips));
      } else if (a == "-o" && i + 1 < argc) {
        out = argv[++i];
      } else {
        return usage();
      }
    }
    if ((tiles == 0) == at.empty() || out.empty()) return usage();
    if (uint64_t{first} + tiles > kMaxTile + 1)
      throw std::invalid_argument(
          fmt::format("tiles {} to {} do not fit the image's tile numbering (0 to {})", first,
                      uint64_t{first} + tiles - 1, kMaxTile));
    for (unsigned t = first; t < first + tiles; ++t) at.push_back(t);
    const ElfImage source = read_elf(in);
    std::vector<unsigned> sorted(at);
    std::sort(sorted.begin(), sorted.end());
    const auto twice = std::adjacent_find(sorted.begin(), sorted.end());
    if (twice != sorted.end())
      throw std::invalid_argument(fmt::format("--at: tile {} is listed twice", *twice));
    const ElfImage image = replicate(source, at, chips, out);
    write_elf(out, image);
    return 0;
  } catch (const std::invalid_argument& e) {  // a bad option value
    fmt::print(stderr, "ipu-image: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "ipu-image: {}\n", e.what());
    return 3;
  }
}

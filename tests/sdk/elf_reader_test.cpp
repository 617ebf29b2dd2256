// Firmware images the loader must refuse, each with a one-line reason naming the file offset.
#include "sdk/image/elf_reader.h"

#include <elf.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "sdk/image/elf_writer.h"

namespace ipu::test {
namespace {

using sdk::ImageError;
using ::testing::HasSubstr;

constexpr uint32_t kBase = 0x4c000, kSize = 624 * 1024;

std::vector<uint8_t> demo_bytes() {
  std::ifstream in(IPU_DEMO_ELF, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string refusal(const std::vector<uint8_t>& bytes) {
  try {
    const sdk::ElfImage image = sdk::parse_elf("image.elf", bytes);
    sdk::check_within_window(image, kBase, kSize);
  } catch (const ImageError& e) {
    return e.what();
  }
  return "";
}

template <typename T>
void put(std::vector<uint8_t>& bytes, size_t offset, T value) {
  std::memcpy(bytes.data() + offset, &value, sizeof value);
}

// File offset of the first PT_LOAD program header.
size_t first_load_header(const std::vector<uint8_t>& bytes) {
  Elf32_Ehdr h;
  std::memcpy(&h, bytes.data(), sizeof h);
  const sdk::ElfImage image = sdk::parse_elf("x", bytes);
  return h.e_phoff + image.segments.front().index * sizeof(Elf32_Phdr);
}

TEST(ElfReader, ReadsTheDemoImage) {
  const sdk::ElfImage image = sdk::read_elf(IPU_DEMO_ELF);
  EXPECT_GE(image.entry, kBase);
  EXPECT_FALSE(image.segments.empty());
  EXPECT_EQ(image.symbols.count("main"), 1u);
  EXPECT_NO_THROW(sdk::check_within_window(image, kBase, kSize));
}

TEST(ElfReader, MissingFile) {
  try {
    sdk::read_elf("/nonexistent/firmware.elf");
    FAIL();
  } catch (const ImageError& e) {
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/firmware.elf: cannot open: No such file"));
  }
}

TEST(ElfReader, EmptyFile) { EXPECT_THAT(refusal({}), HasSubstr("empty file")); }

TEST(ElfReader, NotAnElfFile) {
  const std::vector<uint8_t> text = {'#', '!', '/', 'b', 'i', 'n', '/', 's', 'h', '\n'};
  EXPECT_THAT(refusal(text), HasSubstr("not an ELF file (no \\x7fELF magic) (file offset 0x0)"));
}

TEST(ElfReader, SixtyFourBit) {
  auto bytes = demo_bytes();
  bytes[EI_CLASS] = ELFCLASS64;
  EXPECT_THAT(refusal(bytes),
              HasSubstr("64-bit ELF; the tile runs RV32 (ELFCLASS32) images (file offset 0x4)"));
}

TEST(ElfReader, BigEndian) {
  auto bytes = demo_bytes();
  bytes[EI_DATA] = ELFDATA2MSB;
  EXPECT_THAT(refusal(bytes),
              HasSubstr("big-endian ELF; the tile is little-endian (file offset 0x5)"));
}

TEST(ElfReader, NotRiscV) {
  auto bytes = demo_bytes();
  put<uint16_t>(bytes, offsetof(Elf32_Ehdr, e_machine), EM_ARM);
  EXPECT_THAT(refusal(bytes), HasSubstr("machine is 40, not RISC-V (243) (file offset 0x12)"));
}

TEST(ElfReader, CompressedInstructionSet) {
  auto bytes = demo_bytes();
  uint32_t flags = 0;
  std::memcpy(&flags, bytes.data() + offsetof(Elf32_Ehdr, e_flags), 4);
  put<uint32_t>(bytes, offsetof(Elf32_Ehdr, e_flags), flags | 0x1);  // EF_RISCV_RVC
  EXPECT_THAT(refusal(bytes), HasSubstr("built for the compressed instruction set (ELF flag RVC); "
                                        "a tile runs RV32IMF without C"));
  EXPECT_THAT(refusal(bytes), HasSubstr("(file offset 0x24)"));
}

TEST(ElfReader, NotARegularFileOrTooLarge) {
  EXPECT_THAT([] { sdk::read_elf("/dev/zero"); },
              ::testing::ThrowsMessage<ImageError>(
                  HasSubstr("/dev/zero: not a regular file (a tile image must be one)")));
  EXPECT_THAT([] { sdk::read_elf("/tmp"); },
              ::testing::ThrowsMessage<ImageError>(HasSubstr("/tmp: not a regular file")));
  // Past what ELF32's 32-bit offsets reach: refused by its size, before a byte is read (a sparse
  // file takes no disk).
  const std::string huge = ::testing::TempDir() + "/huge.elf";
  { std::ofstream(huge, std::ios::binary).put('\x7f'); }
  ASSERT_EQ(truncate(huge.c_str(), static_cast<off_t>(sdk::kMaxImageBytes) + 1), 0);
  EXPECT_THAT([&] { sdk::read_elf(huge); },
              ::testing::ThrowsMessage<ImageError>(HasSubstr("4294967296 bytes, more than a tile "
                                                             "image may have (4294967295 bytes)")));
  std::remove(huge.c_str());
}

TEST(ElfReader, NotAnExecutable) {
  auto bytes = demo_bytes();
  put<uint16_t>(bytes, offsetof(Elf32_Ehdr, e_type), ET_REL);
  EXPECT_THAT(refusal(bytes), HasSubstr("ELF type 1 is not an executable"));
}

TEST(ElfReader, TruncatedInsideSegmentData) {
  auto bytes = demo_bytes();
  const sdk::ElfImage image = sdk::parse_elf("x", bytes);
  const sdk::ElfSegment& seg = image.segments.front();
  bytes.resize(seg.file_offset + seg.data.size() / 2);
  EXPECT_THAT(refusal(bytes),
              HasSubstr(fmt::format("truncated: segment {} data spans", seg.index)));
  EXPECT_THAT(refusal(bytes), HasSubstr(fmt::format("(file offset 0x{:x})", seg.file_offset)));
}

TEST(ElfReader, TruncatedInsideTheHeader) {
  auto bytes = demo_bytes();
  bytes.resize(30);
  EXPECT_THAT(refusal(bytes),
              HasSubstr("truncated: the ELF header needs 52 bytes but the file has 30"));
}

TEST(ElfReader, SegmentOutsideTheTileWindow) {
  auto bytes = demo_bytes();
  put<uint32_t>(bytes, first_load_header(bytes) + offsetof(Elf32_Phdr, p_paddr), 0x1000);
  const std::string why = refusal(bytes);
  EXPECT_THAT(why, HasSubstr("occupies 0x00001000-"));
  EXPECT_THAT(why, HasSubstr("outside the tile's SRAM window 0x0004c000-0x000e7fff"));
  EXPECT_THAT(why, HasSubstr("(file offset 0x"));
}

TEST(ElfReader, EntryOutsideTheTileWindow) {
  auto bytes = demo_bytes();
  put<uint32_t>(bytes, offsetof(Elf32_Ehdr, e_entry), 0);
  EXPECT_THAT(refusal(bytes), HasSubstr("entry point 0x00000000 (ELF header, file offset 0x18)"));
}

TEST(ElfReader, FileSizeLargerThanMemorySize) {
  auto bytes = demo_bytes();
  put<uint32_t>(bytes, first_load_header(bytes) + offsetof(Elf32_Phdr, p_memsz), 0);
  EXPECT_THAT(refusal(bytes), HasSubstr("larger than its memory size"));
}

TEST(ElfReader, WrittenImagesCarryAChecksumThatCatchesCorruption) {
  sdk::ElfImage image = sdk::parse_elf("demo", demo_bytes());
  const std::string path = ::testing::TempDir() + "/checksummed.elf";
  sdk::write_elf(path, image);
  EXPECT_NO_THROW(sdk::read_elf(path));
  // Flip one bit in the first segment's data (somewhere in the code).
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  const sdk::ElfImage written = sdk::parse_elf("x", bytes);
  bytes[written.segments.front().file_offset + 100] ^= 0x10;
  EXPECT_THAT(refusal(bytes), HasSubstr("the image is corrupt: its checksum is 0x"));
}

// A POD64 with every tile programmed has 94,208 segments, more than e_phnum's 16 bits hold:
// write_elf uses ELF's extended numbering (e_phnum PN_XNUM, the count in section header 0's
// sh_info) and the reader follows it; a PN_XNUM whose count is missing or small is refused.
TEST(ElfReader, ImagesOfMoreThan65534SegmentsUseExtendedNumbering) {
  // 1024 tiles of 64 chips: 65,536 segments, just past the plain table's 65,534.
  const sdk::ElfImage demo = sdk::parse_elf("demo", demo_bytes());
  std::vector<unsigned> tiles(1024);
  for (unsigned t = 0; t < tiles.size(); ++t) tiles[t] = t;
  sdk::ElfImage image = sdk::replicate(demo, tiles, 64, "pod64.elf");
  ASSERT_EQ(image.segments.size(), 65536u * demo.segments.size());
  // Small segments keep the file small: each tile's first 8 bytes of the demo's code.
  for (sdk::ElfSegment& s : image.segments) {
    s.data.resize(8);
    s.mem_size = 8;
  }
  const std::string path = ::testing::TempDir() + "/pod64.elf";
  sdk::write_elf(path, image);
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  Elf32_Ehdr eh;
  std::memcpy(&eh, bytes.data(), sizeof eh);
  EXPECT_EQ(eh.e_phnum, PN_XNUM);
  Elf32_Shdr first;
  std::memcpy(&first, bytes.data() + eh.e_shoff, sizeof first);
  EXPECT_EQ(first.sh_info, image.segments.size());
  const sdk::ElfImage back = sdk::parse_elf("pod64.elf", bytes);
  ASSERT_EQ(back.segments.size(), image.segments.size());
  EXPECT_EQ(back.segments.back().chip, 63u);
  EXPECT_EQ(sdk::tile_of(back.segments.back().paddr), 1023u);
  EXPECT_EQ(back.segments[65535].data, image.segments[65535].data);
  EXPECT_EQ(back.symbols, demo.symbols);

  // No section header 0 to hold the count; a count PN_XNUM does not need; one past the file.
  std::vector<uint8_t> no_sections = bytes;
  put<Elf32_Off>(no_sections, offsetof(Elf32_Ehdr, e_shoff), 0);
  EXPECT_THAT(
      refusal(no_sections),
      HasSubstr("e_phnum is PN_XNUM (extended numbering) but there is no section header 0"));
  std::vector<uint8_t> small = bytes;
  put<Elf32_Word>(small, eh.e_shoff + offsetof(Elf32_Shdr, sh_info), 3);
  EXPECT_THAT(refusal(small),
              HasSubstr("section header 0 gives 3 program headers under PN_XNUM, which is for "
                        "65535 or more"));
  std::vector<uint8_t> huge = bytes;
  put<Elf32_Word>(huge, eh.e_shoff + offsetof(Elf32_Shdr, sh_info), 0x7fffffff);
  EXPECT_THAT(refusal(huge), HasSubstr("truncated: the program header table spans"));
}

TEST(ElfReader, FunctionSymbolsKeepTheirSizesThroughAWrittenImage) {
  // The demo's linker output marks main as a function; a written image (as ipu-image combines
  // tiles) must still say so, for the reports that name the function of a pc.
  const sdk::ElfImage image = sdk::parse_elf("demo", demo_bytes());
  ASSERT_TRUE(image.function_sizes.count("main"));
  EXPECT_GT(image.function_sizes.at("main"), 0u);
  EXPECT_FALSE(image.function_sizes.count("__bss_start"));  // not a function
  const std::string path = ::testing::TempDir() + "/functions.elf";
  sdk::write_elf(path, image);
  const sdk::ElfImage written = sdk::read_elf(path);
  EXPECT_EQ(written.function_sizes, image.function_sizes);
  EXPECT_EQ(written.symbols, image.symbols);
}

TEST(ElfReader, EveryTruncationAndByteFlipIsRefusedCleanlyOrParses) {
  // Never a crash: each mutated image either parses or is refused with an ImageError. Run under
  // the sanitizer build, this also proves that no read goes out of bounds.
  const auto original = demo_bytes();
  for (size_t cut = 0; cut < original.size(); cut += 37) {
    std::vector<uint8_t> bytes(original.begin(), original.begin() + cut);
    EXPECT_NO_FATAL_FAILURE((void)refusal(bytes));
    EXPECT_FALSE(refusal(bytes).empty()) << "truncated to " << cut << " bytes yet accepted";
  }
  uint32_t seed = 12345;
  for (int i = 0; i < 3000; ++i) {
    auto bytes = original;
    seed = seed * 1664525u + 1013904223u;
    const size_t at = (seed >> 8) % std::min<size_t>(bytes.size(), 4096);  // headers live early
    bytes[at] ^= static_cast<uint8_t>(1u << (seed & 7));
    (void)refusal(bytes);
  }
}

}  // namespace
}  // namespace ipu::test

// Reports name the function and source line of a pc (sdk/image/symbolizer.h): expectations come
// from the firmware's source text and the ELF's symbol table, not from the DWARF being read.
#include "sdk/image/symbolizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "tests/support/core_harness.h"

namespace ipu::test {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string firmware(const char* name) {
  return std::string(IPU_TEST_FIRMWARE_DIR) + "/" + name + ".elf";
}

// The 1-based number of the first line of a source file that contains `text`.
int line_of(const std::string& path, const std::string& text) {
  std::ifstream in(path);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (line.find(text) != std::string::npos) return n;
  return 0;
}

TEST(Symbolizer, AFaultNamesTheFunctionAndTheSourceLineOfThePc) {
  const sdk::Symbolizer symbols(firmware("null_deref"));
  ASSERT_TRUE(symbols.has_lines());
  CoreHarness h;
  h.core.set_locator([&symbols](uint32_t pc) { return symbols.locate(pc); });
  h.load_elf(firmware("null_deref"));
  ASSERT_EQ(h.run(), iss::StopReason::kFault);
  const int line = line_of(IPU_TEST_SOURCE_DIR "/firmware/null_deref.c", "return *p;");
  ASSERT_GT(line, 0);
  EXPECT_THAT(h.core.fault().message,
              HasSubstr(fmt::format("lw a0,0(zero) in main at null_deref.c:{} (cycle", line)));
}

TEST(Symbolizer, EveryFunctionSymbolNamesItsOwnFirstInstruction) {
  const sdk::Symbolizer symbols(firmware("hello"));
  const sdk::ElfImage image = sdk::read_elf(firmware("hello"));
  EXPECT_GT(symbols.functions(), 5u);
  // vfprintf and picolibc's __d_vfprintf share an address: the public name wins, in every build.
  for (const char* name : {"main", "console_put", "printf", "puts", "vfprintf"}) {
    ASSERT_TRUE(image.symbols.count(name)) << name;
    EXPECT_THAT(symbols.locate(image.symbols.at(name)), StartsWith(name)) << name;
  }
  // hello.c's main: the line of its first instruction lies within main's text.
  const int main_line = line_of(IPU_TEST_SOURCE_DIR "/firmware/hello.c", "int main(");
  const std::string at_main = symbols.locate(image.symbols.at("main"));
  ASSERT_THAT(at_main, StartsWith("main at hello.c:"));
  EXPECT_GE(std::stoi(at_main.substr(at_main.rfind(':') + 1)), main_line);
}

TEST(Symbolizer, APcNoFunctionCoversIsNotNamed) {
  const sdk::Symbolizer symbols(firmware("hello"));
  const iss::TileConfig tile;
  EXPECT_EQ(symbols.locate(0), "");
  EXPECT_EQ(symbols.locate(tile.sram_base + tile.sram_bytes - 4), "");  // the stacks
}

TEST(Symbolizer, AnImageInMemoryNamesTheSameFunctionsWithoutLines) {
  // As an SDK Device builds it: from the image it holds, symbols only.
  const sdk::ElfImage image = sdk::read_elf(firmware("hello"));
  const sdk::Symbolizer from_file(firmware("hello")), in_memory(image);
  EXPECT_EQ(in_memory.functions(), from_file.functions());
  EXPECT_FALSE(in_memory.has_lines());
  EXPECT_EQ(in_memory.locate(image.symbols.at("main") + 4), "main");
  EXPECT_EQ(in_memory.locate(0), "");  // picolibc's absolute function symbols at 0 hold no code
}

TEST(Symbolizer, AnImageInMemoryWithItsFirmwaresDwarfNamesLines) {
  // As an SDK executable carries it: the firmware ELF file in the .ipu.debug section.
  sdk::ElfImage image = sdk::read_elf(firmware("hello"));
  std::ifstream in(firmware("hello"), std::ios::binary);
  image.sections[std::string(sdk::kDebugSection)].assign(std::istreambuf_iterator<char>(in),
                                                         std::istreambuf_iterator<char>());
  const sdk::Symbolizer from_file(firmware("hello")), in_memory(image);
  EXPECT_TRUE(in_memory.has_lines());
  const uint32_t main = image.symbols.at("main");
  EXPECT_THAT(in_memory.locate(main), StartsWith("main at hello.c:"));
  EXPECT_EQ(in_memory.locate(main + 4), from_file.locate(main + 4));
}

// token_ring.c's globals (token, dest: a count and a tile), from the ELF file, from a
// replicated image ipu-image wrote and from an image in memory, by symbol and offset.
TEST(Symbolizer, ADataAddressIsNamedByTheGlobalItLiesIn) {
  const sdk::ElfImage image = sdk::read_elf(firmware("token_ring_fw"));
  ASSERT_EQ(image.object_sizes.at("token"), 4u);
  ASSERT_EQ(image.object_sizes.at("dest"), 8u);
  const uint32_t token = image.symbols.at("token"), dest = image.symbols.at("dest");
  for (const std::string& path : {firmware("token_ring_fw"), firmware("token_ring")}) {
    const sdk::Symbolizer symbols(path);
    EXPECT_EQ(symbols.data(token), "token") << path;
    EXPECT_EQ(symbols.data(dest + 4), "dest+4") << path;
    EXPECT_NE(symbols.data(dest + 8), "dest+8") << path;  // past its end
    EXPECT_EQ(symbols.data(0), "") << path;
  }
  const sdk::Symbolizer in_memory(image);
  EXPECT_EQ(in_memory.data(dest + 4), "dest+4");
}

// A pc in a runtime function inlined into main is named by main's own line, the inlined
// function after it: the line of token_ring.c that calls ipu_send.
TEST(Symbolizer, APcInAnInlinedFunctionNamesTheCallersLine) {
  const sdk::Symbolizer symbols(firmware("token_ring_fw"));
  const int line = line_of(IPU_TEST_SOURCE_DIR "/firmware/token_ring.c", "ipu_send(&token");
  ASSERT_GT(line, 0);
  const sdk::ElfImage image = sdk::read_elf(firmware("token_ring_fw"));
  const uint32_t main = image.symbols.at("main"), end = main + image.function_sizes.at("main");
  bool found = false;
  for (uint32_t pc = main; pc < end && !found; pc += 2) {
    const std::string where = symbols.locate(pc);
    if (where.find(" via ipu_send_words at ") != std::string::npos) {
      EXPECT_THAT(where, StartsWith(fmt::format("main at token_ring.c:{} via ipu_send_words at "
                                                "ipu_xipu.h:",
                                                line)));
      found = true;
    }
  }
  EXPECT_TRUE(found) << "no pc of main is in the inlined ipu_send_words";
}

TEST(Symbolizer, AFileThatIsNotAnElfImageNamesNothingAndDoesNotFail) {
  for (const std::string& path :
       {std::string("/nonexistent.elf"), std::string(IPU_TEST_SOURCE_DIR "/firmware/hello.c")}) {
    const sdk::Symbolizer symbols(path);
    EXPECT_EQ(symbols.functions(), 0u) << path;
    EXPECT_FALSE(symbols.has_lines()) << path;
    EXPECT_EQ(symbols.locate(0x4c000), "") << path;
  }
}

TEST(Symbolizer, AStallReportNamesTheFunctionEachContextIsIn) {
  const sdk::Symbolizer symbols(firmware("hello"));
  const sdk::ElfImage image = sdk::read_elf(firmware("hello"));
  CoreHarness h;
  h.core.set_locator([&symbols](uint32_t pc) { return symbols.locate(pc); });
  h.load_elf(firmware("hello"));
  ASSERT_EQ(h.run(600), iss::StopReason::kCycleLimit);
  const std::string report = h.core.describe_running_contexts();
  // "... pc 0x0004c140: <instruction> in <function>[ at <file>:<line>]": the function's symbol
  // starts at or below the pc.
  const uint32_t pc = h.core.context(0).pc;
  const std::string located = symbols.locate(pc);
  ASSERT_FALSE(located.empty()) << report;
  const std::string function = located.substr(0, located.find(' '));
  ASSERT_TRUE(image.symbols.count(function)) << function;
  EXPECT_LE(image.symbols.at(function), pc);
  EXPECT_THAT(report, HasSubstr(" in " + located));
}

}  // namespace
}  // namespace ipu::test

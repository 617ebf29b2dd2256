// The machine: inter-chip exchange timed to the cycle against the hand derivations in
// tests/firmware/machine_timing.S, with each schedule error across chips, a cross-chip deadlock and
// a ring around a POD16. SystemC elaborates one design per process, so ctest runs each test in its
// own process.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "hw/machine/platform.h"
#include "sdk/image/elf_writer.h"
#include "sdk/image/program.h"
#include "tests/support/image_run.h"

namespace ipu::test {
namespace {

using hw::ChipOutcome;
using ::testing::HasSubstr;

TEST(InterChip, ARungSendIsTimedToTheCycle) {
  MachineRun run("machine_rung", "m2000");
  ASSERT_EQ(run.report.outcome.result, ChipOutcome::Result::kExited) << run.report.outcome.message;
  EXPECT_EQ(run.report.outcome.exit_status, 10);  // chip 1's sum 1 + 2 + 3 + 4
  const auto& barriers = run.machine().sync_network().barriers();
  ASSERT_EQ(barriers.size(), 1u);
  EXPECT_EQ(barriers[0].arrivals, (std::vector<uint64_t>(4, 96)));
  EXPECT_EQ(barriers[0].release, 326u);  // 96 + 150 + 80
  EXPECT_EQ(barriers[0].chip, -1);
  const auto& exchanges = run.machine().exchange().records();
  ASSERT_EQ(exchanges.size(), 1u);
  EXPECT_EQ(exchanges[0].words, 4u);
  EXPECT_EQ(exchanges[0].chip_words, 4u);
  EXPECT_EQ(exchanges[0].last_arrival, 326u + 193);  // R + 28 + 16 + 133 + 16
  // The words crossed rung link 0 (tile 0 mod 6 links), chip 0 -> chip 1, and nothing else.
  uint64_t bytes = 0;
  for (const auto& link : run.machine().links().links())
    bytes += link->counters(0).bytes + link->counters(1).bytes;
  EXPECT_EQ(bytes, 16u);
  const hw::IpuLink& rung0 = *run.machine().links().bundles()[0].links[0];
  EXPECT_EQ(rung0.counters(0).bytes, 16u);
  EXPECT_EQ(run.report.ipulink_bytes, 16u);
}

// A loaded segment whose stored bytes run past its size (only a hand-built LoadedProgram has
// one: the ELF reader refuses a file size over the memory size) is refused as such, not as a
// segment outside the SRAM.
TEST(Images, ASegmentHoldingMoreThanItsSizeIsRefusedAsSuch) {
  hw::PlatformOptions options;
  options.machine = hw::machine_preset("m2000");
  hw::LoadedProgram program = sdk::load_program(
      sdk::read_elf(std::string(IPU_TEST_FIRMWARE_DIR) + "/machine_rung.elf"), options.machine);
  hw::LoadedProgram::Segment& s = program.tiles.begin()->second.front();
  ASSERT_GT(s.bytes.size(), 4u);
  s.size = static_cast<uint32_t>(s.bytes.size() - 4);
  const std::string expected = fmt::format(
      "a segment at 0x{:08x} holds {} bytes, more than its "
      "size of {} bytes",
      s.address, s.bytes.size(), s.size);
  std::ostringstream console, trace;
  sc_core::sc_set_time_resolution(1, sc_core::SC_FS);
  try {
    hw::Platform platform(options, program, console, trace);
    ADD_FAILURE() << "the platform loaded it";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr(expected));
  }
}

TEST(InterChip, ASendAcrossTwoRungsCrossesThreeLinks) {
  MachineRun run("machine_two_rungs", "pod16");  // chip 0 -> 1 -> 3 -> 5
  ASSERT_EQ(run.report.outcome.result, ChipOutcome::Result::kExited) << run.report.outcome.message;
  EXPECT_EQ(run.report.outcome.exit_status, 10);
  const auto& barriers = run.machine().sync_network().barriers();
  ASSERT_EQ(barriers.size(), 1u);
  EXPECT_EQ(barriers[0].release, 445u);  // 96 + 150 + 199
  const auto& exchanges = run.machine().exchange().records();
  ASSERT_EQ(exchanges.size(), 1u);
  EXPECT_EQ(exchanges[0].last_arrival, 445u + 28 + 32 + 3 * 133);
  EXPECT_EQ(run.report.ipulink_bytes, 3u * 16);  // 16 bytes on each of three links
}

TEST(InterChipErrors, ReceiverNotListening) {
  MachineRun run("machine_no_listen", "m2000");
  ASSERT_EQ(run.report.outcome.result, ChipOutcome::Result::kFault);
  EXPECT_THAT(run.report.outcome.message, HasSubstr("word 0 of the send from chip 0 tile 0 (0x"));
  EXPECT_THAT(run.report.outcome.message,
              HasSubstr("arrives at chip 1 tile 0 at cycle 516 while chip 1 tile 0 listens to "
                        "no tile"));  // 326 + 25 + 32 + 133
}

TEST(InterChipErrors, MissingSender) {
  MachineRun run("machine_no_send", "m2000");
  ASSERT_EQ(run.report.outcome.result, ChipOutcome::Result::kFault);
  EXPECT_THAT(run.report.outcome.message, HasSubstr("chip 1 tile 0: receive buffer at 0x"));
  EXPECT_THAT(run.report.outcome.message,
              HasSubstr("expected 4 words but got 0 before the end of the tile's exchange phase "
                        "at cycle 1368"));  // R + 1042
}

TEST(InterChipErrors, ASendAfterAnInternalSyncCannotLeaveTheChip) {
  MachineRun run("machine_internal_sync", "m2000");
  ASSERT_EQ(run.report.outcome.result, ChipOutcome::Result::kFault);
  EXPECT_THAT(run.report.outcome.message, HasSubstr("chip 0 tile 0 sends 4 words from 0x"));
  EXPECT_THAT(run.report.outcome.message,
              HasSubstr("to chip 1 tile 0, which is not in this exchange phase (sync group 0 of "
                        "chip 0 released at cycle 246); words reach another chip only after an "
                        "external sync"));  // 96 + 150
}

TEST(InterChipErrors, ASendToAChipThatDoesNotExist) {
  MachineRun run("machine_no_chip", "m2000");
  ASSERT_EQ(run.report.outcome.result, ChipOutcome::Result::kFault);
  EXPECT_THAT(run.report.outcome.message,
              HasSubstr("chip 0 tile 0 context 0 (supervisor): destination chip 7 tile 0 "
                        "(0x40070000; the machine has 4 chips of 1472 tiles) does not exist"));
}

TEST(InterChipErrors, FourSendersOverOneLinkOverSubscribeIt) {
  // Tiles 0, 6, 12 and 18 all take rung link 0 (tile mod 6): 4 words a cycle on a link that
  // carries 3.02. Their first words enter at R + 25 + 16 = 367 and fit (the fourth runs over);
  // in 368 the fourth word, tile 18's word 1, finds more than a cycle's worth ahead of it.
  MachineRun run("machine_one_link", "m2000");
  ASSERT_EQ(run.report.outcome.result, ChipOutcome::Result::kFault);
  EXPECT_THAT(run.report.outcome.message,
              HasSubstr("IPU-Link chip 0 port 0 -> chip 1 port 0 is over-subscribed at cycle 368: "
                        "word 1 of the send from chip 0 tile 18"));
  EXPECT_THAT(run.report.outcome.message, HasSubstr("to chip 1 tile 18"));
}

TEST(InterChip, TheSameTrafficSpreadOverFourLinksFits) {
  MachineRun run("machine_spread_links", "m2000");
  ASSERT_EQ(run.report.outcome.result, ChipOutcome::Result::kExited) << run.report.outcome.message;
  EXPECT_EQ(run.report.outcome.exit_status, 10);
  const auto& rung = run.machine().links().bundles()[0];
  for (unsigned l = 0; l < 4; ++l) EXPECT_EQ(rung.links[l]->counters(0).bytes, 16u) << l;
}

TEST(InterChip, ADeadlockNamesTheMissingChipAndTile) {
  MachineRun run("machine_deadlock", "m2000");
  ASSERT_EQ(run.report.outcome.result, ChipOutcome::Result::kDeadlock);
  EXPECT_THAT(
      run.report.outcome.message,
      HasSubstr("external sync (every chip): tiles chip 0 tile 0 (cycle 108), chip 1 tile 0 "
                "(cycle 108), chip 3 tile 0 (cycle 108) arrived; 1 missing:"));  // 96 + li, beq
  EXPECT_THAT(run.report.outcome.message, HasSubstr("chip 2 tile 0 exited with status 0"));
}

TEST(Images, TheManifestIsJsonCheckedAgainstTheMachineAndCoveredByTheChecksum) {
  const std::string path = std::string(IPU_TEST_FIRMWARE_DIR) + "/machine_rung.elf";
  sdk::ElfImage image = sdk::read_elf(path);
  const hw::MachineConfig m2000 = hw::machine_preset("m2000");
  auto manifest = [&image](const std::string& text) {
    image.sections[".ipu.manifest"].assign(text.begin(), text.end());
  };
  auto refusal = [&] {
    try {
      sdk::load_program(image, m2000);
    } catch (const sdk::ImageError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  manifest(R"({"target": {"tiles": 1472, "clock_hz": 1325000000, "chips": 4}})");
  EXPECT_EQ(refusal(), "");
  manifest(R"({"target": {"tiles": 1472, "clock_hz": 1325000000, "chips": 16}})");
  EXPECT_THAT(refusal(), HasSubstr("built for 16 chips of 1472 tiles at 1325000000 Hz, but the "
                                   "configuration is 4 chips"));
  // 30,000 digits (a regex once recursed per character here and crashed): too large a number.
  manifest(R"({"target": {"tiles": )" + std::string(30000, '9') + R"(, "clock_hz": 1}})");
  EXPECT_THAT(refusal(), HasSubstr("the .ipu.manifest section is not valid JSON"));
  manifest(R"({"target": {"tiles": 1472.5, "clock_hz": 1325000000}})");
  EXPECT_THAT(refusal(), HasSubstr("the .ipu.manifest section is corrupt: 'target' needs whole"));
  manifest(R"({"target": {"tiles": 1472, "clock_hz": 1325.0.000}})");
  EXPECT_THAT(refusal(), HasSubstr("the .ipu.manifest section is not valid JSON"));

  // Written with a manifest, then the manifest edited in the file: the checksum refuses it.
  manifest(R"({"target": {"tiles": 1472, "clock_hz": 1325000000, "chips": 4}})");
  const std::string out = ::testing::TempDir() + "manifest_checksum.elf";
  sdk::write_elf(out, image);
  EXPECT_NO_THROW(sdk::read_elf(out));
  std::string bytes;
  {
    std::ifstream in(out, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const size_t at = bytes.find("\"tiles\": 1472");
  ASSERT_NE(at, std::string::npos);
  bytes[at + 12] = '3';  // 1472 -> 1473
  std::ofstream(out, std::ios::binary) << bytes;
  EXPECT_THAT([&] { sdk::read_elf(out); }, ::testing::ThrowsMessage<sdk::ImageError>(HasSubstr(
                                               "the image is corrupt: its checksum is 0x")));
}

TEST(InterChip, ARingAroundAPod16CarriesEveryToken) {
  MachineRun run("chip_ring_pod16", "pod16");
  ASSERT_EQ(run.report.outcome.result, ChipOutcome::Result::kExited) << run.report.outcome.message;
  EXPECT_EQ(run.report.outcome.exit_status, 136);  // 1 + 2 + ... + 16
  for (unsigned c = 0; c < 16; ++c)
    EXPECT_EQ(run.machine().tile(c * 1472).outcome().exit_status, 136) << "chip " << c;
  // Per superstep, chip c sends one word to c + 1: 8 rung hops (even c), 7 x 2 hops (odd c but
  // 15: rung, then a column step), and 15 -> 0: rung + 7 column steps = 8. 30 hops x 4 bytes,
  // 16 supersteps, plus the final external sync's empty exchange.
  EXPECT_EQ(run.report.ipulink_bytes, 16u * 30 * 4);
  EXPECT_EQ(run.report.inter_chip_words, 16u * 16);
  EXPECT_EQ(run.report.supersteps, 16u);
}

}  // namespace
}  // namespace ipu::test

// A saved executable: the .ipu.runtime section gives back everything the runtime uses, through
// write_elf and read_elf, and a section that is corrupt in any way the runtime could trip on is
// refused with the field it names (the image's checksum is recomputed on purpose here, as a
// hand-edited or hostile image would have it).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "sdk/compiler/compiler.h"
#include "sdk/compiler/executable_io.h"
#include "sdk/graph/codelet_library.h"
#include "sdk/image/elf_writer.h"
#include "sdk/runtime/device.h"

namespace ipu::test {
namespace {

using namespace ipu::sdk;
using Json = nlohmann::ordered_json;
using ::testing::HasSubstr;

// An M2000 of 4 replicas (a chip each, of 8 tiles) with a stream each way over the gateway,
// a remote buffer and three programs.
const Executable& saved_executable() {
  static const Executable exe = [] {
    constexpr size_t n = 96;
    Graph g(Target::preset("m2000", 8, 4));
    const Tensor a = g.add_variable(DType::kF32, {n}, "a");
    const Tensor b = g.add_variable(DType::kF16, {4, n / 4}, "b");
    g.map_evenly(a, 0, 8, 2);
    g.map_evenly(b, 0, 8, 2);
    g.add_host_stream("in", DType::kF32, n, StreamDirection::kHostToDevice);
    g.add_host_stream("out", DType::kF32, n, StreamDirection::kDeviceToHost);
    const RemoteBuffer rb = g.add_remote_buffer("rb", DType::kF32, n, 2);
    add_codelet_library(g);
    const Tensor sums = g.add_variable(DType::kF32, {8}, "sums");
    g.map_evenly(sums, 0, 8, 1);
    const ComputeSet cs = g.add_compute_set("sum");
    for (unsigned t = 0; t < 8; ++t)
      g.add_vertex(cs, "sum_f32", t,
                   {{"a", g.region(a, 12 * t, 12 * t + 12)},
                    {"out", g.region(sums, t, t + 1)},
                    {"n", uint32_t{12}}});
    return compile(g, {{"load", Sequence({HostWrite("in", a), Execute(cs)})},
                       {"save", Sequence({CopyToRemote(a, rb, 1), HostRead(a, "out")})},
                       {"empty", Sequence({})}});
  }();
  return exe;
}

// The image as write_elf saves it and read_elf reads it back.
ElfImage round_trip(const ElfImage& image) {
  char path[] = "/tmp/ipu_saved_image_XXXXXX";
  const int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  close(fd);
  write_elf(path, image);
  ElfImage back = read_elf(path);
  std::remove(path);
  return back;
}

TEST(SavedImage, GivesBackWhatTheRuntimeUses) {
  const Executable& exe = saved_executable();
  const Executable back = read_executable(round_trip(exe.image), exe.machine);
  EXPECT_EQ(back.replicas, 4u);
  EXPECT_EQ(back.replica_tiles, exe.replica_tiles);
  EXPECT_EQ(back.command_address, exe.command_address);
  EXPECT_EQ(back.supersteps, exe.supersteps);
  ASSERT_EQ(back.tensors.size(), exe.tensors.size());
  for (const auto& [name, pieces] : exe.tensors) {
    const auto& other = back.tensors.at(name);
    ASSERT_EQ(other.size(), pieces.size()) << name;
    for (size_t i = 0; i < pieces.size(); ++i) {
      EXPECT_EQ(other[i].tile, pieces[i].tile) << name << " piece " << i;
      EXPECT_EQ(other[i].begin, pieces[i].begin) << name << " piece " << i;
      EXPECT_EQ(other[i].end, pieces[i].end) << name << " piece " << i;
      EXPECT_EQ(other[i].address, pieces[i].address) << name << " piece " << i;
    }
    EXPECT_EQ(back.tensor_info.at(name).type, exe.tensor_info.at(name).type) << name;
    EXPECT_EQ(back.tensor_info.at(name).elements, exe.tensor_info.at(name).elements) << name;
    EXPECT_EQ(back.tensor_info.at(name).shape, exe.tensor_info.at(name).shape) << name;
  }
  ASSERT_EQ(back.streams.size(), 2u);
  EXPECT_EQ(back.streams.at("in").direction, StreamDirection::kHostToDevice);
  EXPECT_EQ(back.streams.at("out").direction, StreamDirection::kDeviceToHost);
  EXPECT_EQ(back.streams.at("out").elements, 96u);
  ASSERT_EQ(back.host_transfers.size(), exe.host_transfers.size());
  for (size_t i = 0; i < exe.host_transfers.size(); ++i) {
    EXPECT_EQ(back.host_transfers[i].stream, exe.host_transfers[i].stream);
    EXPECT_EQ(back.host_transfers[i].tensor, exe.host_transfers[i].tensor);
    EXPECT_EQ(back.host_transfers[i].to_device, exe.host_transfers[i].to_device);
    EXPECT_EQ(back.host_transfers[i].staging, exe.host_transfers[i].staging);
  }
  EXPECT_FALSE(exe.host_transfers.front().staging.empty()) << "over the gateway";
  for (const auto& [name, b] : exe.remote_buffers) {
    EXPECT_EQ(back.remote_buffers.at(name).offset, b.offset) << name;
    EXPECT_EQ(back.remote_buffers.at(name).entry_bytes, b.entry_bytes) << name;
    EXPECT_EQ(back.remote_buffers.at(name).info.entries, b.info.entries) << name;
  }
  ASSERT_EQ(back.replica_memory.size(), 4u);
  for (unsigned r = 0; r < 4; ++r) {
    EXPECT_EQ(back.replica_memory[r].gateway, exe.replica_memory[r].gateway);
    EXPECT_EQ(back.replica_memory[r].base, exe.replica_memory[r].base);
  }
  ASSERT_EQ(back.programs.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(back.programs[i].name, exe.programs[i].name);
    EXPECT_EQ(back.programs[i].host_transfers, exe.programs[i].host_transfers);
    EXPECT_EQ(back.programs[i].supersteps, exe.programs[i].supersteps);
  }
  EXPECT_EQ(back.compute_sets, exe.compute_sets);
  EXPECT_EQ(back.vertex_sites.size(), 4u * 8u) << "a vertex per tile of each replica";
  EXPECT_EQ(back.vertex_sites, exe.vertex_sites);
}

// The saved image with its runtime section edited by `edit`.
ElfImage edited(const std::function<void(Json&)>& edit) {
  ElfImage image = saved_executable().image;
  auto& bytes = image.sections.at(kRuntimeSection);
  Json j = Json::parse(bytes.begin(), bytes.end());
  edit(j);
  const std::string text = j.dump();
  bytes.assign(text.begin(), text.end());
  image.path = "edited.elf";
  return image;
}

std::string refusal(const ElfImage& image) {
  try {
    read_executable(image, saved_executable().machine);
  } catch (const ImageError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(SavedImage, RefusesACorruptSectionNamingTheField) {
  const std::string prefix = "edited.elf: the .ipu.runtime section is corrupt: ";
  ElfImage text = saved_executable().image;
  text.path = "edited.elf";
  text.sections[kRuntimeSection] = {'{', '"', 'r'};
  EXPECT_EQ(refusal(text), prefix + "it is not valid JSON");
  EXPECT_EQ(refusal(edited([](Json& j) { j.erase("programs"); })), prefix + "has no 'programs'");
  EXPECT_EQ(refusal(edited([](Json& j) { j["replicas"] = 0; })),
            prefix + "0 replicas of 8 tiles do not fit the machine's 32 tiles");
  EXPECT_EQ(refusal(edited([](Json& j) { j["replica_tiles"] = -3; })),
            prefix + "replica_tiles is not a whole number");
  EXPECT_EQ(refusal(edited([](Json& j) { j["tensors"][0]["pieces"][0][0] = 8; })),
            prefix + "tensors[0].pieces[0][0] is 8, more than 7");
  EXPECT_THAT(
      refusal(edited([](Json& j) { j["tensors"][0]["pieces"][0][3] = 16; })),
      HasSubstr(prefix + "tensors[0].pieces[0] puts 48 bytes at 0x10, outside the tile's SRAM"));
  EXPECT_EQ(refusal(edited([](Json& j) { j["tensors"][0]["pieces"][0][2] = 0; })),
            prefix + "tensors[0].pieces[0] runs from element 0 to 0");
  EXPECT_EQ(refusal(edited([](Json& j) {
              j["tensors"][0]["pieces"][0] = {1, 2};
            })),
            prefix + "tensors[0].pieces[0] is not [tile, first element, end element, address]");
  EXPECT_EQ(refusal(edited([](Json& j) { j["tensors"][1]["type"] = "f64"; })),
            prefix + "tensors[1].type 'f64' is not a type (f32, f16, i32, u32 or u8)");
  EXPECT_EQ(refusal(edited([](Json& j) { j["host_transfers"][0]["stream"] = "nope"; })),
            prefix + "host_transfers[0] names no stream: 'nope'");
  EXPECT_EQ(refusal(edited([](Json& j) { j["streams"][0]["elements"] = 97; })),
            prefix + "host_transfers[0] moves tensor 'a' (96 f32) through stream 'in' (97 f32)");
  EXPECT_EQ(refusal(edited([](Json& j) { j["host_transfers"][0]["to_device"] = false; })),
            prefix +
                "host_transfers[0] moves data from the device through stream 'in', which goes to "
                "it");
  EXPECT_EQ(refusal(edited([](Json& j) { j["host_transfers"][0]["staging"] = "none"; })),
            prefix + "host_transfers[0] stages in no remote buffer: 'none'");
  EXPECT_EQ(refusal(edited([](Json& j) { j["programs"][1]["host_transfers"][0] = 9; })),
            prefix + "programs[1].host_transfers[0] is 9, more than 1");
  EXPECT_EQ(refusal(edited([](Json& j) { j["programs"][2]["name"] = "load"; })),
            prefix + "programs[2] has an empty or repeated name 'load'");
  EXPECT_EQ(refusal(edited([](Json& j) { j["replica_memory"][0]["gateway"] = 1; })),
            prefix + "replica_memory[0].gateway is 1, more than 0");
  EXPECT_THAT(refusal(edited([](Json& j) { j["remote_buffers"][0]["offset"] = 1ull << 40; })),
              HasSubstr(prefix + "remote_buffers[0].offset is 1099511627776, more than "));
  EXPECT_EQ(refusal(edited([](Json& j) { j["replica_memory"].erase(1); })),
            prefix + "replica_memory has 3 entries for 4 replicas");
  EXPECT_EQ(refusal(edited([](Json& j) { j["vertex_sites"][0][2] = 99; })),
            prefix + "vertex_sites[0][2] is 99, more than " +
                std::to_string(saved_executable().compute_sets.size() - 1));
  // The control steps the host follows to label supersteps: every jump lands on a step.
  const size_t steps = saved_executable().control.size();
  EXPECT_EQ(refusal(edited([](Json& j) { j["control"][0] = "dispatch"; })),
            prefix +
                "control[0] is not [op, a, b, label] or [op, a, b, label, [chips that step over "
                "it]]");
  // The chips that step over an exchange: each a chip of the machine, in order.
  EXPECT_EQ(refusal(edited([](Json& j) {
              j["control"][0].push_back({1, 0});
            })),
            prefix + "control[0] lists the chips that step over it out of order");
  EXPECT_EQ(refusal(edited([](Json& j) { j["control"][0].push_back({4}); })),
            prefix + "control[0][4][0] is 4, more than 3");
  EXPECT_EQ(refusal(edited([](Json& j) { j["control"][0][0] = 99; })),
            prefix + "control[0][0] is 99, more than 12");
  EXPECT_EQ(refusal(edited([](Json& j) {
              j["control"][1] = {9, 9999, 0, ""};
            })),
            prefix + fmt::format("control[1] jumps to step 9999 of {}", steps));
  EXPECT_EQ(refusal(edited([](Json& j) {
              j["control"][1] = {6, 7, 0, ""};
            })),
            prefix + "control[1] makes host transfer 7 of 2");
  EXPECT_EQ(refusal(edited([](Json& j) { j["programs"][2]["first_step"] = 9999; })),
            prefix + fmt::format("programs[2].first_step is step 9999 of {}", steps));
  EXPECT_EQ(refusal(edited([](Json& j) { j["command_address"] = 0; })),
            prefix + "command_address puts 4 bytes at 0x0, outside the tile's SRAM 0x" +
                fmt::format("{:x}-0x{:x}", saved_executable().machine.chip.tile.sram_base,
                            saved_executable().machine.chip.tile.sram_base +
                                saved_executable().machine.chip.tile.sram_bytes));
}

// Sizes are bounded by what the pieces hold, so no crafted size makes a run allocate more than
// the machine's memory (issue 39: 5.6 GB for one output stream).
TEST(SavedImage, RefusesSizesThePiecesDoNotHold) {
  const std::string prefix = "edited.elf: the .ipu.runtime section is corrupt: ";
  const uint64_t held = 8 * saved_executable().machine.chip.tile.sram_bytes;  // a replica's
  // Tensor 'a' is 96 f32 over 8 tiles, 12 elements a piece.
  EXPECT_EQ(refusal(edited([](Json& j) { j["tensors"][0]["pieces"][0][2] = 10; })),
            prefix + "tensors[0].pieces hold no element 10-11 of the tensor's 96");
  EXPECT_EQ(refusal(edited([](Json& j) { j["tensors"][0]["pieces"][1][1] = 10; })),
            prefix + "tensors[0].pieces hold elements 10-11 twice (of the tensor's 96)");
  EXPECT_EQ(refusal(edited([](Json& j) { j["tensors"][0]["elements"] = 200; })),
            prefix + "tensors[0].pieces hold no element 96-199 of the tensor's 200");
  EXPECT_EQ(refusal(edited([](Json& j) { j["tensors"][0]["elements"] = 1ull << 40; })),
            prefix + fmt::format("tensors[0].elements is 1099511627776, more than {}", held));
  EXPECT_EQ(refusal(edited([](Json& j) { j["tensors"][0]["elements"] = 2'000'000; })),
            prefix + fmt::format("tensors[0] has 8000000 bytes, more than a replica's 8 tiles "
                                 "hold ({})",
                                 held));
  EXPECT_EQ(refusal(edited([](Json& j) { j["streams"][1]["elements"] = 2'000'000; })),
            prefix + fmt::format("streams[1] carries 8000000 bytes, more than a replica's 8 tiles "
                                 "hold ({})",
                                 held));
}

// The runtime's DMA reaches only tiles the image gives a program: a piece elsewhere is refused
// when the image is read, not half way through a run.
TEST(SavedImage, RefusesAPieceOnATileWithoutAProgram) {
  ElfImage image = saved_executable().image;
  image.path = "edited.elf";
  image.segments.erase(std::remove_if(image.segments.begin(), image.segments.end(),
                                      [](const ElfSegment& s) { return s.chip == 3; }),
                       image.segments.end());
  EXPECT_EQ(refusal(image),
            "edited.elf: the .ipu.runtime section is corrupt: tensors[0].pieces[0] lies on tile "
            "24 (replica 3), which the image gives no program");
}

// A host transfer the image's firmware asks for but its runtime section does not list ends
// the run with the reason, as a defect of the image (not an exception through the SystemC
// kernel, which ipu-sim reported as SystemC's E549).
TEST(SavedImage, AFirmwareAndSectionThatDisagreeEndTheRunWithTheReason) {
#if defined(__SANITIZE_ADDRESS__)
  // As in sdk_test: an exception unwinding after sc_start() leaves stale stack shadow (SystemC
  // switches stacks without telling ASan). The Release run of this test checks it.
  GTEST_SKIP() << "exceptions after SystemC simulation confuse AddressSanitizer's stack shadow";
#endif
  const Executable exe =
      read_executable(edited([](Json& j) { j["programs"][0]["host_transfers"] = Json::array(); }),
                      saved_executable().machine);
  Device device(exe);
  std::vector<float> in(4 * 96, 1.0f);  // every replica's
  device.connect_stream("in", in.data(), in.size() * sizeof(float));
  EXPECT_THAT([&] { device.run("load"); },
              ::testing::ThrowsMessage<ImageError>(::testing::StrEq(
                  "edited.elf: program 'load' asked the host for transfer 0, which it does not "
                  "list (0 transfers): the image's firmware and its .ipu.runtime section "
                  "disagree")));
  EXPECT_THAT([&] { device.run("empty"); },
              ::testing::ThrowsMessage<DeviceError>(HasSubstr("stopped in an earlier run")));
}

TEST(SavedImage, RefusesAnImageWithoutTheSectionOrForAnotherMachine) {
  ElfImage bare = saved_executable().image;
  bare.path = "bare.elf";
  bare.sections.erase(kRuntimeSection);
  EXPECT_FALSE(has_runtime_section(bare));
  EXPECT_THAT(refusal(bare), HasSubstr("bare.elf: the image has no .ipu.runtime section"));
  hw::MachineConfig one_chip = saved_executable().machine;
  one_chip.chips = 1;
  ElfImage image = saved_executable().image;
  image.path = "m2000.elf";
  EXPECT_THAT([&] { read_executable(image, one_chip); },
              ::testing::ThrowsMessage<ImageError>(
                  HasSubstr("m2000.elf: built for 4 chips of 8 tiles at 1325000000 Hz, but the "
                            "configuration is 1 chip of 8 tiles")));
}

// Every superstep of a device's runs is named for the program step that made it (issue 38,
// item 8), also when the executable comes back from a saved image: the statistics' sequence on
// each chip, worked out by hand from the three programs as compile() lowers them.
TEST(SavedImage, LabelsEverySuperstepWithItsProgramStep) {
  const Executable& saved = saved_executable();
  const Executable exe = read_executable(round_trip(saved.image), saved.machine);
  ASSERT_EQ(exe.control.size(), saved.control.size());
  for (size_t i = 0; i < exe.control.size(); ++i) {
    EXPECT_EQ(exe.control[i].op, saved.control[i].op) << "step " << i;
    EXPECT_EQ(exe.control[i].label, saved.control[i].label) << "step " << i;
  }
  Device device(exe);
  std::vector<float> in(4 * 96, 1.0f), out(4 * 96);
  device.connect_stream("in", in.data(), in.size() * sizeof(float));
  device.connect_stream("out", out.data(), out.size() * sizeof(float));
  for (const char* program : {"load", "save", "load"}) device.run(program);
  std::ostringstream text;
  device.write_stats(text);
  const Json stats = Json::parse(text.str());

  // (program, step, compute sets run before its sync). Host streams go over the gateway: the
  // host's leg in a host sync, the tiles' in an exchange phase with the sync that completes it.
  using Step = std::tuple<std::string, std::string, std::vector<std::string>>;
  const std::string in_a = "HostWrite 'in' -> 'a'", out_a = "HostRead 'a' -> 'out'";
  const std::vector<Step> load = {{"load", "host dispatch", {}},
                                  {"load", in_a + ": host -> streaming memory", {}},
                                  {"load", in_a + ": streaming memory -> tiles", {}},
                                  {"load", in_a + ": streaming memory -> tiles (complete)", {}}};
  std::vector<Step> expected = load;
  const std::vector<Step> save = {
      {"save", "host dispatch", {"sum"}},  // the compute set that ended "load"
      {"save", "CopyToRemote 'a' -> 'rb'[1]", {}},
      {"save", "CopyToRemote 'a' -> 'rb'[1] (complete)", {}},
      {"save", out_a + ": tiles -> streaming memory", {}},
      {"save", out_a + ": tiles -> streaming memory (complete)", {}},
      {"save", out_a + ": host <- streaming memory", {}}};
  expected.insert(expected.end(), save.begin(), save.end());
  // The stream's second use takes its second buffer in streaming memory.
  const std::vector<Step> load_again = {
      {"load", "host dispatch", {}},
      {"load", in_a + ": host -> streaming memory", {}},
      {"load", in_a + ": streaming memory -> tiles (second buffer)", {}},
      {"load", in_a + ": streaming memory -> tiles (second buffer) (complete)", {}}};
  expected.insert(expected.end(), load_again.begin(), load_again.end());
  for (int chip = 0; chip < 4; ++chip) {
    std::vector<Step> got;
    for (const Json& s : stats["supersteps"]) {
      if (s["chip"] != chip && s["chip"] != -1) continue;
      ASSERT_TRUE(s.contains("step")) << "superstep " << s["index"] << " has no label";
      got.emplace_back(s["program"], s["step"], s["compute"].get<std::vector<std::string>>());
    }
    EXPECT_EQ(got, expected) << "chip " << chip;
  }
}

}  // namespace
}  // namespace ipu::test

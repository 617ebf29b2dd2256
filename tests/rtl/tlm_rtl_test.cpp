// The TLM wrappers of the RTL blocks (tlm/), looped back: RtlPlatform's initiator sockets send
// each model interface's calls as TLM transactions to the wrappers, which run the verilated
// blocks. Every answer must equal the C++ model's for the same inputs, in the clocks derived by
// hand from each block's pipeline; bad payloads, unknown blocks and unsupported chips are
// refused with a message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <tlm_utils/simple_initiator_socket.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>
#include <vector>

#include "hw/exchange/receive_mux.h"
#include "hw/ipu/chip_config.h"
#include "iss/amp.h"
#include "iss/fpu.h"
#include "tests/support/random_stimulus.h"
#include "tlm/rtl_platform.h"

namespace ipu::test {
namespace {

using iss::fpu::bits_of;
using iss::fpu::float_of;
using tlm_rtl::RtlPlatform;
using tlm_rtl::RtlSelection;

hw::ChipConfig chip() { return hw::chip_preset("mk2"); }
RtlSelection all() { return RtlSelection::parse("all"); }

uint64_t clocks_of(const RtlPlatform& p, const std::string& block) {
  for (const auto& s : p.stats())
    if (s.block == block) return s.clocks;
  return ~uint64_t{0};
}

TEST(TlmRtl, PrngDrawsEqualTheModelAcrossInterleavedContexts) {
  RtlPlatform rtl("rtl", chip(), all(), "");
  std::array<iss::Xoroshiro128aox, 7> model, through_rtl;
  for (unsigned c = 0; c < 7; ++c)
    model[c] = through_rtl[c] = iss::Xoroshiro128aox::reset_state(3, c);
  std::mt19937 rng(1);
  uint64_t expected_clocks = 0;
  int loaded = -1;
  for (int i = 0; i < 100'000; ++i) {
    const unsigned c = i % 5 == 0 ? rng() % 7 : static_cast<unsigned>(std::max(loaded, 0));
    ASSERT_EQ(rtl.next(through_rtl[c]), model[c].next()) << "draw " << i << " context " << c;
    ASSERT_EQ(through_rtl[c].s0, model[c].s0);
    ASSERT_EQ(through_rtl[c].s1, model[c].s1);
    expected_clocks += static_cast<int>(c) == loaded ? 1 : 2;  // seed (another state) + step
    loaded = static_cast<int>(c);
  }
  EXPECT_EQ(clocks_of(rtl, "prng"), expected_clocks);
}

TEST(TlmRtl, ConversionsEqualTheModelInTwoClocksEach) {
  RtlPlatform rtl("rtl", chip(), all(), "");
  std::mt19937 rng(2);
  const unsigned modes[] = {iss::fpu::kRne, iss::fpu::kRtz, iss::fpu::kRdn,
                            iss::fpu::kRup, iss::fpu::kRmm, iss::fpu::kStochastic};
  for (int i = 0; i < 100'000; ++i) {
    const uint32_t a = static_cast<uint32_t>(rng()), random = static_cast<uint32_t>(rng());
    const unsigned rm = modes[i % 6];
    uint32_t model_flags = 0, rtl_flags = 0;
    const uint32_t expected = iss::fpu::f32_to_f16(a, rm, model_flags, random);
    ASSERT_EQ(rtl.convert(a, rm, rtl_flags, random), expected) << std::hex << "a 0x" << a;
    ASSERT_EQ(rtl_flags, model_flags) << std::hex << "a 0x" << a;
  }
  EXPECT_EQ(clocks_of(rtl, "sr"), 2u * 100'000);
}

TEST(TlmRtl, AmpIssuesEqualTheModelRowForRow) {
  RtlPlatform rtl("rtl", chip(), all(), "");
  std::mt19937 rng(3);
  uint64_t expected_clocks = 0;
  for (int issue = 0; issue < 20'000; ++issue) {
    iss::AmpUnit amp;
    amp.config = issue % 3 == 0 ? 1 : 0;  // f32 or f16 mode
    const unsigned n = amp.inputs();
    std::vector<iss::AmpLaneRow> rows(amp.rows());
    std::array<float, iss::AmpUnit::kInputsF16> x{};
    std::array<uint32_t, 4> x_bits{};
    for (unsigned j = 0; j < n; ++j) {
      x_bits[j] = amp.f32_mode() ? static_cast<uint32_t>(rng()) : rng() & 0xffff;
      x[j] =
          amp.f32_mode() ? float_of(x_bits[j]) : static_cast<float>(iss::fpu::f16_value(x_bits[j]));
    }
    for (unsigned r = 0; r < amp.rows(); ++r) {
      rows[r] = {!amp.f32_mode(), n, {}, x_bits, static_cast<uint32_t>(rng())};
      for (unsigned j = 0; j < n; ++j) {
        rows[r].w[j] = amp.f32_mode() ? static_cast<uint32_t>(rng()) : rng() & 0xffff;
        amp.weights[0][r * n + j] = amp.f32_mode()
                                        ? float_of(rows[r].w[j])
                                        : static_cast<float>(iss::fpu::f16_value(rows[r].w[j]));
      }
      amp.acc[r] = float_of(rows[r].acc);
    }
    amp.multiply_accumulate(x.data());
    rtl.run(rows);
    expected_clocks += rows.size() + iss::AmpUnit::kLaneLatency - 1;
    for (unsigned r = 0; r < amp.rows(); ++r) {
      uint32_t expected;
      std::memcpy(&expected, &amp.acc[r], 4);
      if (std::isnan(amp.acc[r])) expected = iss::fpu::kCanonicalNaN;
      ASSERT_EQ(rows[r].acc, expected) << "issue " << issue << " row " << r;
    }
  }
  EXPECT_EQ(clocks_of(rtl, "amp"), expected_clocks);
}

TEST(TlmRtl, BarriersReleaseWhenTheModelDoesEvenAcrossLongGaps) {
  RtlPlatform rtl("rtl", chip(), all(), "");
  std::mt19937 rng(4);
  for (int i = 0; i < 2'000; ++i) {
    Barrier b = random_barrier(rng);
    if (i % 4 == 0) b.arrivals.back() += 1'000'000'000;  // one tile a second late: no clocks
    std::vector<std::pair<unsigned, uint64_t>> arrivals;
    for (size_t k = 0; k < b.members.size(); ++k)
      arrivals.emplace_back(b.members[k], b.arrivals[k]);
    const uint64_t last = *std::max_element(b.arrivals.begin(), b.arrivals.end());
    ASSERT_EQ(rtl.release(b.members, arrivals, b.latency), last + b.latency) << "barrier " << i;
  }
  // One barrier by hand: start, 2 distinct arrival cycles, then 150 clocks to the release.
  const uint64_t before = clocks_of(rtl, "sync");
  EXPECT_EQ(rtl.release({1, 2}, {{1, 10}, {2, 400}}, 150), 550u);
  EXPECT_EQ(clocks_of(rtl, "sync") - before, 1u + 2 + 150);
}

TEST(TlmRtl, ReceiveDecisionsEqualTheModel) {
  RtlPlatform rtl("rtl", chip(), all(), "");
  std::mt19937 rng(5);
  size_t cycles = 0;
  hw::RxDecisions model, through_rtl;
  for (int i = 0; i < 2'000; ++i) {
    const hw::RxSchedule schedule = random_schedule(rng);
    hw::ReceiveMux().run(schedule, model);
    rtl.run(schedule, through_rtl);
    ASSERT_EQ(through_rtl.outcomes, model.outcomes) << "schedule " << i;
    ASSERT_EQ(through_rtl.addresses, model.addresses) << "schedule " << i;
    ASSERT_EQ(through_rtl.short_buffers.size(), model.short_buffers.size()) << "schedule " << i;
    for (size_t k = 0; k < model.short_buffers.size(); ++k) {
      EXPECT_EQ(through_rtl.short_buffers[k].cycle, model.short_buffers[k].cycle);
      EXPECT_EQ(through_rtl.short_buffers[k].buffer_address, model.short_buffers[k].buffer_address);
      EXPECT_EQ(through_rtl.short_buffers[k].buffer_words, model.short_buffers[k].buffer_words);
      EXPECT_EQ(through_rtl.short_buffers[k].filled, model.short_buffers[k].filled);
    }
    cycles += schedule.cycles.size();
  }
  EXPECT_EQ(clocks_of(rtl, "xmux"), cycles + 2'000);  // a start clock per receiver
}

// On a machine the exchange numbers senders by machine tile, past the RTL's 4096-sender bus
// from the third Mk2 chip on: the same random phases with some senders (and the selects that
// name them) moved off the bus, some of them onto numbers another sender keeps on it, are
// decided as the model decides them.
TEST(TlmRtl, ReceiveDecisionsOfSendersOffTheBusEqualTheModel) {
  RtlPlatform rtl("rtl", chip(), all(), "");
  std::mt19937 rng(7);
  hw::RxDecisions model, through_rtl;
  size_t moved = 0;
  for (int i = 0; i < 1'000; ++i) {
    hw::RxSchedule schedule = random_schedule(rng);
    // Senders with an odd number go to chip 3 or later of a Mk2 machine (4416 = 3 x 1472 on).
    const auto machine_tile = [](unsigned id) { return id % 2 == 1 ? 4416 + 5 * id : id; };
    for (hw::RxWord& w : schedule.words)
      w.source = machine_tile(w.source), moved += w.source >= 4096;
    for (hw::RxCycle& c : schedule.cycles)
      if (c.select >= 0) c.select = static_cast<int>(machine_tile(static_cast<unsigned>(c.select)));
    hw::ReceiveMux().run(schedule, model);
    rtl.run(schedule, through_rtl);
    ASSERT_EQ(through_rtl.outcomes, model.outcomes) << "schedule " << i;
    ASSERT_EQ(through_rtl.addresses, model.addresses) << "schedule " << i;
    ASSERT_EQ(through_rtl.short_buffers.size(), model.short_buffers.size()) << "schedule " << i;
  }
  EXPECT_GT(moved, 1'000u);
}

// Two words from `sender` in cycle 9: a schedule the receive mux refuses.
hw::RxSchedule two_words_in_one_cycle(unsigned sender) {
  hw::RxSchedule schedule;
  hw::RxCycle c;
  c.cycle = 9;
  c.word_count = 2;
  schedule.cycles.push_back(c);
  schedule.words = {{sender, 1}, {sender, 2}};
  return schedule;
}

TEST(TlmRtl, TwoWordsFromOneSenderInOneCycleAreRefusedByName) {
  RtlPlatform rtl("rtl", chip(), all(), "");
  const hw::RxSchedule schedule = two_words_in_one_cycle(4);
  hw::RxDecisions decisions;
  try {
    rtl.run(schedule, decisions);
    FAIL() << "accepted";
  } catch (const tlm_rtl::RtlMismatch& e) {
    EXPECT_NE(std::string(e.what()).find("two words from tile 4"), std::string::npos) << e.what();
  }
  EXPECT_NE(rtl.mismatch().find("two words from tile 4"), std::string::npos)
      << "the first mismatch is kept for the platform's report: " << rtl.mismatch();
}

// A sender renumbered onto the bus (machine tile 5000 of a Mk2 machine: chip 3) is named both
// ways in the RTL's report: by its number there (the top of the bus, 4095) and as itself.
TEST(TlmRtl, ARenumberedSenderIsNamedAsItselfInTheReport) {
  RtlPlatform rtl("rtl", chip(), all(), "");
  const hw::RxSchedule schedule = two_words_in_one_cycle(5000);
  hw::RxDecisions decisions;
  EXPECT_THROW(rtl.run(schedule, decisions), tlm_rtl::RtlMismatch);
  EXPECT_THAT(rtl.mismatch(),
              ::testing::AllOf(::testing::HasSubstr("two words from tile 4095"),
                               ::testing::HasSubstr("(senders renumbered onto the RTL's bus: "
                                                    "4095 is machine tile 5000)")));
}

struct Initiator : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<Initiator> socket{"socket"};
  explicit Initiator(const sc_core::sc_module_name& name) : sc_module(name) {}
};

TEST(TlmRtl, WrappersRefuseAPayloadOfTheWrongShape) {
  tlm_rtl::PrngRtl prng("prng", 1e9);
  Initiator initiator("initiator");
  auto& socket = initiator.socket;
  socket.bind(prng.socket);
  uint32_t too_small = 0;
  tlm::tlm_generic_payload payload;
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  payload.set_command(tlm::TLM_WRITE_COMMAND);
  payload.set_data_ptr(reinterpret_cast<unsigned char*>(&too_small));
  payload.set_data_length(sizeof too_small);
  socket->b_transport(payload, delay);
  EXPECT_EQ(payload.get_response_status(), tlm::TLM_COMMAND_ERROR_RESPONSE);
  tlm_rtl::PrngTransaction t{iss::Xoroshiro128aox::reset_state(0, 0), 0};  // not the RTL's state
  payload.set_data_ptr(reinterpret_cast<unsigned char*>(&t));
  payload.set_data_length(sizeof t);
  payload.set_command(tlm::TLM_READ_COMMAND);
  socket->b_transport(payload, delay);
  EXPECT_EQ(payload.get_response_status(), tlm::TLM_COMMAND_ERROR_RESPONSE);
  payload.set_command(tlm::TLM_WRITE_COMMAND);
  socket->b_transport(payload, delay);
  EXPECT_TRUE(payload.is_response_ok());
  EXPECT_EQ(delay, sc_core::sc_time(2, sc_core::SC_NS));  // seed + step at 1 GHz
  EXPECT_EQ(prng.transactions(), 1u);
}

TEST(TlmRtl, SelectionsParseAndNameTheirBlocks) {
  EXPECT_EQ(RtlSelection::parse("sync,prng").text(), "prng,sync");
  EXPECT_EQ(RtlSelection::parse("all").text(), "prng,sr,amp,sync,xmux");
  EXPECT_FALSE(RtlSelection::parse("none").any());
  EXPECT_FALSE(RtlSelection::parse("").any());
  EXPECT_EQ(RtlSelection::parse("sync,all").text(), "prng,sr,amp,sync,xmux");
  try {
    RtlSelection::parse("prng,,sr");  // an empty name is no block either
    FAIL() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown block '' in 'prng,,sr'"), std::string::npos)
        << e.what();
  }
  try {
    RtlSelection::parse("prng,fpu");
    FAIL() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown block 'fpu'"), std::string::npos) << e.what();
  }
}

TEST(TlmRtl, UnsupportedChipsAndTraceNamesAreRefused) {
  hw::ChipConfig wide = chip();
  wide.exchange.words_per_cycle = 2;
  EXPECT_THROW(RtlPlatform("a", wide, RtlSelection::parse("xmux"), ""), std::invalid_argument);
  EXPECT_NO_THROW(RtlPlatform("b", wide, RtlSelection::parse("sync"), ""));
  EXPECT_THROW(RtlPlatform("c", chip(), all(), "waves.vcd"), std::invalid_argument);
}

TEST(TlmRtl, TraceWritesOneFstWaveformPerBlock) {
  const std::string base = ::testing::TempDir() + "tlm_rtl_waves";
  {
    RtlPlatform rtl("rtl", chip(), RtlSelection::parse("prng,sync"), base + ".fst");
    EXPECT_EQ(rtl.trace_files(),
              (std::vector<std::string>{base + ".prng.fst", base + ".sync.fst"}));
    iss::Xoroshiro128aox s = iss::Xoroshiro128aox::reset_state(0, 0);
    for (int i = 0; i < 100; ++i) rtl.next(s);
    rtl.release({0, 1}, {{0, 3}, {1, 5}}, 4);
  }  // the wrappers close their files
  for (const char* block : {"prng", "sync"}) {
    std::ifstream f(base + "." + block + ".fst", std::ios::binary | std::ios::ate);
    ASSERT_TRUE(f.good()) << block;
    EXPECT_GT(f.tellg(), 200) << block << ": an FST file with header, hierarchy and changes";
  }
}

}  // namespace
}  // namespace ipu::test

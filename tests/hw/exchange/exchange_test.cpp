// The exchange as a block: a sync network releases the phase, tiles' calls on the ExchangeIf
// send, select and receive at chosen cycles, and each receiver's SRAM is a TLM target bound to
// the exchange's own initiator socket. The timing is derived by hand from the exchange's
// configuration: a word sent at cycle t arrives at t + 1 + base-latency + latency-per-column x
// columns between the tiles (hw/exchange/exchange_config.h). ctest runs each test in its own
// process (SystemC elaborates one design per process).
#include "hw/exchange/exchange.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <tlm_utils/simple_target_socket.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <systemc>
#include <vector>

#include "hw/sync/sync_network.h"

namespace ipu::test {
namespace {

using ::testing::HasSubstr;

// A tile's SRAM as the exchange sees it: words written through the TLM socket, by address.
struct TileMemory : sc_core::sc_module {
  tlm_utils::simple_target_socket<TileMemory> socket{"socket"};
  std::map<uint32_t, uint32_t> words;
  explicit TileMemory(const sc_core::sc_module_name& name) : sc_module(name) {
    socket.register_b_transport(this, &TileMemory::b_transport);
  }
  void b_transport(tlm::tlm_generic_payload& p, sc_core::sc_time&) {
    ASSERT_EQ(p.get_command(), tlm::TLM_WRITE_COMMAND);
    for (unsigned i = 0; i < p.get_data_length() / 4; ++i) {
      uint32_t w;
      std::memcpy(&w, p.get_data_ptr() + 4 * i, 4);
      words[static_cast<uint32_t>(p.get_address()) + 4 * i] = w;
    }
    p.set_response_status(tlm::TLM_OK_RESPONSE);
  }
};

// Two tiles, 0 (the sender) and 64 (the receiver, one column over at 64 tiles a column): both
// sync at cycle 0 (release at 150), then the script runs their exchange calls, then both reach
// their boundaries and read how the phase ended.
struct TwoTiles : sc_core::sc_module {
  static constexpr unsigned kSender = 0, kReceiver = 64;
  hw::ExchangeConfig config;
  hw::SyncNetwork sync;
  hw::Exchange exchange;
  TileMemory sender_memory{"sender_memory"}, receiver_memory{"receiver_memory"};
  std::function<void(hw::ExchangeIf&, uint64_t phase)> script;
  uint64_t sender_boundary = 0, receiver_boundary = 0;
  hw::PhaseEnd sender_end, receiver_end;
  uint64_t release = 0;

  explicit TwoTiles(const sc_core::sc_module_name& name, const hw::ExchangeConfig& c = {})
      : sc_module(name),
        config(c),
        sync("sync", {}, {1, 128, 1.325e9}, {kSender, kReceiver}),
        exchange("exchange", c, {1, 128, 1.325e9}, {kSender, kReceiver}) {
    sync.on_release([this](const hw::BarrierRecord& b) { exchange.open_phase(b); });
    exchange.to_tiles.bind(sender_memory.socket);  // in the order of the active tiles
    exchange.to_tiles.bind(receiver_memory.socket);
    SC_THREAD(run);
  }
  SC_HAS_PROCESS(TwoTiles);

  void run() {
    const hw::SyncArrival first = sync.arrive(kSender, 0, 0);
    const hw::SyncArrival last = sync.arrive(kReceiver, 0, 0);
    EXPECT_NE(first.released, nullptr);  // the first to arrive waits for the second
    const uint64_t phase = last.now.phase;
    release = last.now.cycle;
    script(exchange, phase);
    const sc_core::sc_event& a = exchange.reach_boundary(kSender, phase, sender_boundary);
    const sc_core::sc_event& b = exchange.reach_boundary(kReceiver, phase, receiver_boundary);
    EXPECT_EQ(&a, &b);  // one phase, one event
    wait(b);
    sender_end = exchange.phase_end(kSender, phase);
    receiver_end = exchange.phase_end(kReceiver, phase);
  }
};

constexpr uint32_t kFrom = 0x50000, kInto = 0x60000;
// The instructions' pcs (the exchange names their source lines when it can).
constexpr uint32_t kSendPc = 0x40010, kSelectPc = 0x40020, kBufferPc = 0x40024;

// The receiver listens to tile 0 from cycle 151 and opens a 4-word buffer from 152; the sender
// sends 4 words at cycle 160. Latency between columns 0 and 1: 16 + 1 = 17, so word w arrives
// at 160 + w + 1 + 17: the last, word 3, at 181.
void send_four_words(hw::ExchangeIf& x, uint64_t phase) {
  x.select_source(TwoTiles::kReceiver, phase, 151, kSelectPc, static_cast<int>(TwoTiles::kSender));
  x.receive_buffer(TwoTiles::kReceiver, phase, 152, kBufferPc, kInto, 4);
  const uint64_t free = x.send(TwoTiles::kSender, phase, 160, kSendPc, kFrom, {11, 22, 33, 44},
                               {TwoTiles::kReceiver});
  EXPECT_EQ(free, 160u + 1u + 4u);  // one word a cycle: the port is busy for four
}

TEST(Exchange, WordsLandInTheReceiversMemoryWhenItsPhaseOutlastsTheLastArrival) {
  TwoTiles tiles("tiles");
  tiles.script = send_four_words;
  tiles.sender_boundary = 170;
  tiles.receiver_boundary = 182;  // the cycle after the last arrival
  sc_core::sc_start();
  EXPECT_EQ(tiles.release, 150u);
  EXPECT_EQ(tiles.sender_end.error, "");
  EXPECT_EQ(tiles.receiver_end.error, "");
  EXPECT_EQ(tiles.receiver_memory.words,
            (std::map<uint32_t, uint32_t>{
                {kInto, 11}, {kInto + 4, 22}, {kInto + 8, 33}, {kInto + 12, 44}}));
  ASSERT_EQ(tiles.exchange.records().size(), 1u);
  EXPECT_EQ(tiles.exchange.records()[0].words, 4u);
  EXPECT_EQ(tiles.exchange.records()[0].last_arrival, 181u);
  EXPECT_EQ(tiles.exchange.latency(0, 64), 17u);
}

// send_four_words with the receiver's phase ending as the last word arrives (cycle 181).
void run_with_a_late_word(TwoTiles& tiles) {
  tiles.script = send_four_words;
  tiles.sender_boundary = 170;
  tiles.receiver_boundary = 181;
  sc_core::sc_start();
}

TEST(Exchange, AWordArrivingAsTheReceiversPhaseEndsIsAScheduleError) {
  TwoTiles tiles("tiles");
  run_with_a_late_word(tiles);
  EXPECT_THAT(tiles.receiver_end.error,
              HasSubstr("word 3 of the send from tile 0 (0x0005000c, issued at cycle 160) arrives "
                        "at tile 64 at cycle 181, after tile 64 ended its exchange phase at cycle "
                        "181"));
  EXPECT_TRUE(tiles.receiver_memory.words.empty());  // nothing of a broken phase lands
}

// With the image's symbols (ipu-sim and the SDK pass them), a schedule error names the data
// symbol of each address and the function and source line of each instruction it mentions.
TEST(Exchange, AScheduleErrorNamesTheSymbolsAndSourceLinesOfTheSendAndTheReceive) {
  TwoTiles tiles("tiles");
  tiles.exchange.set_locators(
      [](uint32_t pc) -> std::string {
        return pc == kSendPc     ? "send_row at prefix.c:31"
               : pc == kBufferPc ? "receive_row at prefix.c:40"
                                 : "";
      },
      [](uint32_t address) -> std::string {
        if (address >= kFrom && address < kFrom + 16) return fmt::format("out+{}", address - kFrom);
        return address == kInto ? "in" : "";
      });
  run_with_a_late_word(tiles);
  EXPECT_THAT(tiles.receiver_end.error,
              HasSubstr("word 3 of the send from tile 0 (0x0005000c = out+12, issued at cycle 160 "
                        "in send_row at prefix.c:31) arrives at tile 64 at cycle 181, after tile "
                        "64 ended its exchange phase at cycle 181"));
  EXPECT_THAT(tiles.receiver_end.error,
              HasSubstr("tile 64: receive buffer at 0x00060000 = in expected 4 words but got 3 "
                        "before the end of the tile's exchange phase at cycle 181 (the buffer set "
                        "at cycle 152 in receive_row at prefix.c:40)"));
}

TEST(Exchange, TheLatencyFollowsTheConfiguration) {
  hw::ExchangeConfig config;
  config.base_latency = 40;
  config.latency_per_column = 3;
  config.tiles_per_column = 32;  // tile 64 is now two columns from tile 0: 40 + 2 x 3 = 46
  TwoTiles tiles("tiles", config);
  tiles.script = send_four_words;
  tiles.sender_boundary = 170;
  tiles.receiver_boundary = 160 + 3 + 1 + 46 + 1;
  sc_core::sc_start();
  EXPECT_EQ(tiles.receiver_end.error, "");
  EXPECT_EQ(tiles.exchange.records()[0].last_arrival, 160u + 3u + 1u + 46u);
  EXPECT_EQ(tiles.receiver_memory.words.size(), 4u);
}

TEST(Exchange, AReceiverListeningToAnotherTileIsAScheduleError) {
  TwoTiles tiles("tiles");
  tiles.script = [](hw::ExchangeIf& x, uint64_t phase) {
    x.select_source(TwoTiles::kReceiver, phase, 151, kSelectPc, 5);  // tile 5 sends nothing
    x.receive_buffer(TwoTiles::kReceiver, phase, 152, kBufferPc, kInto, 1);
    x.send(TwoTiles::kSender, phase, 160, kSendPc, kFrom, {7}, {TwoTiles::kReceiver});
  };
  tiles.sender_boundary = 170;
  tiles.receiver_boundary = 300;
  sc_core::sc_start();
  EXPECT_THAT(tiles.receiver_end.error,
              HasSubstr("arrives at tile 64 at cycle 178 while tile 64 listens to tile 5"));
}

TEST(ExchangeConfig, RangesAreValidatedNamingTheParameter) {
  hw::ExchangeConfig c;
  c.words_per_cycle = 0;
  try {
    hw::validate(c);
    FAIL() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "exchange.words-per-cycle must be 1 to 64, not 0");
  }
  EXPECT_EQ(hw::ExchangeConfig{}.latency(0, 1471), 16u + 22u);  // columns 0 and 22
}

}  // namespace
}  // namespace ipu::test

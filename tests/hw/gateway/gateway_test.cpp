// The IPU-Gateway: sparse streaming memory, transfers timed through the chips' links and the
// DIMMs (directly, and from tiles in exchange phases against the hand derivation in
// tests/firmware/streaming_timing.S), the host's RoCE ports, and every bad address refused with
// a report naming it. SystemC elaborates one design per process: ctest runs each test alone.
#include "hw/gateway/gateway.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "hw/machine/platform.h"
#include "sdk/image/program.h"
#include "tests/support/image_run.h"

namespace ipu::test {
namespace {

using hw::ChipOutcome;
using ::testing::HasSubstr;

constexpr uint64_t kTicks = 65536;  // the gateway's time unit: 1/65536 cycle
// Mk2 (1.325 GHz): a 64-byte burst on a chip link (16 GB/s) and on a DIMM (19.2 GB/s), in ticks.
constexpr uint64_t kLinkBurst = 347341;  // ceil(64 x 65536 x 1.325e9 / 16e9)
constexpr uint64_t kDimmBurst = 289451;  // ceil(64 x 65536 x 1.325e9 / 19.2e9)
uint64_t cycles_up(uint64_t ticks) { return (ticks + kTicks - 1) / kTicks; }

TEST(StreamingMemory, IsSparseAndReadsZeroWhereUnwritten) {
  hw::StreamingMemory memory(uint64_t{128} << 30);
  const uint32_t word = 0x12345678;
  memory.write(uint64_t{100} << 30, &word, 4);
  EXPECT_EQ(memory.resident_bytes(), hw::StreamingMemory::kPageBytes);  // one page of 128 GiB
  std::vector<uint8_t> across(8, 0xab), back(8);
  memory.write(hw::StreamingMemory::kPageBytes - 4, across.data(), 8);  // spans two pages
  memory.read(hw::StreamingMemory::kPageBytes - 4, back.data(), 8);
  EXPECT_EQ(back, across);
  EXPECT_EQ(memory.resident_bytes(), 3 * hw::StreamingMemory::kPageBytes);
  uint32_t v = 1;
  memory.read(uint64_t{50} << 30, &v, 4);
  EXPECT_EQ(v, 0u);
  EXPECT_EQ(memory.resident_bytes(),
            3 * hw::StreamingMemory::kPageBytes);  // reading allocates none
  EXPECT_THAT([&] { memory.write((uint64_t{128} << 30) - 2, &word, 4); },
              ::testing::ThrowsMessage<std::out_of_range>(
                  HasSubstr("bytes 0x1ffffffffe..0x2000000002 lie outside the board's "
                            "137438953472 bytes")));
}

struct Board {
  hw::GatewayConfig config;
  hw::ChipConfig chip = hw::chip_preset("mk2");
  std::unique_ptr<hw::Gateway> gateway;
  explicit Board(uint32_t interleave = 4096) {
    config.present = true;
    config.interleave_bytes = interleave;
    gateway =
        std::make_unique<hw::Gateway>("gateway", config, chip.shape(4), hw::ChipEdge{}, 0, 0, 4);
  }
  // Serves the requests, in their order, as one exchange phase's streaming transfers.
  void serve(std::vector<hw::StreamRequest>& requests,
             const hw::ExchangeArrivals& arrivals = {}) const {
    std::vector<hw::StreamRequest*> order;
    for (auto& r : requests) order.push_back(&r);
    gateway->serve(order, arrivals);
  }
  // One write of `words` words by tile 0 of `chip` at `cycle`.
  static hw::StreamRequest write(unsigned chip, uint64_t cycle, uint64_t address, uint32_t words) {
    hw::StreamRequest r;
    r.tile = chip * 1472;
    r.cycle = cycle;
    r.write = true;
    r.address = address;
    r.count = words;
    r.words.resize(words);
    std::iota(r.words.begin(), r.words.end(), chip << 16);
    return r;
  }
};

TEST(Gateway, FourChipsWritingOneDimmQueueAtIt) {
  Board board;
  std::vector<hw::StreamRequest> requests;
  for (unsigned c = 0; c < 4; ++c) requests.push_back(Board::write(c, 1000, c * 64, 16));
  board.serve(requests);
  // Each burst leaves its tile by 1016, reaches its chip's edge at 1032, crosses its own link
  // (5.30 cycles) and its latency (332): all four reach DIMM 0 at the same tick, where they
  // queue in tile order, 289451 ticks each.
  const uint64_t at_dimm = (1000 + 1 + 15 + 16 + 332) * kTicks + kLinkBurst;
  for (unsigned c = 0; c < 4; ++c)
    EXPECT_EQ(requests[c].done, cycles_up(at_dimm + (c + 1) * kDimmBurst)) << c;
  EXPECT_EQ(requests[3].done, 1387u);  // 1364 + 22.97
  EXPECT_EQ(board.gateway->dimm(0).bytes, 256u);
  EXPECT_EQ(board.gateway->dimm(0).transfers, 4u);
  EXPECT_EQ(board.gateway->dimm(1).bytes, 0u);
  for (unsigned c = 0; c < 4; ++c) EXPECT_EQ(board.gateway->chip_link(c, true).bytes, 64u);
  // The data is there, each chip's at its address.
  uint32_t word = 0;
  board.gateway->memory().read(3 * 64 + 4, &word, 4);
  EXPECT_EQ(word, (3u << 16) + 1);
}

TEST(Gateway, InterleavedDimmsServeInParallel) {
  Board board;
  std::vector<hw::StreamRequest> requests;
  for (unsigned c = 0; c < 4; ++c) requests.push_back(Board::write(c, 1000, c * 4096, 16));
  board.serve(requests);
  const uint64_t at_dimm = (1000 + 1 + 15 + 16 + 332) * kTicks + kLinkBurst;
  // Chips 0 and 2 share DIMM 0, chips 1 and 3 DIMM 1.
  EXPECT_EQ(requests[0].done, cycles_up(at_dimm + kDimmBurst));
  EXPECT_EQ(requests[1].done, cycles_up(at_dimm + kDimmBurst));
  EXPECT_EQ(requests[2].done, cycles_up(at_dimm + 2 * kDimmBurst));
  EXPECT_EQ(requests[3].done, cycles_up(at_dimm + 2 * kDimmBurst));
  EXPECT_EQ(board.gateway->dimm(0).bytes, 128u);
  EXPECT_EQ(board.gateway->dimm(1).bytes, 128u);
}

// Host and tile traffic share the DIMMs' schedule (issue 35, item 4): a host write in flight
// while a tile's burst reaches the same DIMM. The host's 256 bytes at 8192 (DIMM 0) cross a RoCE
// port at 12.5 GB/s, each 64-byte burst reaching DIMM 0 as its last byte arrives, ceil(64 k x
// 65536 x 1.325e9 / 12.5e9) ticks after the start (k = 1..4: 6.78, 13.57, 20.35, 27.14 cycles),
// and taking it for 289451 ticks (4.42 cycles); the tile's burst reaches DIMM 0 at 1369.30.
TEST(Gateway, AHostWriteAndATilesWriteQueueAtOneDimmInTimeOrder) {
  constexpr uint64_t kHostBurst[] = {444597, 889193, 1333789, 1778385};
  constexpr uint64_t kHostLatency = 2650 * kTicks;  // 2 us at 1.325 GHz
  const uint64_t tile_at_dimm = (1000 + 1 + 15 + 16 + 332) * kTicks + kLinkBurst;
  std::vector<uint8_t> host_data(256, 0x5a);
  for (const uint64_t host_cycle : {uint64_t{1340}, uint64_t{1345}}) {
    Board board;
    const auto flight = board.gateway->host_start(true, 8192, host_data.data(), 256, host_cycle);
    std::vector<hw::StreamRequest> requests{Board::write(0, 1000, 0, 16)};
    board.serve(requests);
    const uint64_t host_done = board.gateway->host_finish(flight);
    const uint64_t start = host_cycle * kTicks;
    if (host_cycle == 1340) {
      // The host's last burst (1367.14 to 1371.55) holds DIMM 0 when the tile's arrives.
      EXPECT_EQ(requests[0].done, cycles_up(start + kHostBurst[3] + 2 * kDimmBurst));
      EXPECT_EQ(requests[0].done, 1376u);  // alone: 1374
      EXPECT_EQ(host_done, cycles_up(start + kHostBurst[3] + kDimmBurst + kHostLatency));
    } else {
      // The host's third burst (1365.35 to 1369.77) delays the tile's; the tile's (to 1374.19)
      // delays the host's fourth (1372.14).
      const uint64_t tile_through = start + kHostBurst[2] + 2 * kDimmBurst;
      EXPECT_GT(start + kHostBurst[2] + kDimmBurst, tile_at_dimm);
      EXPECT_EQ(requests[0].done, cycles_up(tile_through));
      EXPECT_EQ(requests[0].done, 1375u);
      EXPECT_EQ(host_done, cycles_up(tile_through + kDimmBurst + kHostLatency));
    }
    EXPECT_EQ(board.gateway->dimm(0).bytes, 64u + 256u);
    EXPECT_EQ(board.gateway->host_port(0, true).bytes, 256u);
    uint8_t byte = 0;
    board.gateway->memory().read(8192 + 255, &byte, 1);
    EXPECT_EQ(byte, 0x5a);
  }
}

TEST(Gateway, AReadAfterAWriteInOnePhaseSeesTheWrite) {
  // The read's request reaches the gateway (cycle 1000 + 1 + 16 + 332) before the write's burst
  // (1032 + 5.30 + 332): DIMM order decides, so the read sees zeros. Issued later, it sees data.
  for (const uint64_t read_cycle : {uint64_t{1000}, uint64_t{1100}}) {
    Board board;
    std::vector<hw::StreamRequest> requests{Board::write(0, 1000, 0, 16)};
    hw::StreamRequest read;
    read.tile = 1;
    read.cycle = read_cycle;
    read.address = 0;
    read.count = 16;
    requests.push_back(read);
    board.serve(requests);
    EXPECT_EQ(requests[1].words[5], read_cycle == 1000 ? 0u : 5u) << read_cycle;
  }
}

// A tile's receive port takes the exchange's words of the phase first (issue 35, item 5): a read
// of two bursts (32 words) lands a word a cycle, done 32 cycles after its first word (the second
// burst is at the port, 5.3 cycles of link behind, long before the first's 16 words are in).
// Exchange words arriving in 3 of those cycles push it 3 cycles later; those before its first
// word or after it is done, and another tile's, change nothing.
TEST(Gateway, AReadsWordsLandInTheCyclesTheExchangesLeaveFree) {
  const auto read = [](const hw::ExchangeArrivals& arrivals) {
    Board board;
    hw::StreamRequest r;
    r.tile = 1;
    r.cycle = 1000;
    r.address = 0;
    r.count = 32;
    std::vector<hw::StreamRequest> requests{r};
    board.serve(requests, arrivals);
    return requests[0].done;
  };
  const uint64_t alone = read({});
  const uint64_t first_lands = alone - 32;
  EXPECT_EQ(read({{1, {}}}), alone);  // a tile of the phase that the exchange's words miss
  EXPECT_EQ(read({{1, {{first_lands - 1, 1}, {alone + 40, 1}}}}), alone);
  EXPECT_EQ(read({{1, {{first_lands, 1}, {first_lands + 5, 1}, {alone - 1, 1}}}}), alone + 3);
  EXPECT_EQ(read({{2, {{first_lands, 1}}}}), alone);  // another tile's words
}

struct HostScript : sc_core::sc_module {
  std::function<void()> script;
  SC_HAS_PROCESS(HostScript);
  explicit HostScript(const sc_core::sc_module_name& n) : sc_module(n) { SC_THREAD(run); }
  void run() { script(); }
};

TEST(HostLink, BothRoceportsCarryALargeWriteAtTheirCombinedRate) {
  sc_core::sc_set_time_resolution(1, sc_core::SC_FS);
  hw::GatewayConfig config;
  config.present = true;
  hw::Gateways gateways(config, hw::chip_preset("mk2").shape(4), hw::ChipEdge{});
  HostScript host("host");
  std::vector<uint8_t> out(1 << 20), back(1 << 20);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(i * 13 + 7);
  bool ran = false;
  host.script = [&] {
    // 16 messages of 64 KiB, alternating ports: each port carries 512 KiB at 12.5 GB/s
    // (41.943 us) while the DIMMs take the 64-byte bursts it delivers (25 GB/s of their 38.4).
    // The two ports run in step, so their bursts reach the same DIMM together, a pair every
    // 5.12 ns for the 4 bursts of an interleave block; the DIMM takes 6.67 ns a pair. The last
    // four pairs (DIMM 1) end 4 x 6.67 - 3 x 5.12 = 11.31 ns after the ports; then 2 us of
    // latency, to the cycle above.
    const double clock = hw::chip_preset("mk2").tile.clock_hz, cycle = 1 / clock;
    const sc_core::sc_time t0 = sc_core::sc_time_stamp();
    gateways.host_link(0).write(uint64_t{5} << 30, out.data(), out.size());
    const double seconds = (sc_core::sc_time_stamp() - t0).to_seconds();
    EXPECT_NEAR(seconds, 524288 / 12.5e9 + 8 * 64 / 19.2e9 - 3 * 64 / 12.5e9 + 2e-6 + cycle / 2,
                cycle / 2);
    // A read keeps an interleave block's bursts queued at each DIMM: message 0's 1024 bursts
    // take 1.707 us (both DIMMs at once), message 1's first burst 3.3 ns more, then the DDR latency
    // (50 ns: 67 cycles). Port 1 sends its 8 messages from there back to back (the DIMMs keep
    // ahead); port 0 ends 1.7 us before it.
    const sc_core::sc_time t1 = sc_core::sc_time_stamp();
    gateways.host_link(0).read(uint64_t{5} << 30, back.data(), back.size());
    EXPECT_NEAR((sc_core::sc_time_stamp() - t1).to_seconds(),
                65536 / 38.4e9 + 64 / 19.2e9 + 67 * cycle + 524288 / 12.5e9 + 2e-6 + cycle, cycle);
    EXPECT_EQ(back, out);
    const hw::Gateway& g = *gateways.all()[0];
    EXPECT_EQ(g.host_port(0, true).bytes, 524288u);
    EXPECT_EQ(g.host_port(1, true).bytes, 524288u);
    EXPECT_EQ(g.host_port(1, false).transfers, 8u);
    // Past the end of the two 64 GiB DIMMs: refused whole, naming the range.
    EXPECT_THAT([&] { gateways.host_link(0).write((uint64_t{128} << 30) - 4, out.data(), 8); },
                ::testing::ThrowsMessage<std::out_of_range>(
                    HasSubstr("host link to gateway 0: streaming-memory bytes "
                              "0x1ffffffffc..0x2000000004 lie outside its 137438953472 bytes")));
    ran = true;
  };
  sc_core::sc_start();
  EXPECT_TRUE(ran);
}

TEST(StreamingFromTiles, AWriteThenAReadAreTimedToTheCycle) {
  MachineRun run("streaming_timing", "m2000");
  ASSERT_EQ(run.report.outcome.result, ChipOutcome::Result::kExited) << run.report.outcome.message;
  EXPECT_EQ(run.machine().tile(0).outcome().exit_status, 0);  // the words came back
  const auto& barriers = run.machine().sync_network().barriers();
  ASSERT_EQ(barriers.size(), 3u);
  EXPECT_EQ(barriers[0].release, 284u);       // 54 + 150 + 80
  EXPECT_EQ(barriers[1].arrivals[0], 698u);   // the write done: W + 390, W = 308
  EXPECT_EQ(barriers[1].release, 928u);       // 698 + 230
  EXPECT_EQ(barriers[2].arrivals[0], 1752u);  // the read landed: Rd + 806, Rd = 946
  EXPECT_EQ(barriers[2].release, 1982u);
  const hw::Gateway& g = *run.machine().gateways().all()[0];
  EXPECT_EQ(g.chip_link(0, true).bytes, 128u);
  EXPECT_EQ(g.chip_link(0, false).bytes, 128u);
  EXPECT_EQ(g.dimm(0).bytes, 256u);  // both bursts of each transfer are in DIMM 0's block
  EXPECT_EQ(g.bytes_written(), 128u);
  EXPECT_EQ(g.bytes_read(), 128u);
  uint32_t words[32];
  g.memory().read((uint64_t{1} << 32) + 0x40, words, sizeof words);
  EXPECT_EQ(words[0], 0x11u);
  EXPECT_EQ(words[31], 0xdeadbeefu);
  EXPECT_EQ(run.report.streaming_bytes_written, 128u);
  EXPECT_EQ(run.report.streaming_bytes_read, 128u);
}

TEST(StreamingFromTiles, AnAddressPastTheDimmsStopsTheTile) {
  MachineRun run("streaming_outside", "m2000");
  ASSERT_EQ(run.report.outcome.result, ChipOutcome::Result::kFault);
  EXPECT_THAT(run.report.outcome.message, HasSubstr("chip 0 tile 0"));
  EXPECT_THAT(run.report.outcome.message,
              HasSubstr("ipu.smwrite of 32 words at streaming-memory address 0x2000000040 "
                        "reaches past the end of the gateway's 137438953472 bytes of streaming "
                        "memory"));
  EXPECT_THAT(run.report.outcome.message, HasSubstr("cycle 308"));
}

TEST(StreamingFromTiles, AnUnalignedAddressStopsTheTile) {
  MachineRun run("streaming_unaligned", "m2000");
  ASSERT_EQ(run.report.outcome.result, ChipOutcome::Result::kFault);
  EXPECT_THAT(run.report.outcome.message,
              HasSubstr("streaming-memory address 0x100000042 (CSR ipu.smaddr) is not word "
                        "aligned"));
}

TEST(StreamingFromTiles, APcieCardHasNoStreamingMemory) {
  MachineRun run("streaming_card", "mk2");
  ASSERT_EQ(run.report.outcome.result, ChipOutcome::Result::kFault);
  EXPECT_THAT(run.report.outcome.message,
              HasSubstr("ipu.smwrite on a platform without streaming memory"));
}

}  // namespace
}  // namespace ipu::test

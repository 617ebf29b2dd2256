// The exchange receive mux in Verilog (rtl/exchange/ipu_exchange_rx.v), verilated, against the
// C++ receive-mux model the exchange resolves with (hw/exchange/receive_mux.h), one clock per
// cycle over random receive schedules: words from several senders at once, select and buffer
// writes, buffers running full and left short, words after the boundary. Each cycle the RTL's
// write (address and data) and flags must be what the model decided for that cycle's words;
// the first mismatch is reported with the cycle's inputs.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <sstream>
#include <vector>

#include "Vipu_exchange_rx.h"
#include "hw/exchange/receive_mux.h"
#include "tests/support/random_stimulus.h"
#include "tlm/rtl_ports.h"
#include "verilated.h"

namespace ipu::test {
namespace {

using hw::RxCycle;
using hw::RxOutcome;
using hw::RxResult;
using tlm_rtl::kRtlMaxTiles;

std::string describe(const RxCycle& c) {
  std::ostringstream out;
  out << "cycle " << c.cycle << (c.late ? " (late)" : "") << " words {";
  for (const hw::RxWord& w : c.words)
    out << " " << w.source << ":0x" << std::hex << w.data << std::dec;
  out << " }";
  if (c.select_write) out << " select " << c.select;
  if (c.buffer_write)
    out << " buffer 0x" << std::hex << c.buffer_address << std::dec << "+" << c.buffer_words;
  if (c.close) out << " close";
  return out.str();
}

// Drives one schedule through the RTL; returns the cycles simulated.
size_t expect_equal_to_model(Vipu_exchange_rx& r, const std::vector<RxCycle>& cycles) {
  std::vector<RxResult> model;
  hw::ReceiveMux().run(cycles, model);
  auto clock = [&r] {
    r.clk = 0;
    r.eval();
    r.clk = 1;
    r.eval();
  };
  tlm_rtl::clear_bits(r.valid, kRtlMaxTiles / 32);
  r.start = 1;
  clock();
  r.start = 0;
  for (size_t i = 0; i < cycles.size(); ++i) {
    const RxCycle& c = cycles[i];
    for (const hw::RxWord& w : c.words) {
      tlm_rtl::set_bit(r.valid, w.source, true);
      r.data[w.source] = w.data;
    }
    r.late = c.late;
    r.select_write = c.select_write;
    r.select_none = c.select < 0;
    r.select_tile = c.select < 0 ? 0 : c.select;
    r.buffer_write = c.buffer_write;
    r.buffer_address_in = c.buffer_address;
    r.buffer_words_in = c.buffer_words;
    r.close = c.close;
    r.clk = 0;
    r.eval();
    // The model's decisions for the cycle, as the RTL's per-cycle outputs.
    bool late = false, wrong = false, no_buffer = false, overrun = false, write = false;
    uint32_t address = 0, data = 0;
    for (size_t k = 0; k < c.words.size(); ++k) {
      switch (model[i].outcomes[k]) {
        case RxOutcome::kLate: late = true; break;
        case RxOutcome::kWrongSource: wrong = true; break;
        case RxOutcome::kNoBuffer: no_buffer = true; break;
        case RxOutcome::kOverrun: overrun = true; break;
        case RxOutcome::kWritten:
          write = true;
          address = model[i].addresses[k];
          data = c.words[k].data;
      }
    }
    const std::string where = describe(c);
    EXPECT_EQ(static_cast<bool>(r.late_arrival), late) << where;
    EXPECT_EQ(static_cast<bool>(r.wrong_source), wrong) << where;
    EXPECT_EQ(static_cast<bool>(r.no_buffer), no_buffer) << where;
    EXPECT_EQ(static_cast<bool>(r.overrun), overrun) << where;
    EXPECT_EQ(static_cast<bool>(r.write), write) << where;
    if (write) {
      EXPECT_EQ(r.write_address, address) << where;
      EXPECT_EQ(r.write_data, data) << where;
    }
    EXPECT_EQ(static_cast<bool>(r.short_buffer), model[i].short_buffer) << where;
    if (model[i].short_buffer) {
      EXPECT_EQ(r.buffer_address, model[i].buffer_address) << where;
      EXPECT_EQ(r.buffer_words, model[i].buffer_words) << where;
      EXPECT_EQ(r.filled + (r.write ? 1u : 0u), model[i].filled) << where;
    }
    if (::testing::Test::HasFailure()) return i;
    clock();
    for (const hw::RxWord& w : c.words) tlm_rtl::set_bit(r.valid, w.source, false);
  }
  return cycles.size();
}

TEST(RtlExchangeRx, EqualsTheCppModelOnRandomSchedules) {
  std::mt19937 rng(20261122);
  VerilatedContext context;
  auto rtl = std::make_unique<Vipu_exchange_rx>(&context);
  size_t cycles = 0;
  while (cycles < 1'000'000 && !HasFailure())
    cycles += expect_equal_to_model(*rtl, random_schedule(rng));
  EXPECT_GE(cycles, 1'000'000u);
}

TEST(RtlExchangeRx, Corners) {
  VerilatedContext context;
  auto rtl = std::make_unique<Vipu_exchange_rx>(&context);
  auto cycle = [](uint64_t n, std::vector<hw::RxWord> words) {
    RxCycle c;
    c.cycle = n;
    c.words = std::move(words);
    return c;
  };
  // Senders 0 and 4095 (the ends of the bus); a one-word buffer filled then overrun; a word
  // before any select or buffer; a buffer replaced while short, and one closed short.
  std::vector<RxCycle> s;
  s.push_back(cycle(0, {{4095, 7}}));  // no tile selected
  s.back().select_write = true;
  s.back().select = 4095;
  s.push_back(cycle(1, {{4095, 8}}));  // selected, no buffer
  s.back().buffer_write = true;
  s.back().buffer_address = 0x4c000;
  s.back().buffer_words = 1;
  s.push_back(cycle(2, {{4095, 9}, {0, 10}}));  // written; sender 0 is the wrong source
  s.push_back(cycle(3, {{4095, 11}}));          // overrun
  s.back().buffer_write = true;
  s.back().buffer_address = 0x4d000;
  s.back().buffer_words = 3;
  s.push_back(cycle(4, {{4095, 12}}));
  s.back().buffer_write = true;  // replaced with 1 of 3 words: short
  s.back().buffer_address = 0x4e000;
  s.back().buffer_words = 2;
  s.push_back(cycle(5, {{4095, 13}}));
  s.back().close = true;  // closed with 1 of 2: short
  s.push_back(cycle(6, {{4095, 14}}));
  s.back().late = true;
  EXPECT_EQ(expect_equal_to_model(*rtl, s), s.size());
  std::vector<RxResult> model;
  hw::ReceiveMux().run(s, model);
  EXPECT_EQ(model[2].outcomes[0], RxOutcome::kWritten);
  EXPECT_EQ(model[2].outcomes[1], RxOutcome::kWrongSource);
  EXPECT_EQ(model[3].outcomes[0], RxOutcome::kOverrun);
  EXPECT_TRUE(model[4].short_buffer);
  EXPECT_TRUE(model[5].short_buffer);
  EXPECT_EQ(model[6].outcomes[0], RxOutcome::kLate);
}

}  // namespace
}  // namespace ipu::test

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
#include "tests/support/stimulus_budget.h"
#include "tlm/rtl_ports.h"
#include "verilated.h"

namespace ipu::test {
namespace {

using hw::RxCycle;
using hw::RxDecisions;
using hw::RxOutcome;
using hw::RxSchedule;
using tlm_rtl::kRtlMaxTiles;

std::string describe(const RxSchedule& s, const RxCycle& c) {
  std::ostringstream out;
  out << "cycle " << c.cycle << (c.late ? " (late)" : "") << " words {";
  for (uint32_t k = c.first_word; k < c.first_word + c.word_count; ++k)
    out << " " << s.words[k].source << ":0x" << std::hex << s.words[k].data << std::dec;
  out << " }";
  if (c.select_write) out << " select " << c.select;
  if (c.buffer_write)
    out << " buffer 0x" << std::hex << c.buffer_address << std::dec << "+" << c.buffer_words;
  if (c.close) out << " close";
  return out.str();
}

// Drives one schedule through the RTL; returns the cycles simulated.
size_t expect_equal_to_model(Vipu_exchange_rx& r, const RxSchedule& schedule) {
  RxDecisions model;
  hw::ReceiveMux().run(schedule, model);
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
  size_t next_short = 0;
  for (size_t i = 0; i < schedule.cycles.size(); ++i) {
    const RxCycle& c = schedule.cycles[i];
    const uint32_t end = c.first_word + c.word_count;
    for (uint32_t k = c.first_word; k < end; ++k) {
      tlm_rtl::set_bit(r.valid, schedule.words[k].source, true);
      r.data[schedule.words[k].source] = schedule.words[k].data;
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
    for (uint32_t k = c.first_word; k < end; ++k) {
      switch (model.outcomes[k]) {
        case RxOutcome::kLate: late = true; break;
        case RxOutcome::kWrongSource: wrong = true; break;
        case RxOutcome::kNoBuffer: no_buffer = true; break;
        case RxOutcome::kOverrun: overrun = true; break;
        case RxOutcome::kWritten:
          write = true;
          address = model.addresses[k];
          data = schedule.words[k].data;
      }
    }
    const hw::RxShortBuffer* short_buffer = nullptr;
    if (next_short < model.short_buffers.size() && model.short_buffers[next_short].cycle == i)
      short_buffer = &model.short_buffers[next_short++];
    const std::string where = describe(schedule, c);
    EXPECT_EQ(static_cast<bool>(r.late_arrival), late) << where;
    EXPECT_EQ(static_cast<bool>(r.wrong_source), wrong) << where;
    EXPECT_EQ(static_cast<bool>(r.no_buffer), no_buffer) << where;
    EXPECT_EQ(static_cast<bool>(r.overrun), overrun) << where;
    EXPECT_EQ(static_cast<bool>(r.write), write) << where;
    if (write) {
      EXPECT_EQ(r.write_address, address) << where;
      EXPECT_EQ(r.write_data, data) << where;
    }
    EXPECT_EQ(static_cast<bool>(r.short_buffer), short_buffer != nullptr) << where;
    if (short_buffer != nullptr) {
      EXPECT_EQ(r.buffer_address, short_buffer->buffer_address) << where;
      EXPECT_EQ(r.buffer_words, short_buffer->buffer_words) << where;
      EXPECT_EQ(r.filled + (r.write ? 1u : 0u), short_buffer->filled) << where;
    }
    if (::testing::Test::HasFailure()) return i;
    clock();
    for (uint32_t k = c.first_word; k < end; ++k)
      tlm_rtl::set_bit(r.valid, schedule.words[k].source, false);
  }
  return schedule.cycles.size();
}

TEST(RtlExchangeRx, EqualsTheCppModelOnRandomSchedules) {
  std::mt19937 rng(20261122);
  VerilatedContext context;
  auto rtl = std::make_unique<Vipu_exchange_rx>(&context);
  size_t cycles = 0;
  while (cycles < test::stimulus_budget(1'000'000) && !HasFailure())
    cycles += expect_equal_to_model(*rtl, random_schedule(rng));
  EXPECT_GE(cycles, test::stimulus_budget(1'000'000));
}

// Appends a cycle with `words` to `s`.
RxCycle& add(RxSchedule& s, uint64_t cycle, const std::vector<hw::RxWord>& words) {
  RxCycle c;
  c.cycle = cycle;
  c.first_word = static_cast<uint32_t>(s.words.size());
  c.word_count = static_cast<uint32_t>(words.size());
  s.words.insert(s.words.end(), words.begin(), words.end());
  s.cycles.push_back(c);
  return s.cycles.back();
}

TEST(RtlExchangeRx, Corners) {
  VerilatedContext context;
  auto rtl = std::make_unique<Vipu_exchange_rx>(&context);
  // Senders 0 and 4095 (the ends of the bus); a one-word buffer filled then overrun; a word
  // before any select or buffer; a buffer replaced while short, and one closed short.
  RxSchedule s;
  RxCycle* c = &add(s, 0, {{4095, 7}});  // no tile selected
  c->select_write = true;
  c->select = 4095;
  c = &add(s, 1, {{4095, 8}});  // selected, no buffer
  c->buffer_write = true;
  c->buffer_address = 0x4c000;
  c->buffer_words = 1;
  add(s, 2, {{0, 10}, {4095, 9}});  // written; sender 0 is the wrong source
  c = &add(s, 3, {{4095, 11}});     // overrun
  c->buffer_write = true;
  c->buffer_address = 0x4d000;
  c->buffer_words = 3;
  c = &add(s, 4, {{4095, 12}});
  c->buffer_write = true;  // replaced with 1 of 3 words: short
  c->buffer_address = 0x4e000;
  c->buffer_words = 2;
  add(s, 5, {{4095, 13}}).close = true;  // closed with 1 of 2: short
  add(s, 6, {{4095, 14}}).late = true;
  EXPECT_EQ(expect_equal_to_model(*rtl, s), s.cycles.size());
  RxDecisions model;
  hw::ReceiveMux().run(s, model);
  EXPECT_EQ(model.outcomes, (std::vector<RxOutcome>{RxOutcome::kWrongSource, RxOutcome::kNoBuffer,
                                                    RxOutcome::kWrongSource, RxOutcome::kWritten,
                                                    RxOutcome::kOverrun, RxOutcome::kWritten,
                                                    RxOutcome::kWritten, RxOutcome::kLate}));
  ASSERT_EQ(model.short_buffers.size(), 2u);
  EXPECT_EQ(model.short_buffers[0].cycle, 4u);
  EXPECT_EQ(model.short_buffers[0].filled, 1u);
  EXPECT_EQ(model.short_buffers[1].cycle, 5u);
  EXPECT_EQ(model.short_buffers[1].filled, 1u);
}

}  // namespace
}  // namespace ipu::test

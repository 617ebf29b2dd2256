#include "tlm/rtl_wrappers.h"

#include <fmt/format.h>

#include <algorithm>

#include "iss/amp.h"
#include "tlm/rtl_ports.h"

namespace ipu::tlm_rtl {
void PrngRtl::execute(PrngTransaction& t) {
  auto& r = rtl();
  const bool holds = r.state[0] == static_cast<uint32_t>(t.state.s0) &&
                     r.state[1] == static_cast<uint32_t>(t.state.s0 >> 32) &&
                     r.state[2] == static_cast<uint32_t>(t.state.s1) &&
                     r.state[3] == static_cast<uint32_t>(t.state.s1 >> 32);
  if (!holds) {  // another context's state: load this one's
    r.seed_value[0] = static_cast<uint32_t>(t.state.s0);
    r.seed_value[1] = static_cast<uint32_t>(t.state.s0 >> 32);
    r.seed_value[2] = static_cast<uint32_t>(t.state.s1);
    r.seed_value[3] = static_cast<uint32_t>(t.state.s1 >> 32);
    r.seed = 1;
    r.step = 0;
    clock();
    r.seed = 0;
  }
  r.step = 1;
  clock();
  r.step = 0;
  t.out = r.out;
  t.state.s0 = uint64_t{r.state[1]} << 32 | r.state[0];
  t.state.s1 = uint64_t{r.state[3]} << 32 | r.state[2];
}

void F32ToF16Rtl::execute(F32ToF16Transaction& t) {
  auto& r = rtl();
  r.a = t.a;
  r.rm = t.rm & 0xf;
  r.random = t.random;
  r.in_valid = 1;
  for (unsigned c = 1; c <= kLatency; ++c) {
    clock();
    r.in_valid = 0;
    if (static_cast<bool>(r.out_valid) != (c == kLatency))
      throw RtlMismatch(
          fmt::format("the f32->f16 RTL {} its output {} clock(s) after its input 0x{:08x}, not {}",
                      r.out_valid ? "gave" : "had not given", c, t.a, kLatency));
  }
  t.y = r.y;
  t.flags = r.flags;
}

void AmpLaneRtl::execute(AmpLaneTransaction& t) {
  auto& r = rtl();
  std::vector<iss::AmpLaneRow>& rows = *t.rows;
  const size_t latency = iss::AmpUnit::kLaneLatency;
  for (size_t i = 0; i < rows.size() + latency - 1; ++i) {
    r.in_valid = i < rows.size();
    if (i < rows.size()) {
      const iss::AmpLaneRow& row = rows[i];
      r.half = row.half;
      r.terms = row.terms;
      for (unsigned j = 0; j < 4; ++j) {
        r.w[j] = row.w[j];
        r.x[j] = row.x[j];
      }
      r.acc_in = row.acc;
    }
    clock();
    const bool due = i + 1 >= latency;  // row i + 1 - latency is due after this clock
    if (static_cast<bool>(r.out_valid) != due)
      throw RtlMismatch(
          fmt::format("the AMP lane RTL {} a result {} clock(s) into a {}-row issue "
                      "(latency {})",
                      r.out_valid ? "gave" : "did not give", i + 1, rows.size(), latency));
    if (due) rows[i + 1 - latency].acc = r.acc_out;
  }
  r.in_valid = 0;
}

void SyncTreeRtl::execute(BarrierTransaction& t) {
  auto& r = rtl();
  constexpr unsigned kWords = kRtlMaxTiles / 32;
  clear_bits(r.mask, kWords);
  clear_bits(r.arrive, kWords);
  for (unsigned tile : *t.members) set_bit(r.mask, tile, true);
  r.latency = t.latency;
  r.start = 1;
  clock();
  r.start = 0;

  std::vector<std::pair<uint64_t, unsigned>> order;  // (cycle, tile)
  for (const auto& [tile, cycle] : *t.arrivals) order.emplace_back(cycle, tile);
  std::sort(order.begin(), order.end());
  for (size_t i = 0; i < order.size();) {
    const uint64_t cycle = order[i].first;
    size_t end = i;
    for (; end < order.size() && order[end].first == cycle; ++end)
      set_bit(r.arrive, order[end].second, true);
    settle();
    const bool last = end == order.size();
    if (r.released && !(last && t.latency == 0))
      throw RtlMismatch(fmt::format(
          "the sync tree RTL released at cycle {} before every member had arrived", cycle));
    if (r.released) {
      t.release = cycle;
      clock();
      clear_bits(r.arrive, kWords);
      return;
    }
    clock();
    for (size_t k = i; k < end; ++k) set_bit(r.arrive, order[k].second, false);
    i = end;
  }
  if (r.stray) throw RtlMismatch("the sync tree RTL flagged an arrival outside the group mask");
  const uint64_t last = order.empty() ? 0 : order.back().first;
  for (uint64_t k = 1; k <= uint64_t{t.latency} + 1; ++k) {
    settle();
    if (r.released) {
      t.release = last + k;
      clock();
      return;
    }
    clock();
  }
  throw RtlMismatch(
      fmt::format("the sync tree RTL did not release within {} cycles of the last "
                  "arrival (cycle {}); the configured latency is {}",
                  t.latency + 1, last, t.latency));
}

void ExchangeRxRtl::execute(ExchangeRxTransaction& t) {
  auto& r = rtl();
  const hw::RxSchedule& schedule = *t.schedule;
  hw::RxDecisions& decisions = *t.decisions;
  decisions.clear();
  clear_bits(r.valid, kRtlMaxTiles / 32);
  r.start = 1;
  clock();
  r.start = 0;
  int listening = -1;  // as selected through the RTL's select writes, to attribute its flags
  for (size_t i = 0; i < schedule.cycles.size(); ++i) {
    const hw::RxCycle& c = schedule.cycles[i];
    const hw::RxWord* words = schedule.words.data() + c.first_word;
    for (const hw::RxWord* w = words; w != words + c.word_count; ++w) {
      if (get_bit(r.valid, w->source))
        throw RtlMismatch(fmt::format(
            "two words from tile {} reach one receiver in cycle {}: the exchange receive mux RTL "
            "takes one word per sender per cycle (exchange.words-per-cycle 1)",
            w->source, c.cycle));
      set_bit(r.valid, w->source, true);
      r.data[w->source] = w->data;
    }
    r.late = c.late;
    r.select_write = c.select_write;
    r.select_none = c.select < 0;
    r.select_tile = c.select < 0 ? 0 : static_cast<uint32_t>(c.select);
    r.buffer_write = c.buffer_write;
    r.buffer_address_in = c.buffer_address;
    r.buffer_words_in = c.buffer_words;
    r.close = c.close;
    settle();
    bool unselected = false, hit = false;
    for (const hw::RxWord* w = words; w != words + c.word_count; ++w) {
      hw::RxOutcome outcome = hw::RxOutcome::kWritten;
      uint32_t address = 0;
      if (c.late) {
        outcome = hw::RxOutcome::kLate;
      } else if (static_cast<int>(w->source) != listening) {
        unselected = true;
        outcome = hw::RxOutcome::kWrongSource;
      } else {  // the selected sender's word: written, or flagged
        hit = true;
        if (r.write && r.write_data != w->data)
          throw RtlMismatch(
              fmt::format("the exchange receive mux RTL passed 0x{:08x} from tile "
                          "{} in cycle {}, which sent 0x{:08x}",
                          r.write_data, w->source, c.cycle, w->data));
        if (r.write)
          address = r.write_address;
        else if (r.no_buffer || r.overrun)
          outcome = r.no_buffer ? hw::RxOutcome::kNoBuffer : hw::RxOutcome::kOverrun;
        else
          throw RtlMismatch(
              fmt::format("the exchange receive mux RTL neither wrote nor flagged "
                          "the word from tile {} in cycle {}",
                          w->source, c.cycle));
      }
      decisions.outcomes.push_back(outcome);
      decisions.addresses.push_back(address);
    }
    if (static_cast<bool>(r.late_arrival) != (c.late && c.word_count > 0) ||
        static_cast<bool>(r.wrong_source) != unselected ||
        static_cast<bool>(r.write || r.no_buffer || r.overrun) != hit)
      throw RtlMismatch(fmt::format(
          "the exchange receive mux RTL's flags in cycle {} (late_arrival {}, wrong_source {}, "
          "write {}, no_buffer {}, overrun {}) disagree with its inputs",
          c.cycle, r.late_arrival, r.wrong_source, r.write, r.no_buffer, r.overrun));
    if (r.short_buffer)
      decisions.short_buffers.push_back(
          {i, r.buffer_address, r.buffer_words, r.filled + (r.write ? 1u : 0u)});
    clock();
    for (const hw::RxWord* w = words; w != words + c.word_count; ++w)
      set_bit(r.valid, w->source, false);
    if (c.select_write) listening = c.select;
  }
}

}  // namespace ipu::tlm_rtl

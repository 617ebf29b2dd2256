// Random stimulus shared by the RTL block tests and the TLM wrapper loopback tests.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "hw/exchange/receive_mux.h"
#include "tlm/rtl_ports.h"

namespace ipu::test {

// One receiver's exchange phase: words from 1-4 senders anywhere on the 4096-tile bus (one word
// per sender per cycle), select and buffer writes, a boundary after which words are late.
inline hw::RxSchedule random_schedule(std::mt19937& rng) {
  auto below = [&rng](unsigned n) { return static_cast<unsigned>(rng() % n); };
  std::vector<unsigned> senders(1 + below(4));
  for (unsigned& s : senders) s = below(tlm_rtl::kRtlMaxTiles);
  const unsigned length = 1 + below(300), boundary = below(length + 20);
  const unsigned density = 1 + below(10);  // in tenths: how often a sender's word comes
  hw::RxSchedule schedule;
  uint64_t cycle = below(4);
  for (unsigned i = 0; i < length; ++i, cycle += 1 + (below(4) == 0 ? below(5) : 0)) {
    hw::RxCycle c;
    c.cycle = cycle;
    c.late = i >= boundary;
    c.first_word = static_cast<uint32_t>(schedule.words.size());
    for (unsigned s : senders) {
      bool taken = false;  // a sender drawn twice still sends once a cycle
      for (size_t k = c.first_word; k < schedule.words.size(); ++k)
        taken |= schedule.words[k].source == s;
      if (!taken && below(10) < density)
        schedule.words.push_back({s, static_cast<uint32_t>(rng())});
    }
    c.word_count = static_cast<uint32_t>(schedule.words.size()) - c.first_word;
    if (i == 0 || below(40) == 0) {
      c.select_write = true;
      c.select = below(12) == 0 ? -1 : static_cast<int>(senders[below(senders.size())]);
    }
    if (i == 0 ? below(8) != 0 : below(30) == 0) {
      c.buffer_write = true;
      c.buffer_address = 0x4c000 + 4 * below(0x10000);
      c.buffer_words = below(6) == 0 ? 1 : 1 + below(40);
    }
    c.close = i + 1 == length && !c.buffer_write;
    schedule.cycles.push_back(c);
  }
  return schedule;
}

struct Barrier {
  std::vector<unsigned> members;   // ascending
  std::vector<uint64_t> arrivals;  // per member
  uint32_t latency = 0;
};

// A barrier of a group of any shape (group 0 of a chip of 1-4096 tiles, a GSP range, a sparse
// subset), arrivals over a window where many collide, latency 0-11 or the Mk2's 150.
inline Barrier random_barrier(std::mt19937& rng) {
  Barrier b;
  auto below = [&rng](unsigned n) { return static_cast<unsigned>(rng() % n); };
  switch (below(3)) {
    case 0: {  // group 0 of a chip of 1 to 4096 tiles
      const unsigned n = 1 + below(tlm_rtl::kRtlMaxTiles);
      for (unsigned t = 0; t < n; ++t) b.members.push_back(t);
      break;
    }
    case 1: {  // a GSP range
      const unsigned first = below(tlm_rtl::kRtlMaxTiles),
                     n = 1 + below(tlm_rtl::kRtlMaxTiles - first);
      for (unsigned t = first; t < first + n; ++t) b.members.push_back(t);
      break;
    }
    default: {  // a sparse subset, at least one tile
      const unsigned stride = 1 + below(200);
      for (unsigned t = below(stride); t < tlm_rtl::kRtlMaxTiles; t += 1 + below(stride))
        b.members.push_back(t);
      if (b.members.empty()) b.members.push_back(below(tlm_rtl::kRtlMaxTiles));
    }
  }
  const unsigned window = 1 + below(below(4) == 0 ? 400 : 12);
  for (size_t i = 0; i < b.members.size(); ++i) b.arrivals.push_back(below(window));
  b.latency = below(8) == 0 ? 150 : below(12);
  return b;
}

}  // namespace ipu::test

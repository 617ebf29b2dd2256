// One IPU-Link between two chips' link ports: two independent directions, each carrying
// `ipulink.bytes-per-second` (16 GB/s) after `ipulink.latency-ns` plus the word's
// serialisation. Inter-chip exchange is compiled like on-chip exchange, so the link has no
// queue to absorb a burst: the exchange hands it, phase by phase, every word that crosses it
// with the cycle it enters, and the link admits them only while each cycle's words fit in
// that cycle's capacity (a fraction of a word carried over, as the rate is not a whole number
// of words per cycle). The first word beyond that is an over-subscription, which the exchange
// reports naming the link, the cycle and the sender. Counters: bytes, words and busy cycles per
// direction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <systemc>
#include <vector>

#include "ipulink_config.h"

namespace ipu::hw {

class IpuLink : public sc_core::sc_module {
 public:
  struct End {
    unsigned chip, port;
  };
  struct Crossing {
    uint64_t cycle;  // tile cycle the word enters the link
    uint32_t bytes;
  };
  struct Counters {
    uint64_t words = 0, bytes = 0;
    double busy_cycles = 0;  // cycles the direction spent serialising (bytes / rate)
    uint64_t first_cycle = 0, last_cycle = 0;  // the first and last word's entry (words > 0)
  };

  IpuLink(const sc_core::sc_module_name& name, const IpuLinkConfig& config, double clock_hz, End a,
          End b);

  // Tile cycles from entering the link to leaving it at the far port: latency plus one
  // word's serialisation, rounded up.
  uint64_t hop_cycles() const { return hop_cycles_; }
  // Bytes the link carries per tile cycle, each way.
  double bytes_per_cycle() const { return bytes_per_cycle_; }
  const End& end(unsigned side) const { return side == 0 ? a_ : b_; }
  // "chip 0 port 3 -> chip 1 port 3" for direction 0 (a to b) or 1.
  std::string describe(unsigned direction) const;

  // Admits one exchange phase's words in one direction, sorted by cycle. Returns the index of
  // the first word that does not fit (the link is over-subscribed), or npos; only admitted
  // words are counted.
  size_t admit(unsigned direction, const std::vector<Crossing>& crossings);
  const Counters& counters(unsigned direction) const { return counters_[direction]; }

 private:
  IpuLinkConfig config_;
  End a_, b_;
  double clock_hz_;
  double bytes_per_cycle_;
  uint64_t hop_cycles_;
  Counters counters_[2];
};

}  // namespace ipu::hw

#include "ipulink.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace ipu::hw {

IpuLink::IpuLink(const sc_core::sc_module_name& name, const IpuLinkConfig& config, double clock_hz,
                 End a, End b)
    : sc_module(name),
      config_(config),
      a_(a),
      b_(b),
      clock_hz_(clock_hz),
      bytes_per_cycle_(config.bytes_per_cycle(clock_hz)),
      hop_cycles_(ipulink_hop_cycles(config, clock_hz)) {}

std::string IpuLink::describe(unsigned direction) const {
  const End& from = direction == 0 ? a_ : b_;
  const End& to = direction == 0 ? b_ : a_;
  return fmt::format("IPU-Link chip {} port {} -> chip {} port {}", from.chip, from.port, to.chip,
                     to.port);
}

size_t IpuLink::admit(unsigned direction, const std::vector<Crossing>& crossings) {
  // Integer arithmetic in units of 1 / (clock_hz) bytes: a cycle carries bytes_per_second of
  // them and a byte costs clock_hz, so rates that are not whole bytes per cycle stay exact.
  const auto capacity = static_cast<uint64_t>(std::llround(config_.bytes_per_second));
  const auto per_byte = static_cast<uint64_t>(std::llround(clock_hz_));
  // `level`: units waiting to be serialised, this cycle's words included. A word must begin
  // crossing in the cycle it enters (the link has no queue), so it fits while less than one
  // cycle's worth is ahead of it; what a word leaves over runs into the next cycle.
  uint64_t level = 0, last = 0;
  Counters& n = counters_[direction];
  for (size_t i = 0; i < crossings.size(); ++i) {
    const Crossing& c = crossings[i];
    if (i > 0 && c.cycle > last) {
      const uint64_t cycles = c.cycle - last;  // each served `capacity`
      level = cycles >= (level + capacity - 1) / capacity ? 0 : level - cycles * capacity;
    }
    last = c.cycle;
    if (level >= capacity) return i;
    level += uint64_t{c.bytes} * per_byte;
    if (n.words == 0) n.first_cycle = c.cycle;
    n.first_cycle = std::min(n.first_cycle, c.cycle);
    n.last_cycle = std::max(n.last_cycle, c.cycle);
    ++n.words;
    n.bytes += c.bytes;
    n.busy_cycles += c.bytes / bytes_per_cycle_;
  }
  return std::numeric_limits<size_t>::max();
}

}  // namespace ipu::hw

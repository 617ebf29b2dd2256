// What the RTL wrappers and tests share about the verilated blocks' ports: the tile count the
// sync tree and receive mux are built for, and bits of Verilator's wide ports (VlWide: 32-bit
// words, bit b in word b / 32). Free of SystemC and Verilator headers.
#pragma once

#include <cstdint>

namespace ipu::tlm_rtl {

// TILES of rtl/sync/ipu_sync_tree.v and SENDERS of rtl/exchange/ipu_exchange_rx.v: the largest
// chip the configuration allows.
inline constexpr unsigned kRtlMaxTiles = 4096;

template <class Wide>
void set_bit(Wide& wide, unsigned bit, bool value) {
  const uint32_t mask = 1u << (bit % 32);
  wide[bit / 32] = value ? wide[bit / 32] | mask : wide[bit / 32] & ~mask;
}
template <class Wide>
bool get_bit(const Wide& wide, unsigned bit) {
  return ((wide[bit / 32] >> (bit % 32)) & 1u) != 0;
}
template <class Wide>
void clear_bits(Wide& wide, unsigned words) {
  for (unsigned i = 0; i < words; ++i) wide[i] = 0;
}

}  // namespace ipu::tlm_rtl

// The bound under BSP for the best split of a planned matmul (bench/matmul_planned --bounds,
// bench/transformer_layer): the fewest cycles any split of the product into pm x pn x pk blocks
// (16-row groups, 16-deep K passes, as the AMP takes them) could take when each phase waits for
// the one before, as BSP makes it: the AMP at its peak (64 MACs a tile cycle), every tile
// receiving its blocks of A and B at 4 bytes a cycle, with pk > 1 the partial sums (f32,
// (pk - 1) / pk of a block to receive and add, at 2 additions a cycle), and a 150-cycle sync
// between phases. With weight loads, what this tile model's AMP costs beyond its peak too: each
// worker context holds its own weights, so every (16-row group, pass) a worker takes costs it
// four ipu.ampw (their issue slots from the instruction table) before its columns' four ipu.amp
// each, and a context issues once every 6 cycles; the six workers split the tile's groups,
// columns and passes in whichever way costs the busiest one least (a split of passes' partial
// sums counted free, so it stays a floor).
#pragma once

#include <algorithm>
#include <cstddef>

#include "iss/isa.h"

namespace ipu::bench {

struct Bound {
  double cycles = 0, compute = 0, receive = 0, partials = 0;
  unsigned pm = 0, pn = 0, pk = 0;
};

// The fewest cycles a tile's six workers can take over a block of `groups` 16-row groups,
// `passes` K passes and `columns` columns when each context loads its own weights: a worker's
// (group, pass) is four ipu.ampw, then four ipu.amp a column; a context issues every 6 cycles.
inline double amp_worker_floor(size_t groups, size_t passes, size_t columns) {
  const double weights = 4.0 * ipu::iss::spec_of(ipu::iss::Op::ipu_ampw)->issue_slots,
               column = 4.0 * ipu::iss::spec_of(ipu::iss::Op::ipu_amp)->issue_slots;
  const auto share = [](size_t n, size_t parts) {
    return static_cast<double>((n + parts - 1) / parts);
  };
  double best = 1e300;
  for (size_t wg = 1; wg <= 6; ++wg)
    for (size_t wc = 1; wg * wc <= 6; ++wc) {
      if (6 % (wg * wc) != 0) continue;
      const size_t wp = 6 / (wg * wc);
      const double slots =
          share(groups, wg) * share(passes, wp) * (weights + column * share(columns, wc));
      best = std::min(best, 6 * slots);
    }
  return best;
}

// with_weight_loads: the AMP's time on a tile is at least amp_worker_floor's, besides its peak.
inline Bound bsp_bound(size_t m_rows, size_t k_depth, size_t n_columns, unsigned tiles,
                       bool with_weight_loads) {
  constexpr double kSync = 150;  // sync.internal cycles (docs/chip.md)
  const size_t row_groups = (m_rows + 15) / 16, passes = (k_depth + 15) / 16;
  Bound best;
  best.cycles = 1e300;
  for (size_t pk = 1; pk <= passes; ++pk)
    for (size_t pm = 1; pm <= row_groups && pm * pk <= tiles; ++pm)
      for (size_t pn = 1; pn <= n_columns && pm * pn * pk <= tiles; ++pn) {
        const size_t gm = (row_groups + pm - 1) / pm, pp = (passes + pk - 1) / pk,
                     nb = (n_columns + pn - 1) / pn;
        const double m = 16.0 * static_cast<double>(gm), k = 16.0 * static_cast<double>(pp),
                     n = static_cast<double>(nb);
        Bound b;
        b.compute = m * n * k / 64;  // 64 f16 MACs a cycle
        if (with_weight_loads) b.compute = std::max(b.compute, amp_worker_floor(gm, pp, nb));
        b.receive = 2 * (m * k + k * n) / 4;  // f16 blocks at 4 bytes a cycle
        const double share = static_cast<double>(pk - 1) / static_cast<double>(pk);
        b.partials = pk > 1 ? share * m * n + share * m * n / 2 : 0;  // f32 in, then added
        b.cycles = b.compute + b.receive + b.partials + (pk > 1 ? 4 : 2) * kSync;
        b.pm = static_cast<unsigned>(pm), b.pn = static_cast<unsigned>(pn);
        b.pk = static_cast<unsigned>(pk);
        if (b.cycles < best.cycles) best = b;
      }
  return best;
}

}  // namespace ipu::bench

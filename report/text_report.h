// The text report ipu-sim prints after a run: how it ended, the machine's counts, the exit
// statuses when tiles differ, the energy, and each context's counts.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <vector>

#include "hw/common/run_report.h"
#include "hw/energy/energy.h"

namespace ipu::report {

// How the run ended, the machine's counts, its energy, the simulator's speed and the context
// table.
void print_report(std::ostream& out, const hw::RunReport& report, const hw::EnergyReport& energy);
// The energy lines of the summary: joules by kind of block, average watts per chip and in all.
void print_energy(std::ostream& out, const hw::EnergyReport& energy);
// The per-context table: each context of each tile for up to kContextTableTiles tiles, else
// each context summed over the tiles with the least and most active cycles of one tile. A
// single tile (run-elf) prints its contexts alone.
inline constexpr size_t kContextTableTiles = 8;
void print_context_table(std::ostream& out, const std::vector<hw::TileCounts>& tiles,
                         unsigned tiles_per_chip, unsigned chips);

}  // namespace ipu::report

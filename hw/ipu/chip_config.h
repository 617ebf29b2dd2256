// Figures of one IPU chip: its tile count and its blocks' configurations, each of which the
// block owns (tile, exchange, sync, pcie). This file only composes them; visit_parameters()
// visits every block's list in turn, so ipu-sim's --help, --config-dump and configuration files
// all use the blocks' names. Presets: "mk2" (GC200, 1.325 GHz) and "bow" (1.85 GHz).
#pragma once

#include <string>

#include "base/parameters.h"
#include "hw/common/machine_shape.h"
#include "hw/exchange/exchange_config.h"
#include "hw/pcie/pcie_config.h"
#include "hw/sync/sync_config.h"
#include "iss/tile_config.h"

namespace ipu::hw {

struct ChipConfig {
  std::string preset = "mk2";
  unsigned tiles = 1472;
  iss::TileConfig tile;
  ExchangeConfig exchange;
  SyncConfig sync;
  PcieConfig pcie;

  // The shape of a machine of `chips` such chips.
  MachineShape shape(unsigned chips = 1) const { return {chips, tiles, tile.clock_hz}; }
};

template <typename C, typename Visitor, base::if_config_t<C, ChipConfig> = 0>
void visit_parameters(C& c, Visitor&& v) {
  v(base::Parameter{"chip.tiles", "tiles",
                    "tiles on the chip (1472 on Mk2 and Bow; any count from 1 for tests)", 1, 4096},
    c.tiles);
  visit_parameters(c.tile, v);
  visit_parameters(c.exchange, v);
  visit_parameters(c.sync, v);
  visit_parameters(c.pcie, v);
}

// The named preset; throws std::invalid_argument for an unknown name.
ChipConfig chip_preset(const std::string& name);

// Checks the figures make a chip of a machine of `chips` (each block's own checks, and the
// sync groups against the tiles and chips); throws std::invalid_argument naming the parameter.
void validate(const ChipConfig& config, unsigned chips = 1);

}  // namespace ipu::hw

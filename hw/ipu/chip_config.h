// Figures of one IPU chip. Each is a named, typed, defaulted parameter with its unit and meaning,
// visited by visit_parameters() so that ipu-sim's --help, --config-dump and configuration files
// all use the same names. Presets: "mk2" (GC200, 1.325 GHz) and "bow" (1.85 GHz).
#pragma once

#include <cstdint>
#include <string>

#include "hw/ipu/parameters.h"
#include "hw/tile/tile_config.h"

namespace ipu::hw {

struct ExchangeConfig {
  unsigned words_per_cycle = 1;     // 4 B/cycle out and 4 B/cycle in per tile
  unsigned tiles_per_column = 64;   // layout: tile t sits in column t / tiles_per_column
  unsigned base_latency = 16;       // send-to-arrival cycles between tiles of one column
  unsigned latency_per_column = 1;  // extra cycles per column between sender and receiver
};

struct SyncConfig {
  unsigned internal_cycles = 150;  // internal (one chip) sync: last arrival to release
  // Sync groups for grouped sync (GSP), "1:0-31;2:32-63" (group: tile ranges). Group 0 is every
  // tile that has a program.
  std::string groups;
  // External sync (every chip of a hardware sync group): Graphcore's model, 15 ns per hop with
  // hops = 1 + (chips / 2) / 2, there and back, after the chip's own internal sync.
  double external_ns_per_hop = 15;
  // The chips of hardware sync groups GS1 and GS2, as "0-1;2-3" (each part syncs on its own);
  // empty: every chip of the machine.
  std::string gs1, gs2;
};

struct HostLinkConfig {
  double bytes_per_second = 32e9;  // PCIe Gen4 x16: 32 GB/s each way, 64 GB/s both together
  double latency_ns = 1000;        // per DMA transaction: descriptor fetch to first data
};

struct ChipConfig {
  std::string preset = "mk2";
  unsigned tiles = 1472;
  TileConfig tile;
  ExchangeConfig exchange;
  SyncConfig sync;
  HostLinkConfig pcie;

  // Send-to-arrival latency between two tiles (docs/chip.md).
  unsigned exchange_latency(unsigned from, unsigned to) const {
    const unsigned a = from / exchange.tiles_per_column, b = to / exchange.tiles_per_column;
    return exchange.base_latency + exchange.latency_per_column * (a > b ? a - b : b - a);
  }
};

// Calls v(name, member, unit, meaning) for every chip parameter (tile parameters included).
template <typename Visitor>
void visit_parameters(ChipConfig& c, Visitor&& v) {
  v("chip.tiles", c.tiles, "tiles",
    "tiles on the chip (1472 on Mk2 and Bow; any count from 1 for tests)");
  visit_parameters(c.tile, v);
  v("exchange.words-per-cycle", c.exchange.words_per_cycle, "words",
    "32-bit words a tile sends, and receives, per cycle (1 = 4 B/cycle)");
  v("exchange.tiles-per-column", c.exchange.tiles_per_column, "tiles",
    "tiles per column of the exchange layout (tile t is in column t / this)");
  v("exchange.base-latency", c.exchange.base_latency, "cycles",
    "send-to-arrival latency between tiles of the same column");
  v("exchange.latency-per-column", c.exchange.latency_per_column, "cycles",
    "extra latency per column between sender and receiver");
  v("sync.internal-cycles", c.sync.internal_cycles, "cycles",
    "internal sync: cycles from the last tile's arrival to the release (~150 on Mk2)");
  v("sync.groups", c.sync.groups, "groups",
    "sync groups for GSP, e.g. \"1:0-31;2:32-63\"; group 0 is every tile with a program");
  v("sync.external-ns-per-hop", c.sync.external_ns_per_hop, "ns",
    "external sync: latency per hop, counted there and back (hops = 1 + (chips/2)/2)");
  v("sync.gs1", c.sync.gs1, "chips",
    "chips of hardware sync group GS1, e.g. \"0-1;2-3\" (each part syncs alone); empty: all");
  v("sync.gs2", c.sync.gs2, "chips", "chips of hardware sync group GS2, as sync.gs1");
  v("pcie.bytes-per-second", c.pcie.bytes_per_second, "B/s",
    "host link DMA bandwidth in each direction (PCIe Gen4 x16: 32e9; both directions at once)");
  v("pcie.latency-ns", c.pcie.latency_ns, "ns", "host link latency per DMA transaction");
}

// "tile 5" on one chip, "chip 1 tile 5" on a machine of several (`machine_tile` is
// chip * tiles per chip + tile, the numbering the exchange and sync use).
std::string tile_name(unsigned machine_tile, unsigned tiles_per_chip, unsigned chips);

// The named preset; throws std::invalid_argument for an unknown name.
ChipConfig chip_preset(const std::string& name);

// Checks the figures make a chip; throws std::invalid_argument naming the parameter.
void validate(const ChipConfig& config);

}  // namespace ipu::hw

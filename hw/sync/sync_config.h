// Figures of the sync network (hw/sync/sync_network.h): the internal barrier's latency, the
// GSP sync groups of a chip's tiles, and the external sync across chips (Graphcore's model of
// 15 ns per hop; the hardware sync groups GS1 and GS2).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/parameters.h"
#include "hw/common/machine_shape.h"

namespace ipu::hw {

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

template <typename C, typename Visitor, base::if_config_t<C, SyncConfig> = 0>
void visit_parameters(C& c, Visitor&& v) {
  v(
      base::Parameter{
          "sync.internal-cycles", "cycles",
          "internal sync: cycles from the last tile's arrival to the release (~150 on Mk2)", 0,
          1e9},
      c.internal_cycles);
  v(
      base::Parameter{
          "sync.groups", "groups",
          "sync groups for GSP, e.g. \"1:0-31;2:32-63\"; group 0 is every tile with a program"},
      c.groups);
  v(
      base::Parameter{
          "sync.external-ns-per-hop", "ns",
          "external sync: latency per hop, counted there and back (hops = 1 + (chips/2)/2)", 0,
          1e9},
      c.external_ns_per_hop);
  v(
      base::Parameter{
          "sync.gs1", "chips",
          "chips of hardware sync group GS1, e.g. \"0-1;2-3\" (each part syncs alone); empty: "
          "all"},
      c.gs1);
  v(base::Parameter{"sync.gs2", "chips", "chips of hardware sync group GS2, as sync.gs1"}, c.gs2);
}

// The sync groups a tile names in ipu.sync (the firmware's ipu.h numbers them alike): 0 is
// every tile of its chip, 1 .. kExternal - 1 the GSP groups of sync.groups, then the machine's.
namespace sync_group {
inline constexpr uint32_t kExternal = 0x40000000u;  // every chip of the machine
inline constexpr uint32_t kGs1 = 0x40000001u;       // the chips of this chip's GS1 part
inline constexpr uint32_t kGs2 = 0x40000002u;
// Host syncs: kHost | id syncs every active tile with the host, which moves data for transfer
// `id` while the tiles wait; kHostCommand is the dispatch of the next program.
inline constexpr uint32_t kHost = 0x80000000u;
inline constexpr uint32_t kHostCommand = 0x7fffffffu;
}  // namespace sync_group

// Parses sync.groups ("1:0-31;2:32-63;3:5") into group -> member tiles; a tile listed twice in
// a group, or a group with no tiles, is an error.
std::map<unsigned, std::vector<unsigned>> parse_sync_groups(const std::string& text,
                                                            unsigned tiles);
// Parses sync.gs1 / sync.gs2 ("0-1;2-3") into parts of chips; empty text is one part of every
// chip. A chip in two parts, or a part with no chips, is an error.
std::vector<std::vector<unsigned>> parse_chip_groups(const std::string& name,
                                                     const std::string& text, unsigned chips);
// Cycles an external sync of `chips` chips adds to the internal sync (Graphcore's model).
uint64_t external_sync_cycles(const SyncConfig& config, double clock_hz, unsigned chips);

// Checks the ranges, and the groups against the machine's tiles and chips; throws
// std::invalid_argument naming the parameter.
void validate(const SyncConfig& config, const MachineShape& shape);

}  // namespace ipu::hw

// The compiler's exchange scheduler: turns one exchange phase's transfers (runs of words from a
// tile to one or more tiles, anywhere on the machine) into per-tile send and receive actions at
// cycle offsets from the phase's sync, with the exchange's and the IPU-Links' cost models, so
// that the phase runs without a conflict on any tile, port or link (docs/sdk.md).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "firmware/include/ipu_program.h"
#include "hw/machine/machine_config.h"
#include "sdk/compiler/compiler.h"

namespace ipu::sdk {

// Words from one tile to others; tiles are machine tiles (chip * chip tiles + tile).
struct Transfer {
  unsigned source_tile;
  uint32_t source_address;
  uint32_t words;
  std::vector<std::pair<unsigned, uint32_t>> destinations;  // (tile, address)
};

// One side of a copy: a tensor's placed pieces (in element order), the first element of the
// copied range, and what to add to a piece's tile to name a machine tile (its replica's first).
struct CopySide {
  const std::string& tensor;  // for errors
  const std::vector<Placement>& pieces;
  size_t begin;
  unsigned tile_offset;
};

// An exchange phase's transfers as copies add them: each copy cut where either side's pieces
// end, and the same source words to another receiver joined into one multicast send. The
// compiler lowers every copy so; the operator library's planner times its candidates' phases
// with it before compiling them.
struct TransferList {
  std::vector<Transfer> list;
  std::map<std::tuple<unsigned, uint32_t, uint32_t>, std::vector<size_t>> by_source;
  // `count` elements of `type` from `from` to `to`. Throws CompileError naming both tensors,
  // the elements and the tiles (`describe_tile` of a piece's tile) for a piece that starts
  // inside a 32-bit word on either side: the exchange moves whole words.
  void add_copy(const CopySide& from, const CopySide& to, size_t count, DType type,
                const std::function<std::string(unsigned)>& describe_tile);
};

struct ScheduleMargins {
  uint32_t action_gap, receive_setup, action_slack, link_slack;  // CompileOptions' figures

  static ScheduleMargins of(const CompileOptions& o) {
    return {o.action_gap, o.receive_setup, o.action_slack, o.link_slack};
  }
};

// One exchange action as the compiler builds it; the image holds it encoded as the runtime's
// ipu_action (firmware/include/ipu_program.h), by encode_action.
struct ExchangeAction {
  uint32_t offset, kind;
  uint32_t tile;  // receive: the sending tile
  uint32_t words;
  uint32_t address;  // on the acting tile, word-aligned
  uint32_t dests;    // send: the destination list's address (set when the image is laid out)
  uint64_t remote;   // streaming memory: the address there
};

// The fewest cycles from a tile's previous action's key instruction to an action of `kind`'s:
// the runtime's lead for that kind (ipu_program.h), or the margins' floor where it is more. A
// phase's first action is as far from the virtual key IPU_ACTION_FIRST_KEY cycles before the
// release.
uint32_t action_gap(uint32_t kind, const ScheduleMargins& margins);

// The runtime's 16-byte form of `a`, with the wait (ipu.waitc's operand) that puts its key at
// its offset after the previous action's key at `previous` (IPU_ACTION_FIRST_KEY for a phase's
// first). Throws CompileError for what it cannot hold (an address off a word, a count of 2^20
// words or more, a streaming-memory address of 2^44 or more, or an offset the runtime cannot
// reach that soon after the previous action).
ipu_action encode_action(const ExchangeAction& a, int64_t previous);

struct PhaseSchedule {
  std::map<unsigned, std::vector<ExchangeAction>> actions;  // per tile, by offset; dests unset
  std::map<unsigned, std::vector<uint32_t>> dest_lists;     // per tile: {count, refs...} per send
  uint32_t end = 0;  // the offset at which every tile may leave the phase
  bool crosses_chips = false;
  unsigned sends = 0, destinations = 0, inter_chip_sends = 0;
};

class ExchangeScheduler {
 public:
  ExchangeScheduler(const hw::MachineConfig& machine, ScheduleMargins margins);

  // Greedy, in the transfers' order: each starts as early as its source's port, its receivers
  // and the lanes of the links it crosses allow; its actions take the earliest slots free on
  // their tiles, before an earlier transfer's if a gap allows. Throws CompileError, naming the
  // transfer, when its words cross an IPU-Link slower than one tile's send port (no schedule
  // keeps such a link within its rate).
  PhaseSchedule schedule(const std::vector<Transfer>& transfers) const;

  unsigned chip_of(unsigned tile) const { return tile / machine_.chip.tiles; }
  // Send-to-arrival cycles between two machine tiles.
  uint32_t latency(unsigned from, unsigned to) const;
  // How `tile` names `other` in a destination list or a receive: its own chip's tiles by
  // number, other chips' as remote references.
  uint32_t reference(unsigned tile, unsigned other) const;
  std::string tile_name(unsigned tile) const;  // "chip 1 tile 5"

 private:
  const hw::MachineConfig& machine_;
  ScheduleMargins margins_;
  uint32_t hop_cycles_ = 0;
  unsigned lanes_per_link_ = 0;  // sends one link direction carries at once
};

}  // namespace ipu::sdk

#include "exchange_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <unordered_map>

#include "hw/ipulink/ipulink.h"
#include "hw/ipulink/link_fabric.h"
#include "iss/core.h"
#include "sdk/compiler/compiler.h"

namespace ipu::sdk {
namespace {

struct TileTimes {
  // The offsets of the tile's actions so far, each with its gap (action_gap: the cycles it needs
  // after the action before it). A later transfer's action may go before an earlier one's, in a
  // free slot: a tile that sends late in a phase still sets up an early receive.
  std::map<uint32_t, uint32_t> actions;
  uint32_t send_free = 0, receive_free = 0;
  std::vector<ExchangeAction>* scheduled = nullptr;  // its list in the PhaseSchedule

  // The earliest offset from `at` for an action that needs `gap` after the one before it, where
  // the one after it still has its own gap (and a phase's first action its distance from the
  // release).
  uint32_t free_slot(uint32_t at, uint32_t gap) const {
    uint32_t x = std::max<int64_t>(at, int64_t{gap} + IPU_ACTION_FIRST_KEY);
    for (;;) {
      const auto next = actions.lower_bound(x);
      if (next != actions.begin() && x - std::prev(next)->first < gap) {
        x = std::prev(next)->first + gap;
      } else if (next != actions.end() && next->first - x < next->second) {
        x = next->first + gap;
      } else {
        return x;
      }
    }
  }
};

// One direction of one IPU-Link: (from chip, to chip, link of the bundle).
using LinkKey = std::tuple<unsigned, unsigned, unsigned>;

// The cycles from the previous action's key to this one's beyond its wait: the runtime's lead to
// the ipu.waitc, and the tail between the wait and the key (ipu_program.h).
uint32_t key_lead(uint32_t kind) {
  return kind == IPU_ACTION_RECEIVE ? IPU_ACTION_LEAD_RECEIVE + IPU_ACTION_TAIL_RECEIVE
         : kind == IPU_ACTION_SEND  ? IPU_ACTION_LEAD_SEND
                                    : IPU_ACTION_LEAD_STREAMING;
}

const char* kind_name(uint32_t kind) {
  static const char* const kNames[] = {"receive", "send", "streaming-memory write",
                                       "streaming-memory read"};
  return kind < std::size(kNames) ? kNames[kind] : "unknown";
}

}  // namespace

uint32_t action_gap(uint32_t kind, const ScheduleMargins& margins) {
  return std::max<uint32_t>(key_lead(kind) + IPU_SUPERVISOR_ISSUE_CYCLES, margins.action_gap);
}

ipu_action encode_action(const ExchangeAction& a, int64_t previous) {
  constexpr uint32_t kWordsLimit = 1u << IPU_ACTION_WORDS_BITS;
  constexpr uint64_t kRemoteLimit = uint64_t{1} << (64 - IPU_ACTION_WORDS_BITS);
  if (a.address % 4 != 0 || a.kind > IPU_ACTION_SM_READ || a.words >= kWordsLimit ||
      a.remote >= kRemoteLimit)
    throw CompileError(fmt::format(
        "an exchange action the runtime cannot hold: kind {}, {} words at tile address {:#x} "
        "(word-aligned, under {} words), streaming memory address {:#x} (under {:#x})",
        a.kind, a.words, a.address, kWordsLimit, a.remote, kRemoteLimit));
  // The runtime reaches the action's ipu.waitc a lead after the previous key, and the key
  // issues max(6, wait) and a tail after it.
  const int64_t lead = key_lead(a.kind);
  const int64_t wait = int64_t{a.offset} - previous - lead;
  if (wait < IPU_SUPERVISOR_ISSUE_CYCLES)
    throw CompileError(fmt::format(
        "an exchange {} at offset {} only {} cycles after the previous action's at {}: the runtime "
        "needs {} before it",
        kind_name(a.kind), a.offset, int64_t{a.offset} - previous, previous,
        lead + IPU_SUPERVISOR_ISSUE_CYCLES));
  if (wait > IPU_ACTION_WAIT_MASK)
    throw CompileError(fmt::format(
        "an exchange {} at offset {}, {} cycles after the previous action's at {}: the runtime "
        "waits under 2^{} cycles between a tile's actions",
        kind_name(a.kind), a.offset, int64_t{a.offset} - previous, previous, IPU_ACTION_WAIT_BITS));
  // The wait word (ipu_program.h): the kind in its sign and top bits.
  const auto w = static_cast<uint32_t>(wait);
  uint32_t wait_word = ~(w | 2u << IPU_ACTION_WAIT_BITS);  // a streaming-memory read
  if (a.kind == IPU_ACTION_RECEIVE) wait_word = w;
  if (a.kind == IPU_ACTION_SEND) wait_word = ~w;
  if (a.kind == IPU_ACTION_SM_WRITE) wait_word = ~(w | 1u << IPU_ACTION_WAIT_BITS);
  const bool remote = a.kind == IPU_ACTION_SM_READ || a.kind == IPU_ACTION_SM_WRITE;
  return {
      wait_word, a.address,
      remote ? a.words | static_cast<uint32_t>(a.remote >> 32) << IPU_ACTION_WORDS_BITS : a.words,
      remote                      ? static_cast<uint32_t>(a.remote)
      : a.kind == IPU_ACTION_SEND ? a.dests
                                  : a.tile};
}

ExchangeScheduler::ExchangeScheduler(const hw::MachineConfig& machine, ScheduleMargins margins)
    : machine_(machine), margins_(margins) {
  if (machine.chips < 2) return;
  hop_cycles_ =
      static_cast<uint32_t>(hw::ipulink_hop_cycles(machine.ipulink, machine.chip.tile.clock_hz));
  // A link has no queue: the schedule gives each link direction as many sends at once as its
  // rate carries whole (3 words a cycle at 16 GB/s on a 1.325 GHz Mk2, 2 on a 1.85 GHz Bow).
  const double bytes_per_cycle = machine.ipulink.bytes_per_cycle(machine.chip.tile.clock_hz);
  lanes_per_link_ = static_cast<unsigned>(
      std::floor(bytes_per_cycle / (4.0 * machine.chip.exchange.words_per_cycle)));
}

uint32_t ExchangeScheduler::latency(unsigned from, unsigned to) const {
  const unsigned per_chip = machine_.chip.tiles, a = from / per_chip, b = to / per_chip;
  if (a == b) return machine_.chip.exchange.latency(from % per_chip, to % per_chip);
  const auto hops = hw::ladder_route(machine_.chips, machine_.ipulink.torus, a, b).size();
  return 2 * machine_.chip.exchange.base_latency + static_cast<uint32_t>(hops) * hop_cycles_;
}

std::string ExchangeScheduler::tile_name(unsigned tile) const {
  return hw::tile_name(tile, machine_.chip.tiles, machine_.chips);
}

uint32_t ExchangeScheduler::reference(unsigned tile, unsigned other) const {
  const unsigned per_chip = machine_.chip.tiles;
  if (tile / per_chip == other / per_chip) return other % per_chip;
  return iss::remote_tile(other / per_chip, other % per_chip);
}

PhaseSchedule ExchangeScheduler::schedule(const std::vector<Transfer>& transfers) const {
  PhaseSchedule out;
  const uint32_t receive_gap = action_gap(IPU_ACTION_RECEIVE, margins_),
                 send_gap = action_gap(IPU_ACTION_SEND, margins_), setup = margins_.receive_setup,
                 slack = margins_.action_slack;
  const unsigned per_chip = machine_.chip.tiles;
  // By tile, hashed: a phase of a POD's step has thousands of transfers, each looked up for its
  // source and every destination.
  std::unordered_map<unsigned, TileTimes> times;
  const auto tile_times = [&](unsigned tile) -> TileTimes& {
    TileTimes& t = times[tile];
    if (t.scheduled == nullptr) t.scheduled = &out.actions[tile];
    return t;
  };
  std::vector<uint32_t> receive_at;
  std::map<LinkKey, std::vector<uint32_t>> lanes;  // per link direction: each lane's free
  const uint32_t per_cycle = machine_.chip.exchange.words_per_cycle;
  uint32_t last_action = 0;
  for (const Transfer& x : transfers) {
    const unsigned source_chip = chip_of(x.source_tile);
    TileTimes& src = tile_times(x.source_tile);
    uint32_t t = src.send_free;
    // Each receiver's receive action, in its earliest free slot `slack` after its previous
    // receive's last word, at least `setup` cycles before the first word. A tile receiving its
    // own send sets its receive up a send's gap before it.
    receive_at.assign(x.destinations.size(), 0);
    for (size_t i = 0; i < x.destinations.size(); ++i) {
      const unsigned d = x.destinations[i].first;
      const TileTimes& dst = tile_times(d);
      receive_at[i] = dst.free_slot(dst.receive_free + slack, receive_gap);
      if (d == x.source_tile) {
        t = std::max(t, receive_at[i] + send_gap);
        continue;
      }
      const uint32_t lat = latency(x.source_tile, d), ready = receive_at[i] + setup;
      if (ready > lat + 1 && t < ready - lat - 1) t = ready - lat - 1;
    }
    const uint32_t duration = (x.words + per_cycle - 1) / per_cycle;
    // The link directions the words cross (each once, however many receivers lie beyond it),
    // with the cycles from the send to the first word entering each. A word of a tile takes
    // link (tile mod links) of a bundle, as the exchange routes it.
    std::map<LinkKey, uint32_t> crossings;
    for (const auto& [d, address] : x.destinations) {
      const unsigned dc = chip_of(d);
      if (dc == source_chip) continue;
      const auto route = hw::ladder_route(machine_.chips, machine_.ipulink.torus, source_chip, dc);
      for (size_t h = 0; h < route.size(); ++h) {
        const unsigned bundle = route[h].kind == hw::LadderHop::kRung
                                    ? machine_.ipulink.rung_links
                                    : machine_.ipulink.column_links;
        crossings.emplace(
            LinkKey{route[h].from, route[h].to, (x.source_tile % per_chip) % bundle},
            1 + machine_.chip.exchange.base_latency + static_cast<uint32_t>(h) * hop_cycles_);
      }
    }
    if (!crossings.empty() && lanes_per_link_ == 0) {
      const auto off_chip =
          std::find_if(x.destinations.begin(), x.destinations.end(),
                       [&](const auto& d) { return chip_of(d.first) != source_chip; });
      throw CompileError(fmt::format(
          "{} sends {} words to {}: an IPU-Link carries {:.2f} bytes per cycle, less than a "
          "tile sends ({} words a cycle), so no schedule keeps the link within its rate",
          tile_name(x.source_tile), x.words, tile_name(off_chip->first),
          machine_.ipulink.bytes_per_cycle(machine_.chip.tile.clock_hz), per_cycle));
    }
    for (const auto& [link, offset] : crossings) {
      auto& free = lanes[link];
      if (free.empty()) free.assign(lanes_per_link_, 0);
      const uint32_t earliest = *std::min_element(free.begin(), free.end());
      if (earliest > offset && t < earliest - offset) t = earliest - offset;
    }
    // The send in the source's first free slot from there (every bound above is a lower one).
    // Receiving its own send, the tile's receive slot is kept and the send goes a gap or more
    // after it.
    t = src.free_slot(t, send_gap);
    for (size_t i = 0; i < x.destinations.size(); ++i)
      if (x.destinations[i].first == x.source_tile) {
        src.actions.emplace(receive_at[i], receive_gap);
        t = src.free_slot(std::max(t, receive_at[i] + send_gap), send_gap);
      }
    for (const auto& [link, offset] : crossings) {
      // The lane free soonest; the link slack after the words, as the next send on it may
      // reach the link that much earlier, relative to its offset, than this one.
      auto& free = lanes[link];
      *std::min_element(free.begin(), free.end()) = t + offset + duration + margins_.link_slack;
    }
    bool remote = false;
    for (size_t i = 0; i < x.destinations.size(); ++i) {
      const auto& [d, address] = x.destinations[i];
      TileTimes& dst = tile_times(d);
      dst.scheduled->push_back(
          {receive_at[i], IPU_ACTION_RECEIVE, reference(d, x.source_tile), x.words, address, 0, 0});
      dst.actions.emplace(receive_at[i], receive_gap);
      last_action = std::max(last_action, receive_at[i]);
      dst.receive_free = t + 1 + latency(x.source_tile, d) + duration;
      out.end = std::max(out.end, dst.receive_free);
      remote |= chip_of(d) != source_chip;
    }
    auto& list = out.dest_lists[x.source_tile];
    list.push_back(static_cast<uint32_t>(x.destinations.size()));
    for (const auto& d : x.destinations) list.push_back(reference(x.source_tile, d.first));
    src.scheduled->push_back({t, IPU_ACTION_SEND, 0, x.words, x.source_address, 0, 0});
    ++out.sends;
    out.destinations += static_cast<unsigned>(x.destinations.size());
    out.inter_chip_sends += remote ? 1 : 0;
    out.crosses_chips |= remote;
    src.actions.emplace(t, send_gap);
    src.send_free = t + 1 + duration;
    last_action = std::max(last_action, t);
  }
  // Every tile leaves the phase when its last action's code has run (the runtime reads the
  // counter for the end IPU_ACTION_END_LEAD after the last key) and `slack` after the last word.
  if (!transfers.empty())
    out.end = std::max(out.end + slack,
                       last_action + std::max<uint32_t>(receive_gap, IPU_ACTION_END_LEAD));
  // Each tile's actions by offset (a stable sort keeps a tile's sends in the order their
  // destination lists were appended).
  for (auto& [tile, acts] : out.actions)
    std::stable_sort(
        acts.begin(), acts.end(),
        [](const ExchangeAction& a, const ExchangeAction& b) { return a.offset < b.offset; });
  return out;
}

void TransferList::add_copy(const CopySide& from, const CopySide& to, size_t count, DType type,
                            const std::function<std::string(unsigned)>& describe_tile) {
  const size_t size = dtype_size(type);
  const auto& sp = from.pieces;
  const auto& dp = to.pieces;
  // Pieces are in element order: only those that overlap the range are visited (a copy of a
  // few elements of a tensor spread over every tile must not walk all its pieces).
  const auto first_overlapping = [](const std::vector<Placement>& pieces, size_t at) {
    return std::upper_bound(pieces.begin(), pieces.end(), at,
                            [](size_t x, const Placement& p) { return x < p.end; });
  };
  // In element offsets from the start of the range: [lo, hi) on both a and b.
  for (auto ai = first_overlapping(sp, from.begin);
       ai != sp.end() && ai->begin < from.begin + count; ++ai) {
    const Placement& a = *ai;
    const size_t a_lo = std::max(a.begin, from.begin), a_hi = std::min(a.end, from.begin + count);
    if (a_lo >= a_hi) continue;
    const size_t offset = a_lo - from.begin;  // the destination's elements it meets
    for (auto bi = first_overlapping(dp, to.begin + offset);
         bi != dp.end() && bi->begin < to.begin + (a_hi - from.begin); ++bi) {
      const Placement& b = *bi;
      const size_t b_lo = std::max(b.begin, to.begin), b_hi = std::min(b.end, to.begin + count);
      if (b_lo >= b_hi) continue;
      const size_t lo = std::max(a_lo - from.begin, b_lo - to.begin);
      const size_t hi = std::min(a_hi - from.begin, b_hi - to.begin);
      if (lo >= hi) continue;
      const uint32_t at = a.address + static_cast<uint32_t>((from.begin + lo - a.begin) * size);
      const unsigned source_tile = from.tile_offset + a.tile, tile = to.tile_offset + b.tile;
      const uint32_t address = b.address + static_cast<uint32_t>((to.begin + lo - b.begin) * size);
      // The exchange moves whole words: a piece of an f16 or u8 tensor that starts inside a
      // word of either tile would land shifted (or corrupt its neighbours), so it is refused.
      if (at % 4 != 0 || address % 4 != 0)
        throw CompileError(fmt::format(
            "a copy from '{}' element {} ({}) to '{}' element {} ({}) starts inside a 32-bit "
            "word on {}: the exchange moves whole words, so each piece of a {} copy must start "
            "at a multiple of {} elements from the start of its tile's interval on both sides",
            from.tensor, from.begin + lo, describe_tile(a.tile), to.tensor, to.begin + lo,
            describe_tile(b.tile), at % 4 != 0 ? "the source tile" : "the destination tile",
            dtype_name(type), 4 / size));
      const uint32_t words = static_cast<uint32_t>(((hi - lo) * size + 3) / 4);
      // Multicast: the same source words to another receiver join one send.
      auto& sends = by_source[{source_tile, at, words}];
      const auto same = std::find_if(sends.begin(), sends.end(), [&](size_t i) {
        const auto& d = list[i].destinations;
        return std::none_of(d.begin(), d.end(), [&](const auto& x) { return x.first == tile; });
      });
      if (same != sends.end()) {
        list[*same].destinations.emplace_back(tile, address);
      } else {
        sends.push_back(list.size());
        list.push_back({source_tile, at, words, {{tile, address}}});
      }
    }
  }
}

}  // namespace ipu::sdk

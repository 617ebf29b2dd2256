#include "gateway.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <queue>
#include <tuple>

namespace ipu::hw {
namespace {

constexpr uint64_t kTicksPerCycle = uint64_t{1} << 16;

uint64_t whole_cycles(double ns, double clock_hz) {
  return static_cast<uint64_t>(std::ceil(ns * 1e-9 * clock_hz));
}
uint64_t ticks_to_cycles_up(uint64_t ticks) {
  return (ticks + kTicksPerCycle - 1) / kTicksPerCycle;
}
uint64_t ticks_for(double ticks_per_byte, uint64_t bytes) {
  return static_cast<uint64_t>(std::ceil(ticks_per_byte * static_cast<double>(bytes)));
}

}  // namespace

Gateway::Gateway(const sc_core::sc_module_name& name, const GatewayConfig& config,
                 const MachineShape& shape, const ChipEdge& edge, unsigned index,
                 unsigned first_chip, unsigned chips)
    : sc_module(name),
      config_(config),
      index_(index),
      first_chip_(first_chip),
      chips_(chips),
      tiles_per_chip_(shape.tiles_per_chip),
      clock_hz_(shape.clock_hz),
      base_latency_(edge.latency),
      words_per_cycle_(edge.words_per_cycle),
      link_latency_ticks_(whole_cycles(config.chip_link_latency_ns, shape.clock_hz) *
                          kTicksPerCycle),
      ddr_latency_ticks_(whole_cycles(config.ddr_latency_ns, shape.clock_hz) * kTicksPerCycle),
      link_ticks_per_byte_(kTicksPerCycle * shape.clock_hz / config.chip_link_bytes_per_second),
      ddr_ticks_per_byte_(kTicksPerCycle * shape.clock_hz / config.dimm_bytes_per_second),
      memory_(uint64_t{config.dimms} * config.dimm_bytes),
      servers_(config.dimms + 2 * chips),
      host_ports_(2 * size_t{config.host_ports}),
      host_latency_ticks_(static_cast<uint64_t>(
          std::ceil(config.host_latency_ns * 1e-9 * shape.clock_hz * kTicksPerCycle))),
      host_port_ticks_per_byte_(kTicksPerCycle * shape.clock_hz /
                                config.host_port_bytes_per_second) {
  for (unsigned d = 0; d < config.dimms; ++d)
    servers_[d].min_gap = ticks_for(ddr_ticks_per_byte_, config.burst_bytes);
}

uint64_t Gateway::pass(Server& s, uint64_t tick, uint64_t service_ticks, uint64_t bytes) {
  uint64_t start = std::max(tick, s.free);
  bool in_gap = false;
  if (s.min_gap != 0) {
    // The first gap that holds the service from `tick` on (one starting before tick may).
    auto g = s.gaps.upper_bound(tick);
    if (g != s.gaps.begin() && std::prev(g)->second > tick) --g;
    for (; g != s.gaps.end(); ++g) {
      const uint64_t from = std::max(g->first, tick);
      if (g->second - from < service_ticks) continue;
      const auto [gap_start, gap_end] = *g;
      s.gaps.erase(g);
      if (from - gap_start >= s.min_gap) s.gaps.emplace(gap_start, from);
      if (gap_end - (from + service_ticks) >= s.min_gap)
        s.gaps.emplace(from + service_ticks, gap_end);
      start = from;
      in_gap = true;
      break;
    }
    if (!in_gap && tick > s.free && tick - s.free >= s.min_gap)
      s.gaps.emplace(s.free, tick);  // idle until this burst: later phases may fill it
    while (s.gaps.size() > kMaxGaps) s.gaps.erase(s.gaps.begin());
  }
  s.free = std::max(s.free, start + service_ticks);
  s.busy_ticks += service_ticks;
  s.first = std::min(s.first, start);
  s.last = std::max(s.last, s.free);
  s.counters.bytes += bytes;
  ++s.counters.transfers;
  s.counters.busy_cycles = static_cast<double>(s.busy_ticks) / kTicksPerCycle;
  s.counters.first_cycle = s.first / kTicksPerCycle;
  s.counters.last_cycle = ticks_to_cycles_up(s.last);
  return start + service_ticks;
}

void Gateway::serve(std::vector<StreamRequest*>& requests, const ExchangeArrivals& arrivals) {
  // One event per burst and stage of its path, taken in time order (then tile, request, burst):
  // each server then sees its bursts in arrival order, first come first served.
  struct Event {
    uint64_t tick;
    unsigned tile;
    uint32_t request, burst;
    uint8_t stage;
    bool operator>(const Event& o) const {
      return std::tie(tick, tile, request, burst, stage) >
             std::tie(o.tick, o.tile, o.request, o.burst, o.stage);
    }
  };
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  std::map<unsigned, Server> receive_ports;  // each reading tile's
  // A reading tile that the exchange's words reach too: its port's next cycle free for the read
  // and the next of those words.
  struct SharedPort {
    uint64_t free = 0;
    size_t next = 0;
  };
  std::map<unsigned, SharedPort> shared_ports;
  // Lands `words` words arriving at `tick` in the cycles the exchange's leave room in; returns
  // the tick the last is through.
  const auto land = [&](unsigned tile, const std::vector<std::pair<uint64_t, uint32_t>>& busy,
                        uint64_t tick, uint64_t words) {
    SharedPort& port = shared_ports[tile];
    uint64_t cycle = std::max(ticks_to_cycles_up(tick), port.free);
    while (words > 0) {
      while (port.next < busy.size() && busy[port.next].first < cycle) ++port.next;
      const uint32_t taken =
          port.next < busy.size() && busy[port.next].first == cycle ? busy[port.next].second : 0;
      const uint64_t room = taken >= words_per_cycle_ ? 0 : words_per_cycle_ - taken;
      words -= std::min(room, words);
      ++cycle;
    }
    port.free = cycle;
    return cycle * kTicksPerCycle;
  };
  const uint64_t burst = config_.burst_bytes;
  auto bursts = [&](const StreamRequest& r) {
    return static_cast<uint32_t>((r.address + 4 * uint64_t{r.count} - 1) / burst -
                                 r.address / burst + 1);
  };
  auto range = [&](const StreamRequest& r, uint32_t i) {  // [begin, end) of burst i
    const uint64_t aligned = (r.address / burst + i) * burst;
    return std::make_pair(std::max(aligned, r.address),
                          std::min(aligned + burst, r.address + 4 * uint64_t{r.count}));
  };
  auto ready = [&](const StreamRequest& r, uint32_t i) {  // burst i reaches its first server
    if (!r.write)  // the read request crosses to the gateway once, ahead of every burst
      return (r.cycle + 1 + base_latency_) * kTicksPerCycle + link_latency_ticks_;
    const uint64_t last_word = (range(r, i).second - r.address) / 4 - 1;
    return (r.cycle + 1 + last_word / words_per_cycle_ + base_latency_) * kTicksPerCycle;
  };

  for (uint32_t i = 0; i < requests.size(); ++i) {
    StreamRequest& r = *requests[i];
    r.done = r.cycle + 1;
    if (r.count == 0) continue;
    if (!r.write) r.words.assign(r.count, 0);
    events.push({ready(r, 0), r.tile, i, 0, 0});
  }
  while (!events.empty()) {
    // Host bursts due before the tiles' next event go first: one schedule for both.
    if (!host_events_.empty() && host_events_.begin()->tick < events.top().tick) {
      const HostEvent h = *host_events_.begin();
      host_events_.erase(host_events_.begin());
      move_host_burst(h);
      continue;
    }
    const Event e = events.top();
    events.pop();
    StreamRequest& r = *requests[e.request];
    // A write's next burst is paced by the tile's port; a read's is put to its DIMM when this
    // one is through it (the gateway keeps one burst of each read queued), so that reads from
    // every chip take turns at the DIMMs instead of one chip's whole transfer going first.
    if (r.write && e.stage == 0 && e.burst + 1 < bursts(r))
      events.push({ready(r, e.burst + 1), r.tile, e.request, e.burst + 1, 0});
    const auto [begin, end] = range(r, e.burst);
    const uint64_t bytes = end - begin;
    uint32_t* const data = r.words.data() + (begin - r.address) / 4;
    const unsigned chip = r.tile / tiles_per_chip_ - first_chip_;
    Server& dimm = servers_[dimm_of(begin)];
    uint64_t next = 0;
    bool done = false;
    if (r.write && e.stage == 0) {
      next = pass(servers_[link_server(chip, true)], e.tick, ticks_for(link_ticks_per_byte_, bytes),
                  bytes) +
             link_latency_ticks_;
    } else if (r.write) {
      memory_.write(begin, data, bytes);  // in DIMM order: the order writes and reads meet
      next = pass(dimm, e.tick, ticks_for(ddr_ticks_per_byte_, bytes), bytes);
      done = true;
    } else if (e.stage == 0) {
      memory_.read(begin, data, bytes);
      const uint64_t through = pass(dimm, e.tick, ticks_for(ddr_ticks_per_byte_, bytes), bytes);
      if (e.burst + 1 < bursts(r)) events.push({through, r.tile, e.request, e.burst + 1, 0});
      next = through + ddr_latency_ticks_;
    } else if (e.stage == 1) {
      next = pass(servers_[link_server(chip, false)], e.tick,
                  ticks_for(link_ticks_per_byte_, bytes), bytes) +
             link_latency_ticks_ + base_latency_ * kTicksPerCycle;
    } else {
      const uint64_t words = bytes / 4;
      const auto busy = arrivals.find(r.tile);
      next = busy != arrivals.end()
                 ? land(r.tile, busy->second, e.tick, words)
                 : pass(receive_ports[r.tile], e.tick,
                        (words + words_per_cycle_ - 1) / words_per_cycle_ * kTicksPerCycle, bytes);
      done = true;
    }
    if (done)
      r.done = std::max(r.done, ticks_to_cycles_up(next));
    else
      events.push({next, r.tile, e.request, e.burst, static_cast<uint8_t>(e.stage + 1)});
  }
  for (const StreamRequest* r : requests) (r->write ? bytes_written_ : bytes_read_) += 4 * r->count;
}

uint64_t Gateway::burst_end(const HostFlight& f, uint64_t offset) const {
  const uint64_t burst = config_.burst_bytes, at = f.address + offset;
  const uint64_t message_end = (offset / HostLink::kMessageBytes + 1) * HostLink::kMessageBytes;
  return std::min({(at / burst + 1) * burst - f.address, message_end, f.bytes});
}

Gateway::HostTransfer Gateway::host_start(bool to_gateway, uint64_t address, uint8_t* data,
                                          uint64_t bytes, uint64_t cycle) {
  HostFlight f;
  f.to_gateway = to_gateway, f.address = address, f.bytes = bytes, f.data = data;
  return start_flight(std::move(f), cycle * kTicksPerCycle);
}

Gateway::HostTransfer Gateway::start_flight(HostFlight flight, uint64_t tick) {
  if (!memory_.contains(flight.address, flight.bytes))  // refused whole: nothing half-written
    throw std::out_of_range(fmt::format(
        "host link to gateway {}: streaming-memory bytes 0x{:x}..0x{:x} lie outside its {} bytes",
        index_, flight.address, flight.address + flight.bytes, memory_.size()));
  const HostTransfer id = next_flight_++;
  HostFlight& f = flights_.emplace(id, std::move(flight)).first->second;
  f.done = tick;
  const uint64_t message = HostLink::kMessageBytes;
  f.messages.resize((f.bytes + message - 1) / message);
  for (uint64_t at = 0; at < f.bytes; at = burst_end(f, at)) {
    ++f.messages[at / message].bursts_left;
    ++f.bursts_left;
  }
  if (f.to_gateway) {
    // Each message takes its port in turn; its bursts reach the DIMMs as the port delivers them.
    for (size_t m = 0; m < f.messages.size(); ++m) {
      const uint64_t n = std::min(message, f.bytes - m * message);
      const uint64_t service = ticks_for(host_port_ticks_per_byte_, n);
      f.messages[m].port_start = pass(host_port_server(f, m), tick, service, n) - service;
      const uint64_t first = m * message;
      host_events_.insert({f.messages[m].port_start +
                               ticks_for(host_port_ticks_per_byte_, burst_end(f, first) - first),
                           id, first});
    }
  } else {
    // A burst queued at each DIMM: as many as the interleave puts in a row on one, each DIMM.
    for (uint64_t b = 0;
         b < uint64_t{config_.dimms} * config_.interleave_bytes / config_.burst_bytes; ++b)
      queue_read_burst(id, f, tick);
  }
  if (f.bursts_left == 0) f.done += host_latency_ticks_;
  return id;
}

void Gateway::queue_read_burst(HostTransfer id, HostFlight& f, uint64_t tick) {
  if (f.next_read >= f.bytes) return;
  host_events_.insert({tick, id, f.next_read});
  f.next_read = burst_end(f, f.next_read);
}

void Gateway::move_host_burst(const HostEvent& e) {
  HostFlight& f = flights_.at(e.transfer);
  const uint64_t end = burst_end(f, e.offset), bytes = end - e.offset;
  const uint64_t through = pass(servers_[dimm_of(f.address + e.offset)], e.tick,
                                ticks_for(ddr_ticks_per_byte_, bytes), bytes);
  const uint64_t message = HostLink::kMessageBytes, m = e.offset / message;
  HostFlight::Message& msg = f.messages[m];
  if (f.to_gateway) {
    memory_.write(f.address + e.offset, f.data + e.offset, bytes);
    f.done = std::max(f.done, through);
    if (end < std::min((m + 1) * message, f.bytes))  // the message's next burst
      host_events_.insert(
          {msg.port_start + ticks_for(host_port_ticks_per_byte_, burst_end(f, end) - m * message),
           e.transfer, end});
  } else {
    memory_.read(f.address + e.offset, f.data + e.offset, bytes);
    const uint64_t ready = through + ddr_latency_ticks_;
    msg.first_ready = std::min(msg.first_ready, ready);
    msg.last_ready = std::max(msg.last_ready, ready);
    if (msg.bursts_left == 1) {
      // The message leaves as its data comes: from its first burst, and not before its last
      // burst has crossed the port.
      const uint64_t n = std::min(message, f.bytes - m * message);
      Server& port = host_port_server(f, m);
      const uint64_t sent =
          std::max(pass(port, msg.first_ready, ticks_for(host_port_ticks_per_byte_, n), n),
                   msg.last_ready + ticks_for(host_port_ticks_per_byte_, bytes));
      port.free = std::max(port.free, sent);
      f.done = std::max(f.done, sent);
    }
    queue_read_burst(e.transfer, f, through);
  }
  --msg.bursts_left;
  if (--f.bursts_left == 0) f.done += host_latency_ticks_;
}

uint64_t Gateway::finish_ticks(HostTransfer transfer) {
  const auto f = flights_.find(transfer);
  if (f == flights_.end())
    throw std::logic_error(
        fmt::format("gateway {}: no host transfer {} in flight", index_, transfer));
  while (f->second.bursts_left > 0) {  // every flight's bursts, in time order, up to its last
    if (host_events_.empty())          // each unfinished flight keeps a burst due: never
      throw std::logic_error(fmt::format("gateway {}: host transfer {} stalled", index_, transfer));
    const HostEvent e = *host_events_.begin();
    host_events_.erase(host_events_.begin());
    move_host_burst(e);
  }
  const uint64_t done = f->second.done;
  flights_.erase(f);
  return done;
}

uint64_t Gateway::host_finish(HostTransfer transfer) {
  return ticks_to_cycles_up(finish_ticks(transfer));
}

Gateways::Gateways(const GatewayConfig& config, const MachineShape& shape, const ChipEdge& edge)
    : config_(config), tiles_per_chip_(shape.tiles_per_chip) {
  if (!config.present) return;
  const unsigned chips = shape.chips;
  for (unsigned first = 0, g = 0; first < chips; first += config.chips_per_gateway, ++g) {
    gateways_.push_back(
        std::make_unique<Gateway>(fmt::format("gateway{}", g).c_str(), config, shape, edge, g,
                                  first, std::min(config.chips_per_gateway, chips - first)));
    host_links_.push_back(std::make_unique<HostLink>(*gateways_.back()));
  }
}

void Gateways::serve(std::vector<StreamRequest>& requests, const ExchangeArrivals& arrivals) {
  std::vector<std::vector<StreamRequest*>> per_gateway(gateways_.size());
  for (StreamRequest& r : requests)
    per_gateway.at(r.tile / tiles_per_chip_ / config_.chips_per_gateway).push_back(&r);
  for (size_t g = 0; g < gateways_.size(); ++g)
    if (!per_gateway[g].empty()) gateways_[g]->serve(per_gateway[g], arrivals);
}

}  // namespace ipu::hw

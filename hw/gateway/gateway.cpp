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

// Bytes of [0, x) that lie on DIMM `m` when blocks of `block` bytes alternate over `dimms`.
uint64_t bytes_below_on_dimm(uint64_t x, uint64_t block, unsigned dimms, unsigned m) {
  const uint64_t period = block * dimms, rest = x % period, skip = m * block;
  return x / period * block + (rest > skip ? std::min(rest - skip, block) : 0);
}

}  // namespace

Gateway::Gateway(const sc_core::sc_module_name& name, const GatewayConfig& config,
                 const MachineShape& shape, const ChipEdge& edge, unsigned index,
                 unsigned first_chip, unsigned chips)
    : sc_module(name),
      host("host"),
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
      host_ports_(config.host_ports),
      host_dimm_free_(config.dimms, sc_core::SC_ZERO_TIME) {
  host.register_b_transport(this, &Gateway::b_transport);
}

uint64_t Gateway::pass(Server& s, uint64_t tick, uint64_t service_ticks, uint64_t bytes) {
  const uint64_t start = std::max(tick, s.free);
  s.free = start + service_ticks;
  s.busy_ticks += service_ticks;
  s.first = std::min(s.first, start);
  s.last = std::max(s.last, s.free);
  s.counters.bytes += bytes;
  ++s.counters.transfers;
  s.counters.busy_cycles = static_cast<double>(s.busy_ticks) / kTicksPerCycle;
  s.counters.first_cycle = s.first / kTicksPerCycle;
  s.counters.last_cycle = ticks_to_cycles_up(s.last);
  return s.free;
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
  auto ticks = [](double per_byte, uint64_t bytes) {
    return static_cast<uint64_t>(std::ceil(per_byte * static_cast<double>(bytes)));
  };

  for (uint32_t i = 0; i < requests.size(); ++i) {
    StreamRequest& r = *requests[i];
    r.done = r.cycle + 1;
    if (r.count == 0) continue;
    if (!r.write) r.words.assign(r.count, 0);
    events.push({ready(r, 0), r.tile, i, 0, 0});
  }
  while (!events.empty()) {
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
      next = pass(servers_[link_server(chip, true)], e.tick, ticks(link_ticks_per_byte_, bytes),
                  bytes) +
             link_latency_ticks_;
    } else if (r.write) {
      memory_.write(begin, data, bytes);  // in DIMM order: the order writes and reads meet
      next = pass(dimm, e.tick, ticks(ddr_ticks_per_byte_, bytes), bytes);
      done = true;
    } else if (e.stage == 0) {
      memory_.read(begin, data, bytes);
      const uint64_t through = pass(dimm, e.tick, ticks(ddr_ticks_per_byte_, bytes), bytes);
      if (e.burst + 1 < bursts(r)) events.push({through, r.tile, e.request, e.burst + 1, 0});
      next = through + ddr_latency_ticks_;
    } else if (e.stage == 1) {
      next = pass(servers_[link_server(chip, false)], e.tick, ticks(link_ticks_per_byte_, bytes),
                  bytes) +
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

void Gateway::b_transport(int port, tlm::tlm_generic_payload& p, sc_core::sc_time& delay) {
  const uint64_t address = p.get_address(), bytes = p.get_data_length();
  if (p.get_command() == tlm::TLM_IGNORE_COMMAND)
    return p.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
  if (!memory_.contains(address, bytes) || p.get_byte_enable_ptr() != nullptr)
    return p.set_response_status(p.get_byte_enable_ptr() != nullptr
                                     ? tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE
                                     : tlm::TLM_ADDRESS_ERROR_RESPONSE);
  const bool to_gateway = p.is_write();
  HostDirection& d = host_ports_.at(static_cast<size_t>(port)).direction[to_gateway ? 0 : 1];
  const sc_core::sc_time& now = sc_core::sc_time_stamp();
  const sc_core::sc_time start = now + delay;
  const sc_core::sc_time port_start = std::max(start, d.free);
  d.free =
      port_start + sc_core::sc_time(static_cast<double>(bytes) / config_.host_port_bytes_per_second,
                                    sc_core::SC_SEC);
  sc_core::sc_time end = d.free;
  for (unsigned m = 0; m < config_.dimms; ++m) {  // the DIMMs stream their shares in parallel
    const uint64_t share =
        bytes_below_on_dimm(address + bytes, config_.interleave_bytes, config_.dimms, m) -
        bytes_below_on_dimm(address, config_.interleave_bytes, config_.dimms, m);
    if (share == 0) continue;
    sc_core::sc_time& free = host_dimm_free_[m];
    free = std::max(start, free) +
           sc_core::sc_time(static_cast<double>(share) / config_.dimm_bytes_per_second,
                            sc_core::SC_SEC);
    end = std::max(end, free);
  }
  end += sc_core::sc_time(config_.host_latency_ns, sc_core::SC_NS);
  if (to_gateway)
    memory_.write(address, p.get_data_ptr(), bytes);
  else
    memory_.read(address, p.get_data_ptr(), bytes);

  const double clock_hz = clock_hz_;
  TransferCounters& n = d.counters;
  if (n.transfers == 0) n.first_cycle = static_cast<uint64_t>(port_start.to_seconds() * clock_hz);
  n.bytes += bytes;
  ++n.transfers;
  n.busy_cycles += static_cast<double>(bytes) / config_.host_port_bytes_per_second * clock_hz;
  n.last_cycle =
      std::max(n.last_cycle, static_cast<uint64_t>(std::ceil(d.free.to_seconds() * clock_hz)));
  delay = end - now;
  p.set_response_status(tlm::TLM_OK_RESPONSE);
}

Gateways::Gateways(const GatewayConfig& config, const MachineShape& shape, const ChipEdge& edge)
    : config_(config), tiles_per_chip_(shape.tiles_per_chip) {
  if (!config.present) return;
  const unsigned chips = shape.chips;
  for (unsigned first = 0, g = 0; first < chips; first += config.chips_per_gateway, ++g) {
    gateways_.push_back(
        std::make_unique<Gateway>(fmt::format("gateway{}", g).c_str(), config, shape, edge, g,
                                  first, std::min(config.chips_per_gateway, chips - first)));
    host_links_.push_back(
        std::make_unique<HostLink>(fmt::format("host_link{}", g).c_str(), *gateways_.back()));
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

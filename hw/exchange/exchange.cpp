#include "exchange.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

namespace ipu::hw {

Exchange::Exchange(const sc_core::sc_module_name& name, const ChipConfig& config,
                   const std::vector<unsigned>& active_tiles)
    : sc_module(name), to_tiles("to_tiles"), config_(config) {
  for (unsigned i = 0; i < active_tiles.size(); ++i) socket_of_[active_tiles[i]] = i;
}

void Exchange::open_phase(const BarrierRecord& barrier) {
  Phase& p = phases_[barrier.phase];
  p.barrier = barrier;
  for (unsigned t : barrier.tiles) p.tiles[t];
}

Exchange::Phase& Exchange::phase(uint64_t id) { return phases_.at(id); }

uint64_t Exchange::send(unsigned tile, uint64_t id, uint64_t cycle, uint32_t address,
                        std::vector<uint32_t> words, std::vector<unsigned> destinations) {
  Phase& p = phase(id);
  const uint64_t n = words.size(), per_cycle = config_.exchange.words_per_cycle;
  p.sends.push_back({tile, cycle, address, std::move(words), std::move(destinations)});
  return cycle + 1 + (n + per_cycle - 1) / per_cycle;  // the port carries the words after `cycle`
}

void Exchange::select_source(unsigned tile, uint64_t id, uint64_t cycle, int source) {
  phase(id).tiles[tile].selects.push_back({cycle + 1, source});
}

void Exchange::receive_buffer(unsigned tile, uint64_t id, uint64_t cycle, uint32_t address,
                              uint32_t words) {
  phase(id).tiles[tile].buffers.push_back({cycle + 1, address, words, 0});
}

std::string Exchange::end_phase(unsigned tile, uint64_t id, uint64_t cycle) {
  Phase& p = phase(id);
  TileState& t = p.tiles[tile];
  t.boundary = cycle;
  t.at_boundary = true;
  if (++p.waiting < p.tiles.size()) {
    while (!p.resolved) wait(p.done);
  } else {
    // The last tile of the phase resolves it for everybody.
    p.error = resolve(p);
    p.resolved = true;
    p.unread = p.tiles.size();
    p.done.notify(sc_core::SC_ZERO_TIME);
  }
  std::string error = p.error;
  if (--p.unread == 0) phases_.erase(id);  // the last member to read the result frees the phase
  return error;
}

std::vector<std::tuple<uint64_t, unsigned, uint64_t>> Exchange::waiting() const {
  std::vector<std::tuple<uint64_t, unsigned, uint64_t>> out;
  for (const auto& [id, p] : phases_)
    for (const auto& [tile, t] : p.tiles)
      if (t.at_boundary && !p.resolved) out.emplace_back(id, tile, t.boundary);
  return out;
}

void Exchange::deliver(unsigned tile, uint32_t address, const std::vector<uint32_t>& words) {
  tlm::tlm_generic_payload payload;
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  payload.set_command(tlm::TLM_WRITE_COMMAND);
  payload.set_address(address);
  payload.set_data_ptr(reinterpret_cast<unsigned char*>(const_cast<uint32_t*>(words.data())));
  payload.set_data_length(static_cast<unsigned>(4 * words.size()));
  payload.set_streaming_width(static_cast<unsigned>(4 * words.size()));
  to_tiles[socket_of_.at(tile)]->b_transport(payload, delay);
}

std::string Exchange::resolve(Phase& p) {
  struct Arrival {
    uint64_t cycle;
    unsigned source;
    size_t send;
    uint32_t word;
  };
  std::vector<std::string> errors;
  auto error = [&errors](std::string text) { errors.push_back(std::move(text)); };
  const uint64_t per_cycle = config_.exchange.words_per_cycle;

  std::map<unsigned, std::vector<Arrival>> arrivals;
  for (size_t i = 0; i < p.sends.size(); ++i) {
    const Send& s = p.sends[i];
    for (unsigned d : s.destinations) {
      if (p.tiles.count(d) == 0) {
        error(fmt::format(
            "tile {} sends {} words from 0x{:08x} at cycle {} to tile {}, which is not in this "
            "exchange phase (sync group {} released at cycle {})",
            s.source, s.words.size(), s.address, s.cycle, d, p.barrier.group, p.barrier.release));
        continue;
      }
      const uint64_t latency = config_.exchange_latency(s.source, d);
      for (uint32_t k = 0; k < s.words.size(); ++k)
        arrivals[d].push_back({s.cycle + 1 + k / per_cycle + latency, s.source, i, k});
    }
  }

  ExchangeRecord record;
  record.phase = p.barrier.phase;
  record.group = p.barrier.group;
  record.release = p.barrier.release;
  std::map<unsigned, std::vector<std::pair<uint32_t, std::vector<uint32_t>>>> writes;
  for (auto& [tile, t] : p.tiles) {
    record.end = std::max(record.end, t.boundary);
    auto& list = arrivals[tile];
    std::sort(list.begin(), list.end(), [](const Arrival& a, const Arrival& b) {
      return std::tie(a.cycle, a.source, a.send, a.word) <
             std::tie(b.cycle, b.source, b.send, b.word);
    });
    size_t next_select = 0, next_buffer = 0;
    int listening = -1;
    Buffer* buffer = nullptr;
    auto describe_buffer = [](const Buffer* b) {
      return b == nullptr ? std::string("(none set)")
                          : fmt::format("at 0x{:08x} ({} words)", b->address, b->words);
    };
    auto close_buffer = [&](const Buffer* b, uint64_t when, const char* why) {
      if (b != nullptr && b->filled < b->words)
        error(
            fmt::format("tile {}: receive buffer at 0x{:08x} expected {} words but got {} before "
                        "{} at cycle {}",
                        tile, b->address, b->words, b->filled, why, when));
    };
    for (const Arrival& a : list) {
      while (next_select < t.selects.size() && t.selects[next_select].effective <= a.cycle)
        listening = t.selects[next_select++].source;
      while (next_buffer < t.buffers.size() && t.buffers[next_buffer].effective <= a.cycle) {
        close_buffer(buffer, t.buffers[next_buffer].effective - 1, "the tile set a new buffer");
        buffer = &t.buffers[next_buffer++];
      }
      const Send& s = p.sends[a.send];
      const std::string what =
          fmt::format("word {} of the send from tile {} (0x{:08x}, issued at cycle {})", a.word,
                      s.source, s.address + 4 * a.word, s.cycle);
      if (a.cycle >= t.boundary) {
        error(fmt::format(
            "{} arrives at tile {} at cycle {}, after tile {} ended its exchange phase at cycle {}",
            what, tile, a.cycle, tile, t.boundary));
      } else if (listening != static_cast<int>(a.source)) {
        error(fmt::format(
            "{} arrives at tile {} at cycle {} while tile {} listens to {}", what, tile, a.cycle,
            tile, listening < 0 ? std::string("no tile") : fmt::format("tile {}", listening)));
      } else if (buffer == nullptr || buffer->filled == buffer->words) {
        error(fmt::format("{} arrives at tile {} at cycle {} but the receive buffer {} is {}", what,
                          tile, a.cycle, describe_buffer(buffer),
                          buffer == nullptr ? "missing" : "full (overrun)"));
      } else {
        const uint32_t address = buffer->address + 4 * buffer->filled++;
        auto& runs = writes[tile];
        if (!runs.empty() && runs.back().first + 4 * runs.back().second.size() == address)
          runs.back().second.push_back(s.words[a.word]);
        else
          runs.push_back({address, {s.words[a.word]}});
        ++record.words;
        record.last_arrival = std::max(record.last_arrival, a.cycle);
      }
      if (errors.size() > 16) break;
    }
    close_buffer(buffer, t.boundary, "the end of the tile's exchange phase");
    for (size_t b = next_buffer; b < t.buffers.size(); ++b)
      close_buffer(&t.buffers[b], t.boundary, "the end of the tile's exchange phase");
  }
  if (!errors.empty()) {
    std::string report = "exchange schedule error: " + errors.front();
    if (errors.size() > 1)
      report += fmt::format(" (and {} more; first {} shown)", errors.size() - 1,
                            std::min<size_t>(errors.size(), 4));
    for (size_t i = 1; i < std::min<size_t>(errors.size(), 4); ++i) report += "\n  " + errors[i];
    return report;
  }
  for (const auto& [tile, runs] : writes)
    for (const auto& [address, words] : runs) deliver(tile, address, words);
  records_.push_back(record);
  return {};
}

}  // namespace ipu::hw

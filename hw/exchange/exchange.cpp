#include "exchange.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <tuple>

#include "receive_mux.h"

namespace ipu::hw {

Exchange::Exchange(const sc_core::sc_module_name& name, const ExchangeConfig& config,
                   const MachineShape& shape, const std::vector<unsigned>& active_tiles,
                   const LinkFabric* links)
    : sc_module(name), to_tiles("to_tiles"), config_(config), shape_(shape), links_(links) {
  for (unsigned i = 0; i < active_tiles.size(); ++i) socket_of_[active_tiles[i]] = i;
  if (shape_.chips > 1 && (links_ == nullptr || links_->chips() != shape_.chips))
    throw std::invalid_argument("a machine's exchange needs the IPU-Links of its chips");
}

uint64_t Exchange::latency(unsigned from, unsigned to) const {
  const unsigned per_chip = shape_.tiles_per_chip, a = from / per_chip, b = to / per_chip;
  if (a == b) return config_.latency(from % per_chip, to % per_chip);
  return 2 * uint64_t{config_.base_latency} + links_->route(a, b).size() * links_->hop_cycles();
}

void Exchange::cross_links(const Phase& p, std::vector<std::string>& errors) {
  // A send's words enter each link direction it uses as a run: word w at first + w / per_cycle.
  struct Run {
    uint64_t first;        // the cycle its first word enters the link
    unsigned source;       // the sending tile
    uint32_t send;         // its index in the phase
    uint32_t words;        // its word count
    unsigned destination;  // a receiving tile the link serves
  };
  using Direction = std::pair<IpuLink*, unsigned>;
  std::map<Direction, std::vector<Run>> traffic;
  const unsigned per_chip = shape_.tiles_per_chip;
  const uint64_t per_cycle = config_.words_per_cycle, hop = links_->hop_cycles();
  for (size_t i = 0; i < p.sends.size(); ++i) {
    const Send& s = p.sends[i];
    const unsigned from = s.source / per_chip;
    // The link directions this send uses (each once, however many receivers lie beyond it),
    // with the cycles from the sender's port to entering each.
    std::map<Direction, std::pair<uint64_t, unsigned>> uses;
    for (unsigned d : s.destinations) {
      if (d / per_chip == from || p.member(d) == Phase::kNotMember) continue;
      const auto& route = links_->route(from, d / per_chip);
      for (size_t h = 0; h < route.size(); ++h) {
        IpuLink& link = links_->link_for(route[h], s.source % per_chip);
        uses.emplace(Direction{&link, route[h].direction},
                     std::make_pair(config_.base_latency + h * hop, d));
      }
    }
    for (const auto& [direction, use] : uses)
      if (!s.words.empty())
        traffic[direction].push_back({s.cycle + 1 + use.first, s.source, static_cast<uint32_t>(i),
                                      static_cast<uint32_t>(s.words.size()), use.second});
  }
  // A word's place: in cycle order, and within a cycle by sending tile (the order tiles ran in
  // on the host must not decide which word is reported), then by send and word.
  using Key = std::tuple<uint64_t, unsigned, uint32_t, uint32_t>;
  struct Cursor {
    Key key;
    size_t run;
    bool operator>(const Cursor& o) const { return key > o.key; }
  };
  std::vector<IpuLink::Crossing> crossings;
  std::vector<std::pair<size_t, uint32_t>> origins;  // per crossing: its run and word
  std::vector<Cursor> heap;
  for (auto& [direction, runs] : traffic) {
    // The runs merged in key order. A run's words are in key order already, so a run is taken
    // whole while it stays ahead of the next run's word: where sends do not overlap on a link
    // (most do not), the merge is their concatenation, not a sort of every word.
    const auto key = [&](const Run& r, uint32_t w) {
      return Key{r.first + w / per_cycle, r.source, r.send, w};
    };
    crossings.clear();
    origins.clear();
    heap.clear();
    for (size_t r = 0; r < runs.size(); ++r) heap.push_back({key(runs[r], 0), r});
    std::make_heap(heap.begin(), heap.end(), std::greater<>());
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), std::greater<>());
      const Cursor c = heap.back();
      heap.pop_back();
      const Run& r = runs[c.run];
      uint32_t w = std::get<3>(c.key);
      do {
        crossings.push_back({r.first + w / per_cycle, 4});
        origins.emplace_back(c.run, w);
        ++w;
      } while (w < r.words && (heap.empty() || key(r, w) < heap.front().key));
      if (w < r.words) {
        heap.push_back({key(r, w), c.run});
        std::push_heap(heap.begin(), heap.end(), std::greater<>());
      }
    }
    const size_t over = direction.first->admit(direction.second, crossings);
    if (over >= crossings.size()) continue;
    const Run& r = runs[origins[over].first];
    const uint32_t word = origins[over].second;
    const Send& s = p.sends[r.send];
    errors.push_back(fmt::format(
        "{} is over-subscribed at cycle {}: word {} of the send from {} ({}, issued at "
        "cycle {}{}) to {} finds the link still busy ({:.2f} bytes per cycle; the exchange "
        "schedule must spread the traffic)",
        direction.first->describe(direction.second), crossings[over].cycle, word, name(s.source),
        data_address(s.address + 4 * word), s.cycle, source_of(s.pc), name(r.destination),
        direction.first->bytes_per_cycle()));
  }
}

std::string Exchange::data_address(uint32_t address) const {
  const std::string symbol = locate_data_ ? locate_data_(address) : std::string();
  return symbol.empty() ? fmt::format("0x{:08x}", address)
                        : fmt::format("0x{:08x} = {}", address, symbol);
}

std::string Exchange::source_of(uint32_t pc) const {
  const std::string where = locate_code_ ? locate_code_(pc) : std::string();
  return where.empty() ? std::string() : " in " + where;
}

void Exchange::open_phase(const BarrierRecord& barrier) {
  Phase& p = phases_[barrier.phase];
  p.barrier = barrier;
  p.states.resize(barrier.tiles.size());
}

Exchange::Phase& Exchange::phase(uint64_t id) { return phases_.at(id); }

size_t Exchange::Phase::member(unsigned tile) const {
  const auto it = std::lower_bound(barrier.tiles.begin(), barrier.tiles.end(), tile);
  return it != barrier.tiles.end() && *it == tile ? static_cast<size_t>(it - barrier.tiles.begin())
                                                  : kNotMember;
}

Exchange::TileState& Exchange::state(Phase& p, unsigned tile) const {
  const size_t m = p.member(tile);
  if (m == Phase::kNotMember)
    throw std::logic_error(
        fmt::format("{} is not in exchange phase {}", name(tile), p.barrier.phase));
  return p.states[m];
}

uint64_t Exchange::send(unsigned tile, uint64_t id, uint64_t cycle, uint32_t pc, uint32_t address,
                        std::vector<uint32_t> words, std::vector<unsigned> destinations) {
  Phase& p = phase(id);
  const uint64_t n = words.size();
  p.sends.push_back({tile, cycle, pc, address, std::move(words), std::move(destinations)});
  return send_port_free(cycle, n, words_per_cycle());
}

void Exchange::select_source(unsigned tile, uint64_t id, uint64_t cycle, uint32_t pc, int source) {
  state(phase(id), tile).selects.push_back({cycle + 1, source, pc});
}

void Exchange::receive_buffer(unsigned tile, uint64_t id, uint64_t cycle, uint32_t pc,
                              uint32_t address, uint32_t words) {
  state(phase(id), tile).buffers.push_back({cycle + 1, address, words, pc, 0});
}

uint64_t Exchange::stream(unsigned tile, uint64_t id, uint64_t cycle, bool write,
                          uint64_t sm_address, uint32_t address, uint32_t count,
                          std::vector<uint32_t> words) {
  StreamRequest r;
  r.tile = tile;
  r.cycle = cycle;
  r.write = write;
  r.address = sm_address;
  r.tile_address = address;
  r.count = count;
  r.words = std::move(words);
  phase(id).streams.push_back(std::move(r));
  return stream_port_free(cycle, write, count, words_per_cycle());
}

void Exchange::stream_through_gateways(Phase& p, ExchangeRecord& record,
                                       const ExchangeArrivals& arrivals) {
  if (p.streams.empty()) return;
  // Issue order: by cycle, then tile; a tile's own transfers keep the order it issued them in.
  std::stable_sort(p.streams.begin(), p.streams.end(),
                   [](const StreamRequest& a, const StreamRequest& b) {
                     return std::tie(a.cycle, a.tile) < std::tie(b.cycle, b.tile);
                   });
  gateways_->serve(p.streams, arrivals);
  for (const StreamRequest& r : p.streams) {
    TileState& t = state(p, r.tile);
    t.streaming_done = std::max(t.streaming_done, r.done);
    record.streaming_done = std::max(record.streaming_done, r.done);
    (r.write ? record.streaming_bytes_written : record.streaming_bytes_read) += 4 * r.count;
    if (!r.write) deliver(r.tile, r.tile_address, r.words);
  }
  std::vector<StreamRequest>().swap(p.streams);
}

const sc_core::sc_event& Exchange::reach_boundary(unsigned tile, uint64_t id, uint64_t cycle) {
  Phase& p = phase(id);
  TileState& t = state(p, tile);
  t.boundary = cycle;
  t.at_boundary = true;
  if (++p.waiting == p.states.size()) {
    // The last tile of the phase resolves it for everybody, and wakes with the others: their
    // next compute bursts and its own then share one batch.
    p.error = resolve(p);
    p.resolved = true;
    p.unread = p.states.size();
    p.done.notify(sc_core::SC_ZERO_TIME);
  }
  return p.done;
}

PhaseEnd Exchange::phase_end(unsigned tile, uint64_t id) {
  Phase& p = phase(id);
  if (!p.resolved)
    throw std::logic_error(
        fmt::format("exchange phase {} is read by {} before it is resolved", id, name(tile)));
  PhaseEnd end{p.error, state(p, tile).streaming_done};
  if (--p.unread == 0) phases_.erase(id);  // the last member to read the result frees the phase
  return end;
}

std::vector<std::tuple<uint64_t, unsigned, uint64_t>> Exchange::waiting() const {
  std::vector<std::tuple<uint64_t, unsigned, uint64_t>> out;
  for (const auto& [id, p] : phases_)
    for (size_t m = 0; m < p.states.size(); ++m)
      if (p.states[m].at_boundary && !p.resolved)
        out.emplace_back(id, p.barrier.tiles[m], p.states[m].boundary);
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
  to_tiles[static_cast<int>(socket_of_.at(tile))]->b_transport(payload, delay);
}

Exchange::Received Exchange::receive(const Phase& p, unsigned tile, const TileState& t,
                                     std::vector<Cursor>& heap) const {
  Received r;
  size_t cycle_index = 0;  // the receive cycle being reported on
  auto error = [&r, &cycle_index](std::string text) {
    r.errors.emplace_back(cycle_index, std::move(text));
  };
  const uint64_t per_cycle = config_.words_per_cycle;
  RxSchedule schedule;
  RxDecisions decisions;
  struct Origin {
    uint32_t send, word;
  };
  std::vector<Origin> origins;  // per word of the schedule: which send it comes from
  // The receiver's cycles: words in arrival order, and its select and buffer writes (issued
  // the cycle before they take effect) and boundary, merged by cycle.
  std::vector<RxCycle>& cycles = schedule.cycles;
  auto cycle = [&](uint64_t when, bool control) -> RxCycle& {
    const bool taken = !cycles.empty() && (cycles.back().select_write ||
                                           cycles.back().buffer_write || cycles.back().close);
    if (cycles.empty() || cycles.back().cycle != when || (control && taken)) {
      cycles.emplace_back();
      cycles.back().cycle = when;
      cycles.back().late = when >= t.boundary;
      cycles.back().first_word = static_cast<uint32_t>(schedule.words.size());
    }
    return cycles.back();
  };
  struct Control {
    uint64_t cycle;
    const Select* select;
    const Buffer* buffer;  // both null: the boundary
  };
  std::vector<Control> controls;
  for (const Select& s : t.selects) controls.push_back({s.effective - 1, &s, nullptr});
  for (const Buffer& b : t.buffers) controls.push_back({b.effective - 1, nullptr, &b});
  controls.push_back({t.boundary, nullptr, nullptr});
  std::stable_sort(controls.begin(), controls.end(),
                   [](const Control& a, const Control& b) { return a.cycle < b.cycle; });
  std::make_heap(heap.begin(), heap.end(), std::greater<>());
  size_t next_control = 0;
  while (!heap.empty() || next_control < controls.size()) {
    if (heap.empty() ||
        (next_control < controls.size() && controls[next_control].cycle < heap.front().cycle)) {
      const Control& k = controls[next_control++];
      RxCycle& c = cycle(k.cycle, true);
      if (k.select != nullptr) {
        c.select_write = true;
        c.select = k.select->source;
      } else if (k.buffer != nullptr) {
        c.buffer_write = true;
        c.buffer_address = k.buffer->address;
        c.buffer_words = k.buffer->words;
      } else {
        c.close = true;
      }
      continue;
    }
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    const Cursor a = heap.back();
    heap.pop_back();
    const Send& s = p.sends[a.send];
    if (a.word + 1 < s.words.size()) {  // the segment's next word
      Cursor next = a;
      ++next.word;
      next.cycle = s.cycle + 1 + next.word / per_cycle + latency(s.source, tile);
      heap.push_back(next);
      std::push_heap(heap.begin(), heap.end(), std::greater<>());
    }
    ++cycle(a.cycle, false).word_count;
    schedule.words.push_back({a.source, s.words[a.word]});
    origins.push_back({static_cast<uint32_t>(a.send), a.word});
  }
  receive_mux_->run(schedule, decisions);
  if (std::binary_search(p.stream_readers.begin(), p.stream_readers.end(), tile))
    for (const RxCycle& c : cycles)
      if (c.word_count > 0) r.arrivals.emplace_back(c.cycle, c.word_count);

  // Deliveries and reports from the mux's decisions.
  int listening = -1;
  const Select* selected = nullptr;  // the select that set `listening`
  const Buffer* buffer = nullptr;
  size_t next_select = 0, next_buffer = 0, next_short = 0;
  std::vector<std::pair<uint32_t, std::vector<uint32_t>>>& runs = r.runs;  // contiguous writes
  for (size_t i = 0; i < cycles.size() && r.errors.size() <= 16; ++i) {
    cycle_index = i;
    const RxCycle& c = cycles[i];
    for (size_t w = c.first_word; w < c.first_word + c.word_count; ++w) {
      const Origin a = origins[w];
      auto what = [&] {
        const Send& s = p.sends[a.send];
        return fmt::format("word {} of the send from {} ({}, issued at cycle {}{})", a.word,
                           name(s.source), data_address(s.address + 4 * a.word), s.cycle,
                           source_of(s.pc));
      };
      switch (decisions.outcomes[w]) {
        case RxOutcome::kLate:
          error(
              fmt::format("{} arrives at {} at cycle {}, after {} ended its exchange phase at "
                          "cycle {}",
                          what(), name(tile), c.cycle, name(tile), t.boundary));
          break;
        case RxOutcome::kWrongSource:
          error(fmt::format(
              "{} arrives at {} at cycle {} while {} listens to {}{}", what(), name(tile), c.cycle,
              name(tile), listening < 0 ? std::string("no tile") : name(listening),
              selected == nullptr ? std::string()
                                  : fmt::format(" (selected at cycle {}{})",
                                                selected->effective - 1, source_of(selected->pc))));
          break;
        case RxOutcome::kNoBuffer:
        case RxOutcome::kOverrun:
          error(fmt::format(
              "{} arrives at {} at cycle {} but the receive buffer {} is {}", what(), name(tile),
              c.cycle,
              buffer == nullptr ? std::string("(none set)")
                                : fmt::format("at {} ({} words, set at cycle {}{})",
                                              data_address(buffer->address), buffer->words,
                                              buffer->effective - 1, source_of(buffer->pc)),
              decisions.outcomes[w] == RxOutcome::kNoBuffer ? "missing" : "full (overrun)"));
          break;
        case RxOutcome::kWritten: {
          const uint32_t address = decisions.addresses[w];
          const uint32_t data = schedule.words[w].data;
          if (!runs.empty() && runs.back().first + 4 * runs.back().second.size() == address)
            runs.back().second.push_back(data);
          else
            runs.push_back({address, {data}});
          ++r.words;
          const unsigned source = schedule.words[w].source;
          if (source / shape_.tiles_per_chip != tile / shape_.tiles_per_chip) {
            ++r.chip_words;
          } else {
            const unsigned from = source % shape_.tiles_per_chip / config_.tiles_per_column,
                           to = tile % shape_.tiles_per_chip / config_.tiles_per_column;
            r.column_words += from > to ? from - to : to - from;
          }
          r.last_arrival = std::max(r.last_arrival, c.cycle);
          if (flow_limit_ != 0) {
            const Send& send = p.sends[a.send];
            if (r.flows.empty() || r.flows.back().from != send.source ||
                r.flows.back().sent != send.cycle)
              r.flows.push_back(
                  {p.barrier.phase, send.source, tile, send.cycle, c.cycle, c.cycle, 0});
            r.flows.back().last_arrival = c.cycle;
            ++r.flows.back().words;
          }
          break;
        }
      }
    }
    if (next_short < decisions.short_buffers.size() &&
        decisions.short_buffers[next_short].cycle == i) {
      const RxShortBuffer& b = decisions.short_buffers[next_short++];
      const Buffer* set = buffer;  // the short one: in use until this cycle's control
      error(fmt::format(
          "{}: receive buffer at {} expected {} words but got {} before {} at cycle {}{}",
          name(tile), data_address(b.buffer_address), b.buffer_words, b.filled,
          c.buffer_write ? "the tile set a new buffer" : "the end of the tile's exchange phase",
          c.cycle,
          set != nullptr && set->address == b.buffer_address
              ? fmt::format(" (the buffer set at cycle {}{})", set->effective - 1,
                            source_of(set->pc))
              : std::string()));
    }
    if (c.select_write) listening = c.select, selected = &t.selects[next_select++];
    if (c.buffer_write) {
      buffer = &t.buffers[next_buffer++];  // buffer writes come in the tile's order
    } else if (c.close) {
      buffer = nullptr;
    }
  }
  std::vector<Cursor>().swap(heap);
  return r;
}

std::string Exchange::resolve(Phase& p) {
  std::vector<std::string> errors;
  auto error = [&errors](std::string text) { errors.push_back(std::move(text)); };
  // A destination with no program at all: most often firmware that sizes its work by
  // ipu_tile_count() (every tile of the chip) run on an image for fewer tiles.
  auto no_program_hint = [this](unsigned d) -> std::string {
    if (socket_of_.count(d) != 0) return "";
    const unsigned chip = d / shape_.tiles_per_chip;
    const auto first = socket_of_.lower_bound(chip * shape_.tiles_per_chip);
    const auto last = socket_of_.lower_bound((chip + 1) * shape_.tiles_per_chip);
    return fmt::format(
        "; {} has no program: the image gives {} of the chip's {} tiles one (ipu_tile_count() "
        "counts every tile of the chip, ipu_program_tile_count() those with a program; or run "
        "with --chip.tiles {})",
        name(d), std::distance(first, last), shape_.tiles_per_chip, std::distance(first, last));
  };

  std::vector<std::vector<Cursor>> incoming(p.states.size());  // per member
  for (size_t i = 0; i < p.sends.size(); ++i) {
    const Send& s = p.sends[i];
    for (unsigned d : s.destinations) {
      const size_t m = p.member(d);
      if (m == Phase::kNotMember) {
        const bool other_chip = d / shape_.tiles_per_chip != s.source / shape_.tiles_per_chip;
        error(fmt::format(
            "{} sends {} words from {} at cycle {}{} to {}, which is not in this "
            "exchange phase ({} released at cycle {}){}",
            name(s.source), s.words.size(), data_address(s.address), s.cycle, source_of(s.pc),
            name(d),
            p.barrier.chip >= 0 && shape_.chips > 1
                ? fmt::format("sync group {} of chip {}", p.barrier.group, p.barrier.chip)
                : fmt::format("sync group 0x{:x}", p.barrier.group),
            p.barrier.release,
            other_chip ? "; words reach another chip only after an external sync"
                       : no_program_hint(d)));
        continue;
      }
      incoming[m].push_back({s.cycle + 1 + latency(s.source, d), s.source, i, 0});
    }
  }

  // Links first: a phase whose links cannot carry it delivers nothing.
  if (shape_.chips > 1) cross_links(p, errors);

  // The tiles whose receive ports a streaming-memory read shares with the exchange's words.
  for (const StreamRequest& s : p.streams)
    if (!s.write) p.stream_readers.push_back(s.tile);
  std::sort(p.stream_readers.begin(), p.stream_readers.end());
  p.stream_readers.erase(std::unique(p.stream_readers.begin(), p.stream_readers.end()),
                         p.stream_readers.end());
  // Each receiver's words, checked by the receive mux: independent of the other receivers, so
  // on several host threads unless the mux is one verilated model.
  std::vector<std::pair<unsigned, const TileState*>> receivers;
  receivers.reserve(p.states.size());
  for (size_t m = 0; m < p.states.size(); ++m)
    receivers.emplace_back(p.barrier.tiles[m], &p.states[m]);
  std::vector<Received> received(receivers.size());
  auto receive_one = [&](size_t i) {
    received[i] = receive(p, receivers[i].first, *receivers[i].second, incoming[i]);
  };
  if (parallel_for_ && receive_mux_ == &model_mux_) {
    parallel_for_(receivers.size(), receive_one);
  } else {
    for (size_t i = 0; i < receivers.size(); ++i) receive_one(i);
  }

  size_t delivered = 0;  // receivers whose words land: those before the first error
  ExchangeRecord record;
  record.phase = p.barrier.phase;
  record.group = p.barrier.group;
  record.release = p.barrier.release;
  for (size_t i = 0; i < receivers.size(); ++i) {
    Received& r = received[i];
    record.end = std::max(record.end, receivers[i].second->boundary);
    record.words += r.words;
    record.chip_words += r.chip_words;
    record.column_words += r.column_words;
    const unsigned chip = receivers[i].first / shape_.tiles_per_chip;
    if (chip >= words_to_chip_.size()) {
      words_to_chip_.resize(chip + 1);
      column_words_to_chip_.resize(chip + 1);
    }
    words_to_chip_[chip] += r.words;
    column_words_to_chip_[chip] += r.column_words;
    record.last_arrival = std::max(record.last_arrival, r.last_arrival);
    // At most 16 errors and then the rest of a receive cycle's: as if one receiver after
    // another were checked until the report is full.
    for (size_t e = 0; e < r.errors.size(); ++e) {
      if (errors.size() > 16 && (e == 0 || r.errors[e].first != r.errors[e - 1].first)) break;
      errors.push_back(std::move(r.errors[e].second));
    }
    // The receiver's words land as soon as its own schedule checks out; any error anywhere in
    // the phase stops the whole run with the report below.
    if (errors.empty()) delivered = i + 1;
  }
  // Each receiver's words go to its own memory alone, so they land on the pool's threads too.
  auto deliver_one = [&](size_t i) {
    for (const auto& [address, words] : received[i].runs)
      deliver(receivers[i].first, address, words);
  };
  if (parallel_for_ && delivered > 1) {
    parallel_for_(delivered, deliver_one);
  } else {
    for (size_t i = 0; i < delivered; ++i) deliver_one(i);
  }
  if (!errors.empty()) {
    std::string report = "exchange schedule error: " + errors.front();
    const size_t shown = std::min<size_t>(errors.size(), 4);
    if (errors.size() > 1)
      report += fmt::format(" (and {} more; first {} shown)", errors.size() - 1, shown);
    for (size_t i = 1; i < shown; ++i) report += "\n  " + errors[i];
    return report;
  }
  words_ += record.words;
  chip_words_ += record.chip_words;
  for (const Received& r : received)
    for (const ExchangeFlow& f : r.flows) {
      if (flows_.size() < flow_limit_)
        flows_.push_back(f);
      else
        ++flows_dropped_;
    }
  ExchangeArrivals arrivals;
  for (size_t i = 0; i < receivers.size(); ++i)
    if (!received[i].arrivals.empty())
      arrivals[receivers[i].first] = std::move(received[i].arrivals);
  stream_through_gateways(p, record, arrivals);
  if (record.streaming_bytes_written + record.streaming_bytes_read > 0)
    streaming_spans_.add(record.release, std::max(record.end, record.streaming_done));
  else if (record.chip_words > 0)
    cross_chip_spans_.add(record.release, record.end);
  if (keep_records_) records_.push_back(std::move(record));
  return {};
}

uint64_t Exchange::SpanUnion::cycles() const {
  if (spans_.empty()) return settled_;
  std::sort(spans_.begin(), spans_.end());
  std::pair<uint64_t, uint64_t> open = spans_.front();  // the merged span being extended
  for (const auto& [begin, end] : spans_) {
    if (begin > open.second) {
      settled_ += open.second - open.first;
      open = {begin, end};
    } else {
      open.second = std::max(open.second, end);
    }
  }
  spans_.assign(1, open);
  return settled_ + (open.second - open.first);
}

}  // namespace ipu::hw

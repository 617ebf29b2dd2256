// The last stages: each tile's control program, actions and vertex states laid out in its memory,
// then the image (the firmware's segments per tile, the program's bytes) and its manifest.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sdk/compiler/compilation.h"
#include "sdk/image/elf_writer.h"

namespace ipu::sdk {

namespace {

// The words of a tile's action table (ipu_program.h): four an action, an end word a phase that
// has actions, and three after the last end word, which the runtime's loads read past it.
size_t action_table_words(const std::vector<ipu_step>& steps, size_t actions) {
  size_t phases = 0;
  for (const ipu_step& st : steps)
    phases += (st.op == IPU_STEP_EXCHANGE || st.op == IPU_STEP_EXCHANGE_EXTERNAL) && st.b != 0;
  return 4 * actions + phases + (phases != 0 ? 3 : 0);
}

}  // namespace

void Compilation::lay_out() {
  // Destination lists: each send's list follows its action order; a tile keeps each distinct
  // list once (a tile sends to the same few tiles in phase after phase: a product's partial
  // sums, the rows of a relayout), and its sends point to that copy.
  for (unsigned t : tiles_) {
    auto& lists = dest_lists_[t];
    if (lists.empty()) continue;
    std::map<std::vector<uint32_t>, uint32_t> first;  // a list: its offset in `kept`, in words
    std::vector<uint32_t> kept;
    std::vector<uint32_t> offsets;  // each send's list's offset in `kept`
    for (size_t cursor = 0; cursor < lists.size(); cursor += 1 + lists[cursor]) {
      std::vector<uint32_t> list(
          lists.begin() + static_cast<std::ptrdiff_t>(cursor),
          lists.begin() + static_cast<std::ptrdiff_t>(cursor + 1 + lists[cursor]));
      const auto [it, added] =
          first.try_emplace(std::move(list), static_cast<uint32_t>(kept.size()));
      if (added) kept.insert(kept.end(), it->first.begin(), it->first.end());
      offsets.push_back(it->second);
    }
    lists = std::move(kept);
    const uint32_t base = memory_[t].allocate(static_cast<uint32_t>(4 * lists.size()),
                                              labels_("exchange destination lists"));
    size_t send = 0;
    for (ExchangeAction& a : actions_[t])
      if (a.kind == IPU_ACTION_SEND) a.dests = base + 4 * offsets.at(send++);
    auto& bytes = initial_[t];
    const uint32_t offset = base - heap_start_;
    if (bytes.size() < offset + 4 * lists.size()) bytes.resize(offset + 4 * lists.size());
    std::memcpy(bytes.data() + offset, lists.data(), 4 * lists.size());
  }
  // The control program; memory checked; the data segments.
  struct Tables {
    uint32_t steps, actions, vertices, programs;
  };
  std::map<unsigned, Tables> at;
  std::map<unsigned, uint64_t> over;  // tiles whose data does not fit, by the bytes they need
  for (unsigned t : tiles_) {
    TileMemory& m = memory_[t];
    at[t] = {
        m.allocate(static_cast<uint32_t>(sizeof(ipu_step) * steps_[t].size()),
                   labels_("control steps")),
        m.allocate(static_cast<uint32_t>(4 * action_table_words(steps_[t], actions_[t].size())),
                   labels_("exchange actions")),
        m.allocate(static_cast<uint32_t>(sizeof(ipu_vertex) * vertices_[t].size()),
                   labels_("vertex table")),
        m.allocate(static_cast<uint32_t>(4 * program_steps_.size()), labels_("program table"))};
    uint64_t needed = 0;
    for (const MemoryUse& u : m.contents) needed += (u.bytes + 7) & ~7u;
    if (m.overflows() || needed > m.limit - heap_start_) over[t] = needed;
  }
  const auto where = [&](unsigned t) {
    const unsigned replica = t / replica_tiles_, tile = t % replica_tiles_;
    return replicas_ == 1 ? graph_.describe_tile(tile)
                          : fmt::format("{} of replica {}", graph_.describe_tile(tile), replica);
  };
  if (!over.empty()) {  // the fullest tile's contents, and how many more are over on each chip
    const auto worst = std::max_element(
        over.begin(), over.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    const TileMemory& m = memory_[worst->first];
    const uint64_t free = m.limit - heap_start_;
    // Each chip's count and its fullest tile: a stage of a pipeline is a chip, and each stage
    // may overflow for reasons of its own.
    struct ChipOver {
      unsigned tiles = 0;
      uint64_t most = 0;  // the bytes its fullest tile needs
      unsigned fullest = 0;
    };
    std::map<unsigned, ChipOver> per_chip;
    for (const auto& [tile, bytes] : over) {
      ChipOver& c = per_chip[tile / graph_.target().chip().tiles];
      ++c.tiles;
      if (bytes > c.most) c = {c.tiles, bytes, tile};
    }
    const std::string kState = "vertex state (";  // the vertex states' labels
    const auto starts = [&](const MemoryUse& u, const std::string& prefix) {
      return labels_.text(u.label).rfind(prefix, 0) == 0;
    };
    // Another chip's fullest tile in a line: its tensors, its scratch, its tables, largest
    // first (a stage's overflow has causes of its own).
    const auto in_brief = [&](const TileMemory& tile) {
      std::map<std::string, uint64_t> kinds;
      for (const MemoryUse& u : tile.contents) {
        const std::string& what = labels_.text(u.label);
        const std::string kind = starts(u, "tensor '") ? "tensors"
                                 : starts(u, kState)   ? "vertex states"
                                                       : what.substr(0, what.find(':'));
        kinds[kind] += u.bytes;
      }
      std::vector<std::pair<uint64_t, std::string>> sorted;
      for (const auto& [kind, bytes] : kinds) sorted.emplace_back(bytes, kind);
      std::sort(sorted.begin(), sorted.end(), std::greater<>());
      std::vector<std::string> parts;
      for (const auto& [bytes, kind] : sorted)
        if (bytes > 0) parts.push_back(fmt::format("{} {}", kind, bytes));
      return fmt::format("{}", fmt::join(parts, ", "));
    };
    std::vector<std::string> chips;
    chips.reserve(per_chip.size());
    for (const auto& [chip, c] : per_chip)
      chips.push_back(fmt::format(
          "chip {}: {}, the fullest {} with {} bytes{}", chip, c.tiles, where(c.fullest), c.most,
          c.fullest == worst->first ? "" : fmt::format(" ({})", in_brief(memory_[c.fullest]))));
    // Vertex states, often a thousand or more on a tile, are summed by codelet, on one line
    // where the first of them lies.
    std::map<std::string, std::pair<uint64_t, uint64_t>> states;  // codelet: (count, bytes)
    uint64_t state_bytes = 0, state_count = 0;
    for (const MemoryUse& u : m.contents)
      if (starts(u, kState)) {
        const std::string& what = labels_.text(u.label);
        auto& [count, total] = states[what.substr(kState.size(), what.size() - kState.size() - 1)];
        ++count, total += u.bytes, ++state_count, state_bytes += u.bytes;
      }
    std::vector<std::pair<uint64_t, std::string>> by_bytes;
    for (const auto& [codelet, ct] : states)
      by_bytes.emplace_back(ct.second, fmt::format("{} {} x {}", codelet, ct.first,
                                                   ct.second / std::max<uint64_t>(ct.first, 1)));
    std::sort(by_bytes.begin(), by_bytes.end(),
              [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<std::string> state_list;
    for (const auto& [bytes, text] : by_bytes) state_list.push_back(text);
    std::string contents;
    bool states_listed = false;
    // A tensor's neighbouring pieces on the tile in one line ("tensor 'x' [48, 54)").
    std::vector<MemoryUse> merged;
    for (const MemoryUse& u : m.contents) {
      if (!merged.empty() && u.end != 0 && merged.back().label == u.label &&
          merged.back().end == u.begin) {
        merged.back().end = u.end;
        merged.back().bytes += u.bytes;
        continue;
      }
      merged.push_back(u);
    }
    for (const MemoryUse& u : merged) {
      if (!starts(u, kState)) {
        contents += fmt::format("\n  {} bytes: {}{}", u.bytes, labels_.text(u.label),
                                u.end != 0 ? fmt::format(" [{}, {})", u.begin, u.end) : "");
      } else if (!states_listed) {
        contents += fmt::format("\n  {} bytes: vertex states, {} ({})", state_bytes, state_count,
                                fmt::join(state_list, ", "));
        states_listed = true;
      }
    }
    // Whose exchange phases its actions are: the steps' labels that hold the most (a phase's
    // actions and its end word, as action_table_words counts them).
    std::map<std::string, uint64_t> by_label;
    const std::vector<ipu_step>& steps = steps_[worst->first];
    for (size_t i = 0; i < steps.size(); ++i)
      if ((steps[i].op == IPU_STEP_EXCHANGE || steps[i].op == IPU_STEP_EXCHANGE_EXTERNAL) &&
          steps[i].b != 0)
        by_label[i < step_labels_.size() ? step_labels_[i] : std::string()] +=
            uint64_t{steps[i].b} * sizeof(ipu_action) + 4;
    std::vector<std::pair<uint64_t, std::string>> largest;
    for (const auto& [label, bytes] : by_label)
      if (bytes > 0) largest.emplace_back(bytes, label.empty() ? "(unlabelled)" : label);
    std::sort(largest.begin(), largest.end(),
              [](const auto& a, const auto& b) { return a.first > b.first; });
    if (largest.size() > 8) largest.resize(8);
    if (!largest.empty()) {
      contents += "\n  its exchange actions' largest phases:";
      for (const auto& [bytes, label] : largest)
        contents += fmt::format("\n    {} bytes: {}", bytes, label);
    }
    throw CompileError(fmt::format(
        "{} needs {} bytes of data but has {} free above its firmware ({} bytes over), the fullest "
        "of the {} tile{} of {} that do not fit ({}); on it:{}",
        where(worst->first), worst->second, free, worst->second - free, over.size(),
        over.size() == 1 ? "" : "s", replicas_ * replica_tiles_, fmt::join(chips, ", "), contents));
  }
  std::ostringstream report;
  report << stacks_summary(stacks_) << "\n";
  for (unsigned t : tiles_) {
    TileMemory& m = memory_[t];
    const auto& steps = steps_[t];
    const auto& acts = actions_[t];
    const auto& vs = vertices_[t];
    const auto [steps_at, actions_at, vertices_at, programs_at] = at[t];
    const unsigned replica = t / replica_tiles_, tile = t % replica_tiles_;
    if (replica == 0 && m.used(heap_start_) > exe_.fullest_tile.used)
      exe_.fullest_tile = {tile, m.used(heap_start_), m.limit - heap_start_};
    if (replica == 0) {
      exe_.most_exchange_table_bytes =
          std::max(exe_.most_exchange_table_bytes,
                   static_cast<uint32_t>(4 * action_table_words(steps, acts.size()) +
                                         4 * dest_lists_[t].size()));
      report << fmt::format("{:>9}: {:7} bytes of {} ({:.1f}%)\n", where(t), m.used(heap_start_),
                            m.limit - heap_start_,
                            100.0 * m.used(heap_start_) / (m.limit - heap_start_));
    }
    auto& bytes = initial_[t];
    bytes.resize(m.next - heap_start_, 0);
    const ipu_tile_program header{IPU_PROGRAM_MAGIC,
                                  steps_at,
                                  actions_at,
                                  vertices_at,
                                  static_cast<uint32_t>(steps.size()),
                                  programs_at,
                                  static_cast<uint32_t>(program_steps_.size()),
                                  0,
                                  stacks_.supervisor_bytes,
                                  stacks_.worker_bytes};
    std::memcpy(bytes.data(), &header, sizeof header);
    // The table as the runtime reads it (ipu_program.h): words, each phase's actions and then
    // its end word; each exchange step's a is the word of its first action. Each action's wait
    // is from the one before it in its phase (the phase's first: from its base).
    std::vector<ipu_step> placed = steps;
    std::vector<uint32_t> table;
    table.reserve(action_table_words(steps, acts.size()));
    for (ipu_step& st : placed) {
      if ((st.op != IPU_STEP_EXCHANGE && st.op != IPU_STEP_EXCHANGE_EXTERNAL) || st.b == 0)
        continue;
      const uint32_t first = st.a;
      st.a = static_cast<uint32_t>(table.size());
      for (uint32_t i = first; i < first + st.b; ++i) {
        const int64_t previous = i == first ? IPU_ACTION_FIRST_KEY : acts[i - 1].offset;
        ipu_action e;
        try {
          e = encode_action(acts[i], previous);
        } catch (const CompileError& err) {  // named by its tile and its offset in the phase
          throw CompileError(
              fmt::format("{}, action at offset {}: {}", where(t), acts[i].offset, err.what()));
        }
        table.insert(table.end(), {e.wait, e.address, e.words, e.with});
      }
      table.push_back(IPU_ACTION_END);
    }
    // The last end word's loads read three words on (the runtime loads a whole action).
    if (!table.empty()) table.insert(table.end(), 3, 0);
    place(bytes, steps_at - heap_start_, placed);
    place(bytes, programs_at - heap_start_, program_steps_);
    place(bytes, actions_at - heap_start_, table);
    place(bytes, vertices_at - heap_start_, vs);
  }
  for (const TensorInfo& t : graph_.tensors()) {
    if (t.initial.empty()) continue;
    for (unsigned r = 0; r < replicas_; ++r)
      for (const Placement& p : exe_.tensors.at(t.name)) {
        const size_t size = dtype_size(t.type);
        std::memcpy(initial_[machine_tile(r, p.tile)].data() + (p.address - heap_start_),
                    t.initial.data() + p.begin * size, (p.end - p.begin) * size);
      }
  }
  exe_.memory_report = report.str();
}

std::vector<StoredRun> stored_runs(const std::vector<uint8_t>& bytes) {
  // A gap shorter than this stays inside a run: a segment costs a program header and a DMA
  // descriptor, and a page is what the host's memory saves.
  constexpr size_t kLeastGap = 4096;
  std::vector<StoredRun> runs;
  size_t i = 0;
  const size_t n = bytes.size();
  while (i < n && bytes[i] == 0) ++i;
  if (i == n) return n == 0 ? runs : std::vector<StoredRun>{{0, static_cast<uint32_t>(n), 0}};
  // Leading zeros belong to the first run (it starts where the data does, at the tile's header).
  size_t begin = 0;
  while (i < n) {
    size_t last = i;  // the run's last non-zero byte
    size_t j = i;
    while (j < n) {
      if (bytes[j] != 0) {
        last = j++;
      } else {
        size_t k = j;
        while (k < n && bytes[k] == 0) ++k;
        if (k == n || k - j >= kLeastGap) break;
        j = k;
      }
    }
    size_t next = last + 1;
    while (next < n && bytes[next] == 0) ++next;
    runs.push_back({static_cast<uint32_t>(begin), static_cast<uint32_t>(next),
                    static_cast<uint32_t>(last + 1 - begin)});
    begin = i = next;
  }
  return runs;
}

void Compilation::write_image() {
  // The firmware on every tile of every replica, plus the tile's data.
  const unsigned per_chip = graph_.target().chip().tiles;
  exe_.image.path = "<compiled>";
  exe_.image.entry = firmware_.entry;
  exe_.image.symbols = firmware_.symbols;
  exe_.image.function_sizes = firmware_.function_sizes;
  exe_.image.object_sizes = firmware_.object_sizes;
  exe_.image.sections[std::string(kDebugSection)] = firmware_debug_;
  unsigned index = 0;
  for (unsigned t : tiles_) {
    const unsigned chip = t / per_chip, tile = t % per_chip;
    for (const ElfSegment& s : firmware_.segments) {
      if (s.mem_size == 0) continue;
      ElfSegment copy = s;
      copy.index = index++;
      copy.chip = chip;
      copy.paddr = tile_physical_address(tile, s.paddr);
      exe_.image.segments.push_back(std::move(copy));
    }
    // The tile's data in segments that each hold a run of bytes and end in the zeros up to the
    // next: most of a tile's data is tensors without initial values and scratch, all zeros,
    // which the image then neither stores nor loads.
    std::vector<uint8_t>& bytes = initial_[t];
    for (const auto& [begin, end, stored] : stored_runs(bytes)) {
      ElfSegment data;
      data.index = index++;
      data.chip = chip;
      data.vaddr = heap_start_ + begin;
      data.paddr = tile_physical_address(tile, data.vaddr);
      data.data.assign(bytes.begin() + begin, bytes.begin() + begin + stored);
      data.mem_size = end - begin;
      exe_.image.segments.push_back(std::move(data));
    }
    std::vector<uint8_t>().swap(bytes);  // in the image now
  }
}

void Compilation::write_manifest() {
  // Written with a JSON library: names come from the user and are escaped as JSON needs.
  using Json = nlohmann::ordered_json;
  const hw::MachineConfig& machine = graph_.target().machine;
  Json m;
  m["target"] = {{"preset", machine.preset},
                 {"chips", machine.chips},
                 {"tiles", machine.chip.tiles},
                 {"clock_hz", machine.chip.tile.clock_hz},
                 {"replicas", replicas_}};
  m["tiles_used"] = tiles_.size();
  m["supersteps"] = exe_.supersteps;
  m["tensors"] = Json::array();
  for (const TensorInfo& t : graph_.tensors())
    m["tensors"].push_back({{"name", t.name},
                            {"type", dtype_name(t.type)},
                            {"shape", t.shape},
                            {"pieces", t.mapping.size()}});
  m["streams"] = Json::array();
  for (const auto& [name, s] : graph_.streams())
    m["streams"].push_back(
        {{"name", name},
         {"type", dtype_name(s.type)},
         {"elements", s.elements},
         {"direction",
          s.direction == StreamDirection::kHostToDevice ? "host_to_device" : "device_to_host"}});
  m["remote_buffers"] = Json::array();
  for (const auto& [name, b] : exe_.remote_buffers)
    m["remote_buffers"].push_back({{"name", name},
                                   {"type", dtype_name(b.info.type)},
                                   {"elements", b.info.elements},
                                   {"entries", b.info.entries},
                                   {"offset", b.offset}});
  m["programs"] = Json::array();
  for (size_t i = 0; i < exe_.programs.size(); ++i)
    m["programs"].push_back({{"name", exe_.programs[i].name},
                             {"first_step", program_steps_[i]},
                             {"supersteps", exe_.programs[i].supersteps}});
  // The programs' structure: the first tile's steps (every tile runs the same sequence).
  static const char* const kStepNames[] = {
      "end",        "execute",           "sync",     "exchange", "repeat", "repeat_end",
      "host_sync",  "exchange_external", "dispatch", "goto",     "call",   "return",
      "stream_slot"};
  m["steps"] = Json::array();
  const std::vector<ipu_step>& steps = steps_[*tiles_.begin()];
  for (size_t i = 0; i < steps.size(); ++i) {
    const ipu_step& st = steps[i];
    Json step = {{"step", st.op < std::size(kStepNames) ? kStepNames[st.op] : "?"}};
    if (st.op == IPU_STEP_EXECUTE) step["vertices_on_first_tile"] = st.b;
    if (st.op == IPU_STEP_EXCHANGE || st.op == IPU_STEP_EXCHANGE_EXTERNAL)
      step["end_cycles"] = st.c;
    if (st.op == IPU_STEP_REPEAT) step["count"] = st.a;
    if (st.op == IPU_STEP_GOTO || st.op == IPU_STEP_CALL) step["to"] = st.a;
    if (st.op == IPU_STEP_STREAM_SLOT) step["odd_uses_to"] = st.b;
    if (st.op == IPU_STEP_SYNC && st.a != 0)
      step["scope"] = st.a == hw::sync_group::kExternal ? "external"
                      : st.a == hw::sync_group::kGs1    ? "gs1"
                                                        : "gs2";
    if (st.op == IPU_STEP_HOST_SYNC) {
      const HostTransfer& h = exe_.host_transfers.at(st.a);
      step["stream"] = h.stream;
      step["tensor"] = h.tensor;
    }
    const std::string& label = exe_.control.at(i).label;
    if (!label.empty()) step["label"] = label;
    m["steps"].push_back(std::move(step));
  }
  exe_.manifest = m.dump(1) + "\n";
  exe_.image.sections[".ipu.manifest"] =
      std::vector<uint8_t>(exe_.manifest.begin(), exe_.manifest.end());
}

}  // namespace ipu::sdk

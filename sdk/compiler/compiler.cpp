#include "compiler.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "firmware/include/ipu_program.h"
#include "sdk/image/elf_writer.h"

namespace ipu::sdk {
namespace {

// ---- firmware ----

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Builds the firmware with every codelet; returns the ELF path.
std::string build_firmware(const Graph& graph, const std::string& dir) {
  std::string sources, keep;
  std::set<std::string> files;  // a file may define several codelets: compile it once
  for (const auto& [name, c] : graph.codelets()) {
    if (files.insert(c.source).second) sources += " " + shell_quote(c.source);
    keep += " -Wl,--undefined=" + name;  // codelets are reached only through vertex tables
  }
  const std::string fw = IPU_FIRMWARE_SOURCE_DIR;
  std::string elf = dir + "/firmware.elf";
  const std::string log = dir + "/compile.log";
  const std::string command = fmt::format(
      "{} -march=rv32imf -mabi=ilp32f -O2 -Wall -ffp-contract=off -ffunction-sections "
      "-fdata-sections -nostartfiles "
      "-I{}/include -I{} -T {}/tile.ld -Wl,--gc-sections -Wl,--no-warn-rwx-segments "
      "--specs=picolibc.specs "
      "{}/runtime/crt0.S {}/runtime/console.c {}/runtime/bsp_runtime.c{}{} -o {} 2>{}",
      IPU_RISCV_GCC, fw, IPU_GENERATED_INCLUDE_DIR, fw, fw, fw, fw, sources, keep, shell_quote(elf),
      shell_quote(log));
  const int status = std::system(command.c_str());
  std::ifstream in(log);
  std::string diagnostics((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (status != 0)
    throw CompileError(fmt::format("codelets failed to compile:\n{}",
                                   diagnostics.empty() ? command : diagnostics));
  return elf;
}

// ---- memory ----

// A tile's free memory above the firmware: what the image must carry (control program, vertex
// states, constants) grows from the bottom; variables, which need no bytes in the image because
// tile SRAM starts zeroed, grow down from the top. The two must not meet.
struct TileMemory {
  uint32_t next = 0, top = 0, limit = 0;
  std::vector<std::pair<std::string, uint32_t>> contents;  // for the overflow report
  uint32_t allocate(uint32_t bytes, const std::string& what) {
    next = (next + 7) & ~7u;
    const uint32_t at = next;
    next += bytes;
    contents.emplace_back(what, bytes);
    return at;
  }
  uint32_t allocate_top(uint32_t bytes, const std::string& what) {
    const uint32_t need = (bytes + 7) & ~7u;
    top = need > top ? 0 : top - need;
    contents.emplace_back(what, bytes);
    return top;
  }
  bool overflows() const { return top == 0 || next > top; }
  uint32_t used(uint32_t base) const { return (next - base) + (limit - top); }
};

// Copies a vector's bytes to `offset` of `out` (nothing for an empty vector, whose data()
// may be null: memcpy from null is undefined even for zero bytes).
template <typename T>
void place(std::vector<uint8_t>& out, size_t offset, const std::vector<T>& items) {
  if (!items.empty()) std::memcpy(out.data() + offset, items.data(), sizeof(T) * items.size());
}

// ---- exchange schedule ----

struct Transfer {
  unsigned source_tile;
  uint32_t source_address;
  uint32_t words;
  std::vector<std::pair<unsigned, uint32_t>> destinations;  // (tile, address)
};

struct TileActions {
  std::vector<ipu_action> actions;
  uint32_t action_free = 0, send_free = 0, receive_free = 0;
};

struct Schedule {
  std::map<unsigned, TileActions> tiles;
  uint32_t end = 0;
};

}  // namespace

Executable compile(const Graph& graph, const Program& program, const CompileOptions& options) {
  const hw::ChipConfig& chip = graph.target().chip;
  Executable exe;
  exe.chip = chip;
  exe.streams = graph.streams();

  // 1. Validate tensors and the program.
  for (const TensorInfo& t : graph.tensors()) exe.tensor_info[t.name] = t;
  auto require_mapped = [&](Tensor t, const char* role) {
    const TensorInfo& i = graph.tensor(t);
    if (i.mapping.empty())
      throw GraphError(fmt::format("{} tensor '{}' is not mapped to any tile", role, i.name));
    return &i;
  };
  std::function<void(const Program&)> check = [&](const Program& p) {
    switch (p.kind) {
      case Program::Kind::kBroadcast: {
        const TensorInfo *s = require_mapped(p.source, "Broadcast source"),
                         *d = require_mapped(p.destination, "Broadcast destination");
        if (d->elements % s->elements != 0 || s->type != d->type)
          throw GraphError(fmt::format(
              "Broadcast from '{}' ({} x {}) to '{}' ({} x {}): the destination is not a "
              "whole number of source-sized chunks of the same type",
              s->name, s->elements, dtype_name(s->type), d->name, d->elements,
              dtype_name(d->type)));
        break;
      }
      case Program::Kind::kCopy: {
        const TensorInfo *s = require_mapped(p.source, "Copy source"),
                         *d = require_mapped(p.destination, "Copy destination");
        if (s->elements != d->elements || s->type != d->type)
          throw GraphError(fmt::format(
              "Copy from '{}' ({} x {}) to '{}' ({} x {}): shapes or types differ", s->name,
              s->elements, dtype_name(s->type), d->name, d->elements, dtype_name(d->type)));
        break;
      }
      case Program::Kind::kHostWrite:
      case Program::Kind::kHostRead: {
        const bool write = p.kind == Program::Kind::kHostWrite;
        const auto st = graph.streams().find(p.stream);
        if (st == graph.streams().end())
          throw GraphError(fmt::format("unknown stream '{}'", p.stream));
        const TensorInfo* t =
            require_mapped(write ? p.destination : p.source, write ? "HostWrite" : "HostRead");
        if ((st->second.direction == StreamDirection::kHostToDevice) != write)
          throw GraphError(fmt::format("stream '{}' goes the other way", p.stream));
        if (st->second.elements != t->elements || st->second.type != t->type)
          throw GraphError(fmt::format("stream '{}' ({} x {}) does not match tensor '{}' ({} x {})",
                                       p.stream, st->second.elements, dtype_name(st->second.type),
                                       t->name, t->elements, dtype_name(t->type)));
        break;
      }
      case Program::Kind::kExecute:
        if (p.compute_set.id >= graph.compute_sets().size())
          throw GraphError("Execute of an unknown compute set");
        break;
      default: break;
    }
    for (const Program& c : p.body) check(c);
  };
  check(program);

  // 2. Firmware.
  std::string dir = options.work_dir;
  if (dir.empty()) {
    char tmpl[] = "/tmp/ipu-compile-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) throw CompileError("cannot create a build directory under /tmp");
    dir = tmpl;
  } else {
    mkdir(dir.c_str(), 0755);
  }
  const ElfImage firmware = read_elf(build_firmware(graph, dir));
  const auto symbol = [&](const std::string& name) {
    const auto it = firmware.symbols.find(name);
    if (it == firmware.symbols.end())
      throw CompileError(fmt::format(
          "the firmware defines no symbol '{}' (is the codelet's C function named so?)", name));
    return it->second;
  };
  const uint32_t heap_start = symbol("__heap_start"), heap_end = symbol("__heap_end");

  // Active tiles: any tensor or vertex.
  std::set<unsigned> active;
  for (const TensorInfo& t : graph.tensors())
    for (const Interval& m : t.mapping) active.insert(m.tile);
  for (const VertexInfo& v : graph.vertices()) active.insert(v.tile);
  if (active.empty()) throw GraphError("the graph places nothing on any tile");

  // 3. Memory: header first, then tensors.
  std::map<unsigned, TileMemory> memory;
  for (unsigned t : active) {
    memory[t].next = heap_start;
    memory[t].top = memory[t].limit = heap_end & ~7u;
    memory[t].allocate(sizeof(ipu_tile_program), "control program header");
  }
  std::map<unsigned, std::vector<uint8_t>> initial;  // constant bytes by tile address offset
  for (const TensorInfo& t : graph.tensors()) {
    for (const Interval& m : t.mapping) {
      const uint32_t bytes = static_cast<uint32_t>((m.end - m.begin) * dtype_size(t.type));
      const std::string what = fmt::format("tensor '{}' [{}, {})", t.name, m.begin, m.end);
      const uint32_t address = t.initial.empty()
                                   ? memory[m.tile].allocate_top((bytes + 3) & ~3u, what)
                                   : memory[m.tile].allocate((bytes + 3) & ~3u, what);
      exe.tensors[t.name].push_back({m.tile, m.begin, m.end, address});
    }
  }
  auto address_of = [&](const Region& r) -> std::pair<unsigned, uint32_t> {
    const TensorInfo& t = graph.tensor(r.tensor);
    for (const Placement& p : exe.tensors.at(t.name))
      if (r.begin >= p.begin && r.begin < p.end)
        return {p.tile,
                p.address + static_cast<uint32_t>((r.begin - p.begin) * dtype_size(t.type))};
    throw GraphError(fmt::format("element {} of tensor '{}' is not mapped", r.begin, t.name));
  };

  // 4. Vertices and their states.
  std::map<unsigned, std::vector<ipu_vertex>> vertices;  // per tile
  std::map<unsigned, std::map<unsigned, std::pair<uint32_t, uint32_t>>>
      cs_range;  // tile -> cs -> (first, count)
  for (size_t cs = 0; cs < graph.compute_sets().size(); ++cs) {
    for (const VertexInfo& v : graph.vertices()) {
      if (v.compute_set != cs) continue;
      const CodeletInfo& c = graph.codelets().at(v.codelet);
      std::vector<uint32_t> state;
      for (const Field& f : c.fields) {
        const Binding& b = v.fields.at(f.name);
        state.push_back(std::holds_alternative<uint32_t>(b)
                            ? std::get<uint32_t>(b)
                            : address_of(std::get<Region>(b)).second);
      }
      const uint32_t at = memory[v.tile].allocate(static_cast<uint32_t>(4 * state.size()),
                                                  fmt::format("vertex state ({})", v.codelet));
      auto& bytes = initial[v.tile];
      const uint32_t offset = at - heap_start;
      if (bytes.size() < offset + 4 * state.size()) bytes.resize(offset + 4 * state.size());
      place(bytes, offset, state);
      auto& range = cs_range[v.tile][static_cast<unsigned>(cs)];
      if (range.second == 0) range.first = static_cast<uint32_t>(vertices[v.tile].size());
      // A six-worker vertex is six table entries sharing one state: the runtime starts each.
      for (unsigned w = 0; w < v.workers; ++w) {
        ++range.second;
        vertices[v.tile].push_back({symbol(v.codelet), at});
      }
    }
  }

  // 5. Lower the program to steps; schedule each Copy.
  struct TileSteps {
    std::vector<ipu_step> steps;
    std::vector<ipu_action> actions;
  };
  std::map<unsigned, TileSteps> lowered;
  std::map<unsigned, std::vector<uint32_t>>
      dest_lists;  // words of {count, tiles...} lists per tile
  auto emit_all = [&](uint32_t op, uint32_t a, uint32_t b, uint32_t c) {
    for (unsigned t : active) lowered[t].steps.push_back({op, a, b, c});
  };
  unsigned transfers_ids = 0;
  std::function<void(const Program&)> lower = [&](const Program& p) {
    switch (p.kind) {
      case Program::Kind::kSequence:
        for (const Program& c : p.body) lower(c);
        break;
      case Program::Kind::kExecute:
        for (unsigned t : active) {
          const auto& ranges = cs_range[t];
          const auto r = ranges.find(p.compute_set.id);
          lowered[t].steps.push_back({IPU_STEP_EXECUTE, r == ranges.end() ? 0 : r->second.first,
                                      r == ranges.end() ? 0 : r->second.second, 0});
        }
        break;
      case Program::Kind::kSync:
        emit_all(IPU_STEP_SYNC, 0, 0, 0);
        ++exe.supersteps;
        break;
      case Program::Kind::kRepeat: {
        const uint32_t begin = static_cast<uint32_t>(lowered[*active.begin()].steps.size());
        emit_all(IPU_STEP_REPEAT, p.count, 0, 0);
        for (const Program& c : p.body) lower(c);
        emit_all(IPU_STEP_REPEAT_END, begin, 0, 0);
        const uint32_t after = static_cast<uint32_t>(lowered[*active.begin()].steps.size());
        for (unsigned t : active) lowered[t].steps[begin].b = after;
        break;
      }
      case Program::Kind::kHostWrite:
      case Program::Kind::kHostRead: {
        const bool write = p.kind == Program::Kind::kHostWrite;
        const unsigned id = transfers_ids++;
        exe.host_transfers.push_back(
            {id, p.stream, write, graph.tensor(write ? p.destination : p.source).name});
        emit_all(IPU_STEP_HOST_SYNC, id, 0, 0);
        ++exe.supersteps;
        break;
      }
      case Program::Kind::kCopy:
      case Program::Kind::kBroadcast: {
        // Split into (source tile, destination tile) runs that are contiguous on both sides; a
        // broadcast does so once per source-sized chunk of the destination.
        const TensorInfo& s = graph.tensor(p.source);
        const size_t size = dtype_size(s.type);
        std::vector<Transfer> transfers;
        const auto& sp = exe.tensors.at(s.name);
        const auto& dp = exe.tensors.at(graph.tensor(p.destination).name);
        const size_t chunks = graph.tensor(p.destination).elements / s.elements;
        for (size_t chunk = 0; chunk < chunks; ++chunk)
          for (const Placement& a : sp)
            for (const Placement& b : dp) {
              const size_t shift =
                  chunk * s.elements;  // destination element = source element + shift
              const size_t lo = std::max(a.begin, b.begin > shift ? b.begin - shift : 0);
              const size_t hi = std::min(a.end, b.end > shift ? b.end - shift : 0);
              if (lo >= hi || b.end <= shift || b.begin >= shift + s.elements) continue;
              const uint32_t from = a.address + static_cast<uint32_t>((lo - a.begin) * size);
              const uint32_t to = b.address + static_cast<uint32_t>((lo + shift - b.begin) * size);
              const uint32_t words = static_cast<uint32_t>(((hi - lo) * size + 3) / 4);
              // Multicast: the same source words to another receiver join one send.
              auto same = std::find_if(transfers.begin(), transfers.end(), [&](const Transfer& x) {
                return x.source_tile == a.tile && x.source_address == from && x.words == words &&
                       std::none_of(x.destinations.begin(), x.destinations.end(),
                                    [&](const auto& d) { return d.first == b.tile; });
              });
              if (same != transfers.end())
                same->destinations.emplace_back(b.tile, to);
              else
                transfers.push_back({a.tile, from, words, {{b.tile, to}}});
            }
        // Greedy schedule with the exchange's cost model (ChipConfig::exchange_latency).
        Schedule sched;
        const uint32_t gap = options.action_gap, setup = options.receive_setup;
        for (unsigned t : active)
          sched.tiles[t].action_free = gap;  // time to reach the action loop
        std::vector<std::pair<unsigned, ipu_action>> copies;
        for (const Transfer& x : transfers) {
          // Even a tile's own data goes through the exchange (a tile can receive its own send):
          // a word per cycle, where the supervisor would copy one every ~30 cycles.
          TileActions& src = sched.tiles[x.source_tile];
          uint32_t t = std::max(src.action_free, src.send_free);
          for (const auto& [d, address] : x.destinations) {
            const uint32_t lat = chip.exchange_latency(x.source_tile, d);
            const TileActions& dst = sched.tiles[d];
            if (d == x.source_tile) {
              // Receiving its own send: the receive action comes first, a whole gap before the
              // send, after the tile's previous action and previous transfer's last word.
              t = std::max(
                  {t, dst.action_free + gap, dst.receive_free + options.action_slack + gap});
              continue;
            }
            const uint32_t need_setup =
                dst.action_free + setup;  // receive action at arrival - setup
            if (need_setup > lat + 1 && t < need_setup - lat - 1) t = need_setup - lat - 1;
            // The receive action (listen + buffer) comes after the previous transfer's last word,
            // and `setup` cycles before this transfer's first.
            const uint32_t after_previous = dst.receive_free + options.action_slack + setup;
            if (after_previous > lat + 1 && t < after_previous - lat - 1)
              t = after_previous - lat - 1;
          }
          const uint32_t per_cycle = chip.exchange.words_per_cycle;
          const uint32_t duration = (x.words + per_cycle - 1) / per_cycle;
          for (const auto& [d, address] : x.destinations) {
            const uint32_t lat = chip.exchange_latency(x.source_tile, d);
            TileActions& dst = sched.tiles[d];
            const uint32_t first_arrival = t + 1 + lat;
            const uint32_t receive_at = d == x.source_tile ? t - gap : first_arrival - setup;
            dst.actions.push_back(
                {receive_at, IPU_ACTION_RECEIVE, x.source_tile, x.words, address, 0});
            dst.action_free = receive_at + gap;
            dst.receive_free = first_arrival + duration;
            sched.end = std::max(sched.end, dst.receive_free);
          }
          std::vector<uint32_t> list{static_cast<uint32_t>(x.destinations.size())};
          for (const auto& d : x.destinations) list.push_back(d.first);
          auto& dl = dest_lists[x.source_tile];
          dl.insert(dl.end(), list.begin(), list.end());
          src.actions.push_back({t, IPU_ACTION_SEND, 0, x.words, x.source_address, 0});
          ++exe.exchange_sends;
          exe.exchange_destinations += static_cast<unsigned>(x.destinations.size());
          src.action_free = t + gap;
          src.send_free = t + 1 + duration;
          sched.end = std::max(sched.end, src.action_free);
        }
        // Local copies run after the timed actions; their cost is counted into the end.
        std::map<unsigned, uint32_t> copy_cycles;
        for (auto& [tile, action] : copies) {
          sched.tiles[tile].actions.push_back(action);
          // The runtime's copy loop is 5 instructions a word (30 cycles); 48 leaves a margin.
          copy_cycles[tile] += 48 * action.words + gap;
        }
        for (auto& [tile, c] : copy_cycles)
          sched.end = std::max(sched.end, sched.tiles[tile].action_free + c);
        sched.end += gap;
        for (unsigned t : active) {
          auto& acts = sched.tiles[t].actions;
          std::stable_sort(acts.begin(), acts.end(), [](const ipu_action& a, const ipu_action& b) {
            return a.kind != IPU_ACTION_COPY && (b.kind == IPU_ACTION_COPY || a.offset < b.offset);
          });
          auto& out = lowered[t];
          out.steps.push_back({IPU_STEP_EXCHANGE, static_cast<uint32_t>(out.actions.size()),
                               static_cast<uint32_t>(acts.size()), sched.end});
          out.actions.insert(out.actions.end(), acts.begin(), acts.end());
        }
        ++exe.supersteps;
        break;
      }
    }
  };
  lower(program);
  emit_all(IPU_STEP_END, 0, 0, 0);

  // Destination lists: each send's list follows its action order (sends keep their relative
  // order through the sort, as the list was appended in scheduling order).
  for (unsigned t : active) {
    auto& acts = lowered[t].actions;
    auto& lists = dest_lists[t];
    if (lists.empty()) continue;
    const uint32_t base =
        memory[t].allocate(static_cast<uint32_t>(4 * lists.size()), "exchange destination lists");
    size_t cursor = 0;
    for (ipu_action& a : acts) {
      if (a.kind != IPU_ACTION_SEND) continue;
      a.dests = base + static_cast<uint32_t>(4 * cursor);
      cursor += 1 + lists[cursor];
    }
    auto& bytes = initial[t];
    const uint32_t offset = base - heap_start;
    if (bytes.size() < offset + 4 * lists.size()) bytes.resize(offset + 4 * lists.size());
    std::memcpy(bytes.data() + offset, lists.data(), 4 * lists.size());
  }

  // 6. Lay out the control program, check memory, build the data segments.
  std::ostringstream report;
  for (unsigned t : active) {
    TileMemory& m = memory[t];
    TileSteps& ts = lowered[t];
    const auto& vs = vertices[t];
    const uint32_t steps_at =
        m.allocate(static_cast<uint32_t>(sizeof(ipu_step) * ts.steps.size()), "control steps");
    const uint32_t actions_at = m.allocate(
        static_cast<uint32_t>(sizeof(ipu_action) * ts.actions.size()), "exchange actions");
    const uint32_t vertices_at =
        m.allocate(static_cast<uint32_t>(sizeof(ipu_vertex) * vs.size()), "vertex table");
    uint64_t needed = 0;
    for (const auto& [what, bytes] : m.contents) needed += (bytes + 7) & ~7u;
    if (m.overflows() || needed > m.limit - heap_start) {
      std::string contents;
      for (const auto& [what, bytes] : m.contents)
        contents += fmt::format("\n  {} bytes: {}", bytes, what);
      throw CompileError(
          fmt::format("tile {} needs {} bytes of data but has {} free above its firmware ({} bytes "
                      "over); on it:{}",
                      t, needed, m.limit - heap_start, needed - (m.limit - heap_start), contents));
    }
    report << fmt::format("tile {:4}: {:7} bytes of {} ({:.1f}%)\n", t, m.used(heap_start),
                          m.limit - heap_start,
                          100.0 * m.used(heap_start) / (m.limit - heap_start));
    auto& bytes = initial[t];
    bytes.resize(m.next - heap_start, 0);
    const ipu_tile_program header{IPU_PROGRAM_MAGIC, steps_at, actions_at, vertices_at,
                                  static_cast<uint32_t>(ts.steps.size())};
    std::memcpy(bytes.data(), &header, sizeof header);
    place(bytes, steps_at - heap_start, ts.steps);
    place(bytes, actions_at - heap_start, ts.actions);
    place(bytes, vertices_at - heap_start, vs);
  }
  for (const TensorInfo& t : graph.tensors()) {
    if (t.initial.empty()) continue;
    for (const Placement& p : exe.tensors.at(t.name)) {
      const size_t size = dtype_size(t.type);
      std::memcpy(initial[p.tile].data() + (p.address - heap_start),
                  t.initial.data() + p.begin * size, (p.end - p.begin) * size);
    }
  }
  exe.memory_report = report.str();

  // 7. The image: the firmware on every active tile, plus the tile's data.
  exe.image.path = "<compiled>";
  exe.image.entry = firmware.entry;
  exe.image.symbols = firmware.symbols;
  unsigned index = 0;
  for (unsigned t : active) {
    for (const ElfSegment& s : firmware.segments) {
      if (s.mem_size == 0) continue;
      ElfSegment copy = s;
      copy.index = index++;
      copy.paddr = tile_physical_address(t, s.paddr);
      exe.image.segments.push_back(std::move(copy));
    }
    ElfSegment data;
    data.index = index++;
    data.vaddr = heap_start;
    data.paddr = tile_physical_address(t, heap_start);
    data.data = initial[t];
    data.mem_size = static_cast<uint32_t>(initial[t].size());
    exe.image.segments.push_back(std::move(data));
  }

  // 8. The manifest.
  std::ostringstream m;
  m << fmt::format("{{\"target\": {{\"preset\": \"{}\", \"tiles\": {}, \"clock_hz\": {}}},\n",
                   chip.preset, chip.tiles, chip.tile.clock_hz);
  m << fmt::format(" \"tiles_used\": {}, \"supersteps\": {},\n \"tensors\": [", active.size(),
                   exe.supersteps);
  bool first = true;
  for (const TensorInfo& t : graph.tensors()) {
    std::vector<std::string> shape;
    for (size_t d : t.shape) shape.push_back(std::to_string(d));
    m << fmt::format(
        "{}\n  {{\"name\": \"{}\", \"type\": \"{}\", \"shape\": [{}], \"pieces\": {}}}",
        first ? "" : ",", t.name, dtype_name(t.type), fmt::join(shape, ", "), t.mapping.size());
    first = false;
  }
  m << "],\n \"streams\": [";
  first = true;
  for (const auto& [name, s] : graph.streams()) {
    m << fmt::format(
        "{}\n  {{\"name\": \"{}\", \"type\": \"{}\", \"elements\": {}, \"direction\": \"{}\"}}",
        first ? "" : ",", name, dtype_name(s.type), s.elements,
        s.direction == StreamDirection::kHostToDevice ? "host_to_device" : "device_to_host");
    first = false;
  }
  // The program's structure: tile 0's steps (every tile runs the same sequence).
  m << "],\n \"program\": [";
  static const char* const kStepNames[] = {"end",    "execute",    "sync",     "exchange",
                                           "repeat", "repeat_end", "host_sync"};
  const auto& steps0 = lowered[*active.begin()].steps;
  for (size_t i = 0; i < steps0.size(); ++i) {
    const ipu_step& st = steps0[i];
    std::string detail;
    if (st.op == IPU_STEP_EXECUTE) detail = fmt::format(", \"vertices_on_tile_0\": {}", st.b);
    if (st.op == IPU_STEP_EXCHANGE) detail = fmt::format(", \"end_cycles\": {}", st.c);
    if (st.op == IPU_STEP_REPEAT) detail = fmt::format(", \"count\": {}", st.a);
    if (st.op == IPU_STEP_HOST_SYNC) {
      const HostTransfer& h = exe.host_transfers.at(st.a);
      detail = fmt::format(", \"stream\": \"{}\", \"tensor\": \"{}\"", h.stream, h.tensor);
    }
    m << fmt::format("{}\n  {{\"step\": \"{}\"{}}}", i ? "," : "",
                     st.op < 7 ? kStepNames[st.op] : "?", detail);
  }
  m << "]}\n";
  exe.manifest = m.str();
  exe.image.sections[".ipu.manifest"] =
      std::vector<uint8_t>(exe.manifest.begin(), exe.manifest.end());
  return exe;
}

}  // namespace ipu::sdk

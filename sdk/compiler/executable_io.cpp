#include "executable_io.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>

#include "firmware/include/ipu_program.h"
#include "sdk/image/program.h"

namespace ipu::sdk {

using Json = nlohmann::ordered_json;

namespace {

// A JSON object written member by member, each value as soon as it is made: a POD's executable
// places millions of tensor pieces and vertex states, whose document in memory took 2.4 GB
// (nlohmann's values, 16 bytes each and an allocation per array) for text of a tenth of that.
// The bulk (pieces, vertex sites) is numbers, written straight into the text: building a small
// json value for each and dumping it took 34 s of a POD16's 16-chip compilation (`perf`). The
// text is what json::dump would write of the whole.
class ObjectWriter {
 public:
  explicit ObjectWriter(std::string& out) : out_(out) { out_ += '{'; }
  ~ObjectWriter() { out_ += '}'; }
  ObjectWriter(const ObjectWriter&) = delete;
  ObjectWriter& operator=(const ObjectWriter&) = delete;

  void member(const char* key, const Json& value) {
    name(key);
    out_ += value.dump();
  }
  // An array of `items`, each written by `write(out, item)` as one value.
  template <typename Items, typename Write>
  void array(const char* key, const Items& items, Write write) {
    name(key);
    out_ += '[';
    bool first = true;
    for (const auto& item : items) {
      if (!first) out_ += ',';
      first = false;
      write(out_, item);
    }
    out_ += ']';
  }

 private:
  void name(const char* key) {
    if (!first_) out_ += ',';
    first_ = false;
    out_ += Json(key).dump();
    out_ += ':';
  }
  std::string& out_;
  bool first_ = true;
};

// A string as JSON writes it (quoted, escaped).
void text(std::string& out, const std::string& s) { out += Json(s).dump(); }

// Whole numbers as a JSON array: [a,b,...].
template <typename Numbers>
void numbers(std::string& out, const Numbers& list) {
  out += '[';
  bool first = true;
  for (const auto n : list) {
    if (!first) out += ',';
    first = false;
    fmt::format_to(std::back_inserter(out), "{}", n);
  }
  out += ']';
}

}  // namespace

std::string runtime_json(const Executable& exe) {
  std::string out;
  {
    ObjectWriter j(out);
    j.member("replicas", exe.replicas);
    j.member("replica_tiles", exe.replica_tiles);
    j.member("command_address", exe.command_address);
    j.member("supersteps", exe.supersteps);
    const auto to = [](std::string& o) { return std::back_inserter(o); };
    j.array("tensors", exe.tensor_info, [&](std::string& o, const auto& entry) {
      const auto& [name, info] = entry;
      o += "{\"name\":";
      text(o, name);
      fmt::format_to(to(o), ",\"type\":\"{}\",\"shape\":", dtype_name(info.type));
      numbers(o, info.shape);
      // [graph tile, first element, end element, tile address] a piece
      fmt::format_to(to(o), ",\"elements\":{},\"pieces\":[", info.elements);
      if (const auto placed = exe.tensors.find(name); placed != exe.tensors.end()) {
        bool first = true;
        for (const Placement& p : placed->second) {
          fmt::format_to(to(o), "{}[{},{},{},{}]", first ? "" : ",", p.tile, p.begin, p.end,
                         p.address);
          first = false;
        }
      }
      o += "]}";
    });
    j.array("streams", exe.streams, [](std::string& o, const auto& entry) {
      const auto& [name, s] = entry;
      o += Json{{"name", name},
                {"type", dtype_name(s.type)},
                {"elements", s.elements},
                {"to_device", s.direction == StreamDirection::kHostToDevice}}
               .dump();
    });
    j.array("host_transfers", exe.host_transfers, [](std::string& o, const HostTransfer& t) {
      o += Json{{"stream", t.stream},  // by id
                {"to_device", t.to_device},
                {"tensor", t.tensor},
                {"staging", t.staging}}
               .dump();
    });
    j.array("remote_buffers", exe.remote_buffers, [](std::string& o, const auto& entry) {
      const auto& [name, b] = entry;
      o += Json{{"name", name},
                {"type", dtype_name(b.info.type)},
                {"elements", b.info.elements},
                {"entries", b.info.entries},
                {"offset", b.offset}}
               .dump();
    });
    j.array("replica_memory", exe.replica_memory, [](std::string& o, const ReplicaMemory& m) {
      o += Json{{"gateway", m.gateway}, {"base", m.base}}.dump();
    });
    j.array("programs", exe.programs, [](std::string& o, const ProgramInfo& p) {
      o += Json{{"name", p.name},
                {"host_transfers", p.host_transfers},
                {"supersteps", p.supersteps},
                {"first_step", p.first_step}}
               .dump();
    });
    // [op, a, b, label] per step, and the chips that step over it where some do
    j.array("control", exe.control, [&](std::string& o, const ControlStep& s) {
      fmt::format_to(to(o), "[{},{},{},", s.op, s.a, s.b);
      text(o, s.label);
      if (!s.idle_chips.empty()) {
        o += ',';
        numbers(o, s.idle_chips);
      }
      o += ']';
    });
    j.member("compute_sets", exe.compute_sets);
    // [machine tile, vertex state address, compute set]
    j.array("vertex_sites", exe.vertex_sites, [&](std::string& o, const auto& entry) {
      fmt::format_to(to(o), "[{},{},{}]", entry.first.first, entry.first.second, entry.second);
    });
  }
  out += '\n';
  return out;
}

bool has_runtime_section(const ElfImage& image) {
  return image.sections.count(kRuntimeSection) != 0;
}

namespace {

// Reads the section's JSON, every value checked for its kind and range; a failure names the
// image and the value's place ("tensors[2].pieces[5][3]").
class SectionReader {
 public:
  explicit SectionReader(const std::string& image) : image_(image) {}

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw ImageError(fmt::format("{}: the {} section is corrupt: {}{}{}", image_, kRuntimeSection,
                                 where, where.empty() ? "" : " ", what));
  }

  const Json& member(const Json& object, const char* key, const std::string& where) const {
    if (!object.is_object()) fail(where, "is not an object");
    const auto it = object.find(key);
    if (it == object.end()) fail(where, fmt::format("has no '{}'", key));
    return *it;
  }
  static std::string field(const std::string& where, const char* key) {
    return where.empty() ? key : where + "." + key;
  }
  const Json& array(const Json& object, const char* key, const std::string& where) const {
    const Json& v = member(object, key, where);
    if (!v.is_array()) fail(field(where, key), "is not an array");
    return v;
  }
  uint64_t count(const Json& v, const std::string& where, uint64_t max) const {
    if (!v.is_number_unsigned()) fail(where, "is not a whole number");
    const uint64_t n = v.get<uint64_t>();
    if (n > max) fail(where, fmt::format("is {}, more than {}", n, max));
    return n;
  }
  uint64_t count(const Json& object, const char* key, const std::string& where,
                 uint64_t max) const {
    return count(member(object, key, where), field(where, key), max);
  }
  std::string text(const Json& object, const char* key, const std::string& where) const {
    const Json& v = member(object, key, where);
    if (!v.is_string()) fail(field(where, key), "is not a string");
    return v.get<std::string>();
  }
  bool flag(const Json& object, const char* key, const std::string& where) const {
    const Json& v = member(object, key, where);
    if (!v.is_boolean()) fail(field(where, key), "is not true or false");
    return v.get<bool>();
  }
  // The name, type and element count every tensor, stream and remote buffer has.
  struct Typed {
    std::string name;
    DType type;
    uint64_t elements;
  };
  Typed typed(const Json& object, const std::string& where, uint64_t max_elements) const {
    return {text(object, "name", where), type(object, where),  // in this order (braces)
            count(object, "elements", where, max_elements)};
  }
  DType type(const Json& object, const std::string& where) const {
    const std::string name = text(object, "type", where);
    for (DType t : {DType::kF32, DType::kF16, DType::kI32, DType::kU32, DType::kU8})
      if (name == dtype_name(t)) return t;
    fail(field(where, "type"), fmt::format("'{}' is not a type (f32, f16, i32, u32 or u8)", name));
  }

 private:
  std::string image_;
};

std::string at(const char* list, size_t i) { return fmt::format("{}[{}]", list, i); }

}  // namespace

Executable read_executable(const ElfImage& image, const hw::MachineConfig& machine) {
  check_manifest(image, machine);  // built for this machine: its tiles and clock
  const auto section = image.sections.find(kRuntimeSection);
  if (section == image.sections.end())
    throw ImageError(fmt::format(
        "{}: the image has no {} section: it was not saved by the SDK compiler (or by one older "
        "than this simulator), so its tensors and streams are unknown",
        image.path, kRuntimeSection));
  const Json j = Json::parse(section->second.begin(), section->second.end(), nullptr, false);
  const SectionReader r(image.path);
  if (j.is_discarded()) r.fail("", "it is not valid JSON");
  if (!j.is_object()) r.fail("", "it is not a JSON object");

  Executable exe;
  exe.image = image;
  exe.machine = machine;
  const uint64_t machine_tiles = uint64_t{machine.chips} * machine.chip.tiles;
  exe.replicas = static_cast<unsigned>(r.count(j, "replicas", "", machine_tiles));
  exe.replica_tiles = static_cast<unsigned>(r.count(j, "replica_tiles", "", machine_tiles));
  if (exe.replicas == 0 || exe.replica_tiles == 0 ||
      uint64_t{exe.replicas} * exe.replica_tiles > machine_tiles)
    r.fail("", fmt::format("{} replicas of {} tiles do not fit the machine's {} tiles",
                           exe.replicas, exe.replica_tiles, machine_tiles));
  const uint64_t sram_begin = machine.chip.tile.sram_base,
                 sram_end = sram_begin + machine.chip.tile.sram_bytes;
  // What a replica's tiles can hold: no tensor or stream of a replica is larger, so no crafted
  // size makes the runtime (or ipu-sim's files) allocate more than the machine's own memory.
  const uint64_t replica_bytes_held = uint64_t{exe.replica_tiles} * machine.chip.tile.sram_bytes;
  // The runtime's DMA reaches only tiles the image gives a program: a piece elsewhere would stop
  // a run half way, so it is refused here, before anything runs.
  const hw::LoadedProgram loaded = load_program(image, machine);
  auto check_loaded = [&](unsigned graph_tile, const std::string& where) {
    for (unsigned replica = 0; replica < exe.replicas; ++replica) {
      const unsigned tile = replica * exe.replica_tiles + graph_tile;
      if (loaded.tiles.count(tile) == 0)
        r.fail(where, fmt::format("lies on tile {} (replica {}), which the image gives no program",
                                  tile, replica));
    }
  };
  // [address, address + bytes) inside a tile's SRAM.
  auto check_sram = [&](uint64_t address, uint64_t bytes, const std::string& where) {
    if (address < sram_begin || address + bytes > sram_end)
      r.fail(where, fmt::format("puts {} bytes at 0x{:x}, outside the tile's SRAM 0x{:x}-0x{:x}",
                                bytes, address, sram_begin, sram_end));
  };
  exe.command_address = static_cast<uint32_t>(r.count(j, "command_address", "", UINT32_MAX));
  check_sram(exe.command_address, 4, "command_address");
  exe.supersteps = static_cast<unsigned>(r.count(j, "supersteps", "", UINT32_MAX));

  const Json& tensors = r.array(j, "tensors", "");
  for (size_t i = 0; i < tensors.size(); ++i) {
    const std::string where = at("tensors", i);
    const auto [name, type, elements] = r.typed(tensors[i], where, replica_bytes_held);
    if (elements * dtype_size(type) > replica_bytes_held)
      r.fail(where,
             fmt::format("has {} bytes, more than a replica's {} tiles hold ({})",
                         elements * dtype_size(type), exe.replica_tiles, replica_bytes_held));
    TensorInfo info;
    info.name = name, info.type = type, info.elements = elements;
    const Json& shape = r.array(tensors[i], "shape", where);
    for (size_t d = 0; d < shape.size(); ++d)
      info.shape.push_back(r.count(shape[d], fmt::format("{}.shape[{}]", where, d), UINT32_MAX));
    const size_t size = dtype_size(info.type);
    const Json& pieces = r.array(tensors[i], "pieces", where);
    std::vector<Placement>& placed = exe.tensors[info.name];
    for (size_t k = 0; k < pieces.size(); ++k) {
      const std::string piece = fmt::format("{}.pieces[{}]", where, k);
      if (!pieces[k].is_array() || pieces[k].size() != 4)
        r.fail(piece, "is not [tile, first element, end element, address]");
      Placement p;
      p.tile = static_cast<unsigned>(r.count(pieces[k][0], piece + "[0]", exe.replica_tiles - 1));
      p.begin = r.count(pieces[k][1], piece + "[1]", info.elements);
      p.end = r.count(pieces[k][2], piece + "[2]", info.elements);
      p.address = static_cast<uint32_t>(r.count(pieces[k][3], piece + "[3]", UINT32_MAX));
      if (p.begin >= p.end)
        r.fail(piece, fmt::format("runs from element {} to {}", p.begin, p.end));
      check_sram(p.address, (p.end - p.begin) * size, piece);
      check_loaded(p.tile, piece);
      placed.push_back(p);
    }
    // A mapped tensor's pieces hold each of its elements once (as the graph maps it): its
    // size is then what its pieces hold.
    if (!placed.empty()) {
      std::vector<std::pair<uint64_t, uint64_t>> spans;
      for (const Placement& p : placed) spans.emplace_back(p.begin, p.end);
      std::sort(spans.begin(), spans.end());
      uint64_t next = 0;
      for (const auto& [begin, end] : spans) {
        if (begin > next)
          r.fail(where + ".pieces", fmt::format("hold no element {}-{} of the tensor's {}", next,
                                                begin - 1, info.elements));
        if (begin < next)
          r.fail(where + ".pieces", fmt::format("hold elements {}-{} twice (of the tensor's {})",
                                                begin, std::min(next, end) - 1, info.elements));
        next = end;
      }
      if (next != info.elements)
        r.fail(where + ".pieces", fmt::format("hold no element {}-{} of the tensor's {}", next,
                                              info.elements - 1, info.elements));
    }
    if (!exe.tensor_info.emplace(info.name, info).second)
      r.fail(where, fmt::format("names tensor '{}' a second time", info.name));
  }

  const Json& streams = r.array(j, "streams", "");
  for (size_t i = 0; i < streams.size(); ++i) {
    const std::string where = at("streams", i);
    const auto [name, type, elements] = r.typed(streams[i], where, replica_bytes_held);
    if (elements * dtype_size(type) > replica_bytes_held)
      r.fail(where,
             fmt::format("carries {} bytes, more than a replica's {} tiles hold ({})",
                         elements * dtype_size(type), exe.replica_tiles, replica_bytes_held));
    StreamInfo s{name, type, elements, StreamDirection::kHostToDevice};
    s.direction = r.flag(streams[i], "to_device", where) ? StreamDirection::kHostToDevice
                                                         : StreamDirection::kDeviceToHost;
    if (!exe.streams.emplace(s.name, s).second)
      r.fail(where, fmt::format("names stream '{}' a second time", s.name));
  }

  const uint64_t gateways = machine.gateway.present
                                ? (machine.chips + machine.gateway.chips_per_gateway - 1) /
                                      std::max(1u, machine.gateway.chips_per_gateway)
                                : 0;
  const uint64_t gateway_bytes = uint64_t{machine.gateway.dimms} * machine.gateway.dimm_bytes;
  const Json& buffers = r.array(j, "remote_buffers", "");
  uint64_t replica_bytes = 0;  // what a replica's remote buffers take of its gateway's memory
  for (size_t i = 0; i < buffers.size(); ++i) {
    const std::string where = at("remote_buffers", i);
    const auto [name, type, elements] = r.typed(buffers[i], where, gateway_bytes);
    RemotePlacement b;
    b.info.name = name, b.info.type = type, b.info.elements = elements;
    b.info.entries = static_cast<unsigned>(r.count(buffers[i], "entries", where, gateway_bytes));
    b.offset = r.count(buffers[i], "offset", where, gateway_bytes);
    b.entry_bytes = b.info.elements * dtype_size(b.info.type);
    const uint64_t end = b.offset + b.entry_bytes * b.info.entries;
    if (end > gateway_bytes)
      r.fail(where, fmt::format("ends at byte {} of a gateway's {}", end, gateway_bytes));
    replica_bytes = std::max(replica_bytes, end);
    if (!exe.remote_buffers.emplace(b.info.name, b).second)
      r.fail(where, fmt::format("names remote buffer '{}' a second time", b.info.name));
  }
  const Json& replica_memory = r.array(j, "replica_memory", "");
  if (!buffers.empty() && replica_memory.size() != exe.replicas)
    r.fail("replica_memory",
           fmt::format("has {} entries for {} replicas", replica_memory.size(), exe.replicas));
  for (size_t i = 0; i < replica_memory.size(); ++i) {
    const std::string where = at("replica_memory", i);
    if (gateways == 0) r.fail(where, "places remote buffers, but the machine has no gateway");
    ReplicaMemory m;
    m.gateway = static_cast<unsigned>(r.count(replica_memory[i], "gateway", where, gateways - 1));
    m.base = r.count(replica_memory[i], "base", where, gateway_bytes);
    if (m.base + replica_bytes > gateway_bytes)
      r.fail(where, fmt::format("puts {} bytes of remote buffers at byte {} of a gateway's {}",
                                replica_bytes, m.base, gateway_bytes));
    exe.replica_memory.push_back(m);
  }

  const Json& transfers = r.array(j, "host_transfers", "");
  for (size_t i = 0; i < transfers.size(); ++i) {
    const std::string where = at("host_transfers", i);
    HostTransfer t;
    t.id = static_cast<unsigned>(i);
    t.stream = r.text(transfers[i], "stream", where);
    t.to_device = r.flag(transfers[i], "to_device", where);
    t.tensor = r.text(transfers[i], "tensor", where);
    t.staging = r.text(transfers[i], "staging", where);
    const auto s = exe.streams.find(t.stream);
    if (s == exe.streams.end()) r.fail(where, fmt::format("names no stream: '{}'", t.stream));
    const auto tensor = exe.tensor_info.find(t.tensor);
    if (tensor == exe.tensor_info.end())
      r.fail(where, fmt::format("names no tensor: '{}'", t.tensor));
    const size_t stream_bytes = s->second.elements * dtype_size(s->second.type);
    if (tensor->second.elements * dtype_size(tensor->second.type) != stream_bytes)
      r.fail(where, fmt::format("moves tensor '{}' ({} {}) through stream '{}' ({} {})", t.tensor,
                                tensor->second.elements, dtype_name(tensor->second.type), t.stream,
                                s->second.elements, dtype_name(s->second.type)));
    if (t.to_device != (s->second.direction == StreamDirection::kHostToDevice))
      r.fail(where,
             fmt::format("moves data {} the device through stream '{}', which goes {} it",
                         t.to_device ? "to" : "from", t.stream, t.to_device ? "from" : "to"));
    if (!t.staging.empty()) {
      const auto b = exe.remote_buffers.find(t.staging);
      if (b == exe.remote_buffers.end())
        r.fail(where, fmt::format("stages in no remote buffer: '{}'", t.staging));
      if (b->second.entry_bytes != stream_bytes || b->second.info.entries == 0)
        r.fail(where, fmt::format("stages {} bytes in remote buffer '{}' of {}-byte entries",
                                  stream_bytes, t.staging, b->second.entry_bytes));
    }
    exe.host_transfers.push_back(t);
  }

  const Json& programs = r.array(j, "programs", "");
  if (programs.empty()) r.fail("programs", "is empty");
  std::set<std::string> names;
  for (size_t i = 0; i < programs.size(); ++i) {
    const std::string where = at("programs", i);
    ProgramInfo p;
    p.name = r.text(programs[i], "name", where);
    if (p.name.empty() || !names.insert(p.name).second)
      r.fail(where, fmt::format("has an empty or repeated name '{}'", p.name));
    const Json& ids = r.array(programs[i], "host_transfers", where);
    for (size_t k = 0; k < ids.size(); ++k)
      p.host_transfers.push_back(
          static_cast<unsigned>(r.count(ids[k], fmt::format("{}.host_transfers[{}]", where, k),
                                        transfers.empty() ? 0 : transfers.size() - 1)));
    if (!ids.empty() && transfers.empty())
      r.fail(where, "names host transfers, but there are none");
    p.supersteps = static_cast<unsigned>(r.count(programs[i], "supersteps", where, UINT32_MAX));
    p.first_step = static_cast<uint32_t>(r.count(programs[i], "first_step", where, UINT32_MAX));
    exe.programs.push_back(std::move(p));
  }

  // The control steps the host follows to name supersteps: every jump lands on a step.
  const Json& control = r.array(j, "control", "");
  for (size_t i = 0; i < control.size(); ++i) {
    const std::string where = at("control", i);
    if (!control[i].is_array() || control[i].size() < 4 || control[i].size() > 5 ||
        !control[i][3].is_string() || (control[i].size() == 5 && !control[i][4].is_array()))
      r.fail(where, "is not [op, a, b, label] or [op, a, b, label, [chips that step over it]]");
    ControlStep s;
    s.op = static_cast<uint32_t>(r.count(control[i][0], where + "[0]", IPU_STEP_STREAM_SLOT));
    s.a = static_cast<uint32_t>(r.count(control[i][1], where + "[1]", UINT32_MAX));
    s.b = static_cast<uint32_t>(r.count(control[i][2], where + "[2]", UINT32_MAX));
    s.label = control[i][3].get<std::string>();
    if (control[i].size() == 5) {
      const Json& chips = control[i][4];
      for (size_t k = 0; k < chips.size(); ++k) {
        const auto chip = static_cast<unsigned>(
            r.count(chips[k], fmt::format("{}[4][{}]", where, k), exe.machine.chips - 1));
        if (!s.idle_chips.empty() && chip <= s.idle_chips.back())
          r.fail(where, "lists the chips that step over it out of order");
        s.idle_chips.push_back(chip);
      }
    }
    exe.control.push_back(std::move(s));
  }
  const uint64_t steps = control.size();
  for (size_t i = 0; i < exe.control.size(); ++i) {
    const ControlStep& s = exe.control[i];
    const bool jumps =
        s.op == IPU_STEP_GOTO || s.op == IPU_STEP_CALL || s.op == IPU_STEP_REPEAT_END;
    const bool jumps_b = s.op == IPU_STEP_REPEAT || s.op == IPU_STEP_STREAM_SLOT;
    if ((jumps && s.a >= steps) || (jumps_b && s.b > steps))
      r.fail(at("control", i), fmt::format("jumps to step {} of {}", jumps_b ? s.b : s.a, steps));
    if (s.op == IPU_STEP_STREAM_SLOT && s.a >= IPU_STREAM_SLOT_COUNTERS)
      r.fail(at("control", i), fmt::format("counts a stream's uses in counter {} of {}", s.a,
                                           IPU_STREAM_SLOT_COUNTERS));
    if (s.op == IPU_STEP_HOST_SYNC && s.a >= exe.host_transfers.size())
      r.fail(at("control", i),
             fmt::format("makes host transfer {} of {}", s.a, exe.host_transfers.size()));
  }
  for (size_t i = 0; i < exe.programs.size(); ++i)
    if (exe.programs[i].first_step >= steps)
      r.fail(at("programs", i) + ".first_step",
             fmt::format("is step {} of {}", exe.programs[i].first_step, steps));

  const Json& sets = r.array(j, "compute_sets", "");
  for (size_t i = 0; i < sets.size(); ++i) {
    if (!sets[i].is_string()) r.fail(at("compute_sets", i), "is not a string");
    exe.compute_sets.push_back(sets[i].get<std::string>());
  }
  const Json& sites = r.array(j, "vertex_sites", "");
  for (size_t i = 0; i < sites.size(); ++i) {
    const std::string where = at("vertex_sites", i);
    if (!sites[i].is_array() || sites[i].size() != 3 || sets.empty())
      r.fail(where, "is not [machine tile, vertex state address, compute set]");
    const auto tile = static_cast<unsigned>(r.count(sites[i][0], where + "[0]", machine_tiles - 1));
    if (loaded.tiles.count(tile) == 0)
      r.fail(where, fmt::format("names tile {}, which the image gives no program", tile));
    const auto address = static_cast<uint32_t>(r.count(sites[i][1], where + "[1]", UINT32_MAX));
    exe.vertex_sites[{tile, address}] =
        static_cast<unsigned>(r.count(sites[i][2], where + "[2]", sets.size() - 1));
  }
  return exe;
}

}  // namespace ipu::sdk

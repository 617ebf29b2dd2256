#include "graph.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "base/printable.h"

namespace ipu::sdk {

Target Target::preset(const std::string& name, unsigned tiles, unsigned replicas) {
  try {
    return of(hw::machine_preset(name), tiles, replicas);
  } catch (const std::invalid_argument& e) {
    throw GraphError(e.what());
  }
}

Target Target::of(hw::MachineConfig machine, unsigned tiles, unsigned replicas) {
  Target t;
  t.machine = std::move(machine);
  if (tiles != 0) t.machine.chip.tiles = tiles;
  t.replicas = replicas;
  return t;
}

Graph::Graph(Target target) : target_(std::move(target)) {
  try {
    hw::validate(target_.machine);
  } catch (const std::invalid_argument& e) {
    throw GraphError(fmt::format("the target is not a machine: {}", e.what()));
  }
  const unsigned chips = target_.machine.chips, r = target_.replicas;
  if (r == 0 || chips % r != 0)
    throw GraphError(fmt::format(
        "the target's {} chip{} cannot be split into {} replicas (a replica is a whole number of "
        "chips)",
        chips, chips == 1 ? "" : "s", r));
}

unsigned Graph::tile(unsigned chip, unsigned tile) const {
  const unsigned chips = target_.replica_chips(), per_chip = target_.chip().tiles;
  if (chip >= chips || tile >= per_chip)
    throw GraphError(fmt::format(
        "chip {} tile {}: a replica of this target has {} chip{} of {} tiles (chips 0-{})", chip,
        tile, chips, chips == 1 ? "" : "s", per_chip, chips - 1));
  return chip * per_chip + tile;
}

std::string Graph::describe_tile(unsigned tile) const {
  const unsigned chips = target_.replica_chips();
  return chips == 1
             ? fmt::format("tile {}", tile)
             : fmt::format("tile {} ({})", tile, hw::tile_name(tile, target_.chip().tiles, chips));
}

std::string Graph::describe_size() const {
  const unsigned chips = target_.replica_chips();
  return chips == 1
             ? fmt::format("{} tiles", tiles())
             : fmt::format("{} tiles ({} chips of {})", tiles(), chips, target_.chip().tiles);
}

const TensorInfo& Graph::tensor(Tensor t) const {
  if (t.id >= tensors_.size())
    throw GraphError(fmt::format("tensor id {} is not in this graph", t.id));
  return tensors_[t.id];
}

TensorInfo& Graph::info(Tensor t) {
  if (t.id >= tensors_.size())
    throw GraphError(fmt::format("tensor id {} is not in this graph", t.id));
  return tensors_[t.id];
}

namespace {

// A tensor's or stream's name: ipu-sim's --stream NAME=FILE, --write-tensor NAME=FILE and
// --read-tensor NAME=FILE must be able to carry it, and reports print it.
void check_name(const char* kind, const std::string& name) {
  const bool bad_byte = std::any_of(name.begin(), name.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte < 0x20 || byte == 0x7f || c == '=';
  });
  if (name.empty() || bad_byte)
    throw GraphError(fmt::format(
        "{} name '{}' cannot be given on a command line (NAME=FILE): a name is not empty and "
        "holds no '=' and no control characters",
        kind, printable(name)));
}

}  // namespace

Tensor Graph::add_variable(DType type, std::vector<size_t> shape, const std::string& name) {
  check_name("tensor", name);
  size_t elements = 1;
  bool overflow = false;
  for (size_t d : shape) overflow |= __builtin_mul_overflow(elements, d, &elements);
  if (shape.empty() || (elements == 0 && !overflow))
    throw GraphError(fmt::format("tensor '{}' has an empty shape", name));
  // No tensor is larger than the replica's SRAM, where every element must be mapped.
  const uint64_t sram = uint64_t{tiles()} * target_.chip().tile.sram_bytes;
  if (overflow || elements > sram / dtype_size(type))
    throw GraphError(fmt::format(
        "tensor '{}' of shape {{{}}}: {} elements of {} do not fit the replica's {} bytes of "
        "tile memory",
        name, fmt::join(shape, ", "),
        overflow ? std::string("more than 2^64") : std::to_string(elements), dtype_name(type),
        sram));
  for (const TensorInfo& t : tensors_)
    if (t.name == name) throw GraphError(fmt::format("a tensor named '{}' exists already", name));
  tensors_.push_back({name, type, std::move(shape), elements, {}, {}});
  return {static_cast<unsigned>(tensors_.size() - 1)};
}

Tensor Graph::add_constant(DType type, std::vector<size_t> shape, const void* data,
                           const std::string& name) {
  const Tensor t = add_variable(type, std::move(shape), name);
  TensorInfo& i = info(t);
  i.initial.resize(i.elements * dtype_size(type));
  std::memcpy(i.initial.data(), data, i.initial.size());
  return t;
}

void Graph::set_tile_mapping(Tensor t, unsigned tile) {
  set_tile_mapping(t, {{0, tensor(t).elements, tile}});
}

void Graph::set_tile_mapping(Tensor t, std::vector<Interval> mapping) {
  TensorInfo& i = info(t);
  if (i.is_view())
    throw GraphError(fmt::format("tensor '{}' is a view of '{}': it is mapped as that tensor is",
                                 i.name, tensors_[i.view_of].name));
  for (const TensorInfo& v : tensors_)
    if (v.view_of == t.id)
      throw GraphError(fmt::format(
          "tensor '{}' has a view, '{}', made from its mapping: map a tensor before viewing it",
          i.name, v.name));
  std::sort(mapping.begin(), mapping.end(),
            [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  size_t next = 0;
  for (const Interval& m : mapping) {
    if (m.begin != next || m.end <= m.begin || m.end > i.elements)
      throw GraphError(fmt::format(
          "tensor '{}': mapping interval [{}, {}) on tile {} leaves a gap, overlaps or runs "
          "past its {} elements",
          i.name, m.begin, m.end, m.tile, i.elements));
    if (m.tile >= tiles())
      throw GraphError(fmt::format("tensor '{}': mapped to {}, but a replica of the target has {}",
                                   i.name, describe_tile(m.tile), describe_size()));
    // Exchange moves 32-bit words: every piece of a tensor must start on a word boundary.
    if ((m.begin * dtype_size(i.type)) % 4 != 0)
      throw GraphError(fmt::format(
          "tensor '{}': interval on tile {} starts at element {}, not on a 32-bit boundary "
          "({} elements)",
          i.name, m.tile, m.begin, 4 / dtype_size(i.type)));
    next = m.end;
  }
  if (next != i.elements)
    throw GraphError(
        fmt::format("tensor '{}': mapping covers {} of its {} elements", i.name, next, i.elements));
  i.mapping = std::move(mapping);
}

void Graph::map_evenly(Tensor t, unsigned first, unsigned count, size_t grain) {
  if (count == 0 || first + count > tiles())
    throw GraphError(fmt::format("tensor '{}': tiles {}..{} are not on the {}-tile target",
                                 tensor(t).name, first, first + count - 1, tiles()));
  std::vector<unsigned> range(count);
  for (unsigned k = 0; k < count; ++k) range[k] = first + k;
  map_evenly(t, range, grain);
}

void Graph::map_evenly(Tensor t, const std::vector<unsigned>& tiles, size_t grain) {
  const TensorInfo& i = tensor(t);
  if (tiles.empty()) throw GraphError(fmt::format("tensor '{}': no tiles to map it on", i.name));
  const size_t word = std::max<size_t>(1, 4 / dtype_size(i.type));
  grain = std::max(grain, word);
  const size_t grains = (i.elements + grain - 1) / grain, count = tiles.size();
  std::vector<Interval> mapping;
  size_t begin = 0;
  for (size_t k = 0; k < count && begin < i.elements; ++k) {
    const size_t mine = grains / count + (k < grains % count ? 1 : 0);
    const size_t end = std::min(i.elements, begin + mine * grain);
    if (end > begin) mapping.push_back({begin, end, tiles[k]});
    begin = end;
  }
  set_tile_mapping(t, std::move(mapping));  // checks each tile is on the target
}

Tensor Graph::slice(Tensor t, size_t begin, size_t end, std::vector<size_t> shape,
                    const std::string& name) {
  const TensorInfo base = tensor(t);  // a copy: adding the view may move the vector
  const std::string view = name.empty() ? fmt::format("{}[{}:{}]", base.name, begin, end) : name;
  if (begin >= end || end > base.elements)
    throw GraphError(fmt::format("view '{}': elements [{}, {}) are not inside the {} of '{}'", view,
                                 begin, end, base.elements, base.name));
  if (base.mapping.empty())
    throw GraphError(fmt::format("view '{}': tensor '{}' is not mapped yet", view, base.name));
  if ((begin * dtype_size(base.type)) % 4 != 0)
    throw GraphError(fmt::format(
        "view '{}' of '{}' starts at element {}, not on a 32-bit boundary ({} elements)", view,
        base.name, begin, 4 / dtype_size(base.type)));
  size_t elements = 1;
  for (size_t d : shape) elements *= d;
  if (shape.empty() || elements != end - begin)
    throw GraphError(fmt::format("view '{}': shape {{{}}} does not hold its {} elements", view,
                                 fmt::join(shape, ", "), end - begin));
  const Tensor v = add_variable(base.type, std::move(shape), view);
  TensorInfo& i = info(v);
  i.view_of = base.is_view() ? base.view_of : t.id;
  i.view_offset = base.view_offset + begin;
  for (const Interval& m : base.mapping)
    if (m.end > begin && m.begin < end)
      i.mapping.push_back({std::max(m.begin, begin) - begin, std::min(m.end, end) - begin, m.tile});
  return v;
}

void Graph::set_scratch(Tensor t) {
  TensorInfo& i = info(t);
  (i.is_view() ? tensors_[i.view_of] : i).scratch = true;
}

Tensor Graph::reshape(Tensor t, std::vector<size_t> shape, const std::string& name) {
  const TensorInfo& base = tensor(t);
  return slice(t, 0, base.elements, std::move(shape),
               name.empty() ? fmt::format("{}.reshaped", base.name) : name);
}

Region Graph::region(Tensor t) const { return {t, 0, tensor(t).elements}; }

Region Graph::region(Tensor t, size_t begin, size_t end) const {
  const TensorInfo& i = tensor(t);
  if (begin >= end || end > i.elements)
    throw GraphError(fmt::format("tensor '{}': region [{}, {}) is not inside its {} elements",
                                 i.name, begin, end, i.elements));
  return {t, begin, end};
}

// The interval of a mapping (sorted, disjoint) that could hold `index`: the first that ends
// after it.
static std::vector<Interval>::const_iterator interval_at(const std::vector<Interval>& mapping,
                                                         size_t index) {
  return std::upper_bound(mapping.begin(), mapping.end(), index,
                          [](size_t x, const Interval& m) { return x < m.end; });
}

unsigned Graph::tile_of(Tensor t, size_t index) const {
  const TensorInfo& i = tensor(t);
  const auto m = interval_at(i.mapping, index);
  if (m != i.mapping.end() && index >= m->begin) return m->tile;
  throw GraphError(
      fmt::format("tensor '{}' is not mapped to any tile (element {})", i.name, index));
}

void Graph::add_codelet(const std::string& name, const std::string& source,
                        std::vector<Field> fields) {
  // A codelet's name is its C function's: the compiler and linker take it, so nothing else.
  const bool identifier =
      !name.empty() && name.size() <= 255 &&
      (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_') &&
      std::all_of(name.begin(), name.end(),
                  [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }) &&
      std::all_of(name.begin(), name.end(), [](char c) { return (c & 0x80) == 0; });
  if (!identifier)
    throw GraphError(fmt::format(
        "codelet name '{}' is not a C identifier (letters, digits and _, not starting with a "
        "digit, at most 255): a codelet's name is its C function's",
        printable(name)));
  if (codelets_.count(name)) throw GraphError(fmt::format("codelet '{}' is declared twice", name));
  codelets_[name] = {name, source, std::move(fields)};
}

ComputeSet Graph::add_compute_set(const std::string& name) {
  compute_sets_.push_back(name);
  return {static_cast<unsigned>(compute_sets_.size() - 1)};
}

void Graph::add_vertex(ComputeSet cs, const std::string& codelet, unsigned tile,
                       std::map<std::string, Binding> fields, unsigned workers) {
  if (cs.id >= compute_sets_.size())
    throw GraphError("vertex added to a compute set that is not in this graph");
  // Formatted only for an error: a large graph adds hundreds of thousands of vertices.
  const auto where = [&] {
    return fmt::format("vertex {} of compute set '{}' on tile {}", vertices_->size(),
                       compute_sets_[cs.id], tile);
  };
  const auto c = codelets_.find(codelet);
  if (c == codelets_.end())
    throw GraphError(fmt::format("{}: unknown codelet '{}'", where(), codelet));
  if (tile >= tiles())
    throw GraphError(fmt::format("{}: {} is not on the target, whose replica has {}", where(),
                                 describe_tile(tile), describe_size()));
  for (const auto& entry : fields) {
    const std::string& name = entry.first;  // named: the lambda below captures it
    const auto f = std::find_if(c->second.fields.begin(), c->second.fields.end(),
                                [&](const Field& x) { return x.name == name; });
    if (f == c->second.fields.end())
      throw GraphError(fmt::format("{}: codelet '{}' has no field '{}'", where(), codelet, name));
  }
  std::vector<Binding> bound;
  bound.reserve(c->second.fields.size());
  for (const Field& f : c->second.fields) {
    const auto b = fields.find(f.name);
    if (b == fields.end())
      throw GraphError(
          fmt::format("{}: field '{}' of '{}' is not bound", where(), f.name, codelet));
    if (f.kind == FieldKind::kScalar) {
      if (!std::holds_alternative<uint32_t>(b->second))
        throw GraphError(
            fmt::format("{}: field '{}' is a scalar but is bound to a tensor", where(), f.name));
      bound.push_back(b->second);
      continue;
    }
    if (!std::holds_alternative<Region>(b->second))
      throw GraphError(
          fmt::format("{}: field '{}' is a tensor but is bound to a scalar", where(), f.name));
    const Region& r = std::get<Region>(b->second);
    const TensorInfo& t = tensor(r.tensor);
    if (t.type != f.type)
      throw GraphError(fmt::format("{}: field '{}' wants {} but tensor '{}' is {}", where(), f.name,
                                   dtype_name(f.type), t.name, dtype_name(t.type)));
    if (t.mapping.empty())
      throw GraphError(
          fmt::format("{}: field '{}' is bound to tensor '{}', which is not mapped to any tile",
                      where(), f.name, t.name));
    // The whole region must sit in one interval on this tile: a vertex reads only its own tile.
    auto m = interval_at(t.mapping, r.begin);
    if (m != t.mapping.end() && r.begin < m->begin) m = t.mapping.end();
    if (m == t.mapping.end() || m->tile != tile || r.end > m->end)
      throw GraphError(fmt::format(
          "{}: field '{}' is bound to elements [{}, {}) of tensor '{}', which are not all "
          "on tile {} (element {} is on tile {})",
          where(), f.name, r.begin, r.end, t.name, tile, r.begin,
          m == t.mapping.end() ? ~0u : m->tile));
    bound.push_back(b->second);
  }
  if (workers != 1 && workers != 6)
    throw GraphError(
        fmt::format("{}: a vertex runs on 1 worker or on all 6, not {}", where(), workers));
  if (vertices_.use_count() > 1)  // a copy shares them: this graph's own from now on
    vertices_ = std::make_shared<std::vector<VertexInfo>>(*vertices_);
  vertices_->push_back({codelet, tile, std::move(bound), cs.id, workers});
}

void Graph::add_host_stream(const std::string& name, DType type, size_t elements,
                            StreamDirection direction) {
  check_name("stream", name);
  if (streams_.count(name)) throw GraphError(fmt::format("stream '{}' is declared twice", name));
  const uint64_t sram = uint64_t{tiles()} * target_.chip().tile.sram_bytes;
  if (elements > sram / dtype_size(type))  // it feeds or drains tensors, which fit the SRAM
    throw GraphError(fmt::format(
        "stream '{}': {} elements of {} are more than the replica's {} bytes of tile memory", name,
        elements, dtype_name(type), sram));
  streams_[name] = {name, type, elements, direction};
}

RemoteBuffer Graph::add_remote_buffer(const std::string& name, DType type, size_t elements,
                                      unsigned entries) {
  const hw::GatewayConfig& g = target_.machine.gateway;
  if (!g.present)
    throw GraphError(fmt::format(
        "remote buffer '{}': the target ({}) has no IPU-Gateway, so no streaming memory; remote "
        "buffers need a machine (m2000, pod16, ...)",
        name, target_.machine.preset));
  for (const RemoteBufferInfo& b : remote_buffers_)
    if (b.name == name) throw GraphError(fmt::format("remote buffer '{}' is declared twice", name));
  if (entries == 0 || elements == 0)
    throw GraphError(
        fmt::format("remote buffer '{}' needs at least one entry of one element", name));
  if (elements * dtype_size(type) % 4 != 0)
    throw GraphError(fmt::format(
        "remote buffer '{}': an entry of {} {} elements is {} bytes, not a whole number of 32-bit "
        "words (tiles move streaming memory a word at a time)",
        name, elements, dtype_name(type), elements * dtype_size(type)));
  remote_buffers_.push_back({name, type, elements, entries});
  return RemoteBuffer{static_cast<unsigned>(remote_buffers_.size() - 1)};
}

const RemoteBufferInfo& Graph::remote_buffer(RemoteBuffer b) const {
  if (b.id >= remote_buffers_.size())
    throw GraphError(fmt::format("remote buffer id {} does not belong to this graph", b.id));
  return remote_buffers_[b.id];
}

Function Graph::add_function(const Program& body, const std::string& name) {
  for (const FunctionInfo& f : functions_)
    if (f.name == name) throw GraphError(fmt::format("a function named '{}' already exists", name));
  functions_.push_back({name, std::make_shared<const Program>(body)});
  return {static_cast<unsigned>(functions_.size() - 1)};
}

const FunctionInfo& Graph::function(Function f) const {
  if (f.id >= functions_.size())
    throw GraphError(fmt::format("Call of function id {}: the graph has {} function{}", f.id,
                                 functions_.size(), functions_.size() == 1 ? "" : "s"));
  return functions_[f.id];
}

Program Call(Function function) {
  Program p;
  p.kind = Program::Kind::kCall;
  p.function = function;
  return p;
}

Program Sequence(std::vector<Program> steps) {
  Program p;
  p.kind = Program::Kind::kSequence;
  p.body = std::move(steps);
  return p;
}
Program Execute(ComputeSet cs) {
  Program p;
  p.kind = Program::Kind::kExecute;
  p.compute_set = cs;
  return p;
}
Program Copy(Tensor source, Tensor destination) {
  Program p;
  p.kind = Program::Kind::kCopy;
  p.source = source;
  p.destination = destination;
  return p;
}
Program Copy(std::vector<std::pair<Region, Region>> pairs) {
  Program p;
  p.kind = Program::Kind::kCopy;
  p.pairs = std::move(pairs);
  return p;
}
Program Broadcast(Tensor source, Tensor destination) {
  Program p = Copy(source, destination);
  p.kind = Program::Kind::kBroadcast;
  return p;
}
Program Repeat(unsigned count, Program body) {
  Program p;
  p.kind = Program::Kind::kRepeat;
  p.count = count;
  p.body.push_back(std::move(body));
  return p;
}
Program Sync(SyncScope scope) {
  Program p;
  p.kind = Program::Kind::kSync;
  p.scope = scope;
  return p;
}
Program HostWrite(const std::string& stream, Tensor destination) {
  Program p;
  p.kind = Program::Kind::kHostWrite;
  p.stream = stream;
  p.destination = destination;
  return p;
}
Program HostRead(Tensor source, const std::string& stream) {
  Program p;
  p.kind = Program::Kind::kHostRead;
  p.stream = stream;
  p.source = source;
  return p;
}

Program CrossReplicaCopy(Tensor source, Tensor destination, std::vector<unsigned> replica_map) {
  Program p = Copy(source, destination);
  p.kind = Program::Kind::kCrossReplicaCopy;
  p.replica_map = std::move(replica_map);
  return p;
}
Program AllReduce(Tensor data, CollectiveOp op, CollectiveOptions options) {
  Program p = Copy(data, data);
  p.kind = Program::Kind::kAllReduce;
  p.op = op;
  p.collective = options;
  return p;
}
Program ReduceScatter(Tensor data, Tensor out, CollectiveOp op, CollectiveOptions options) {
  Program p = Copy(data, out);
  p.kind = Program::Kind::kReduceScatter;
  p.op = op;
  p.collective = options;
  return p;
}
Program AllGather(Tensor in, Tensor out, CollectiveOptions options) {
  Program p = Copy(in, out);
  p.kind = Program::Kind::kAllGather;
  p.collective = options;
  return p;
}

Program AllReduceAcrossTiles(Tensor data, CollectiveOp op) {
  Program p;
  p.kind = Program::Kind::kAllReduceAcrossTiles;
  p.source = data;
  p.op = op;
  return p;
}

Program ReduceScatterAcrossTiles(Tensor data, Tensor out, CollectiveOp op) {
  Program p;
  p.kind = Program::Kind::kReduceScatterAcrossTiles;
  p.source = data;
  p.destination = out;
  p.op = op;
  return p;
}

Program CopyToRemote(Tensor source, RemoteBuffer buffer, unsigned entry) {
  Program p;
  p.kind = Program::Kind::kCopyToRemote;
  p.source = source;
  p.remote = buffer;
  p.entry = entry;
  return p;
}

Program CopyFromRemote(RemoteBuffer buffer, unsigned entry, Tensor destination) {
  Program p;
  p.kind = Program::Kind::kCopyFromRemote;
  p.destination = destination;
  p.remote = buffer;
  p.entry = entry;
  return p;
}

const char* collective_op_name(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kSum: return "sum";
    case CollectiveOp::kMean: return "mean";
    case CollectiveOp::kMax: return "max";
  }
  return "?";
}

const char* collective_algorithm_name(CollectiveAlgorithm algorithm) {
  switch (algorithm) {
    case CollectiveAlgorithm::kRing: return "ring";
    case CollectiveAlgorithm::kBidirectionalRing: return "bidirectional ring";
    case CollectiveAlgorithm::kAuto: return "auto";
    case CollectiveAlgorithm::kDirect: return "direct";
    case CollectiveAlgorithm::kHalvingDoubling: return "halving-doubling";
  }
  return "?";
}

}  // namespace ipu::sdk

#include "compiler.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "firmware/include/ipu_program.h"
#include "hw/sync/sync_network.h"
#include "hw/tile/fpu.h"
#include "sdk/compiler/exchange_schedule.h"
#include "sdk/compiler/executable_io.h"
#include "sdk/graph/sdk_paths.h"
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
  SdkPaths paths;
  try {
    paths = sdk_paths();
  } catch (const SdkPathError& e) {
    throw CompileError(e.what());
  }
  const std::string runtime = paths.runtime_dir();
  std::string elf = dir + "/firmware.elf";
  const std::string log = dir + "/compile.log";
  const std::string command = fmt::format(
      "{} -march=rv32imf -mabi=ilp32f -O2 -g -Wall -ffp-contract=off -ffunction-sections "
      "-fdata-sections -nostartfiles "
      "-I{} -T {} -Wl,--gc-sections -Wl,--no-warn-rwx-segments --specs=picolibc.specs "
      "{}/crt0.S {}/console.c {}/bsp_runtime.c{}{} -o {} 2>{}",
      shell_quote(paths.gcc), shell_quote(paths.include_dir()), shell_quote(paths.linker_script()),
      shell_quote(runtime), shell_quote(runtime), shell_quote(runtime), sources, keep,
      shell_quote(elf), shell_quote(log));
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

// The collectives' reduction codelets (firmware/codelets/collectives.c), added to a graph whose
// program has a collective: acc[i] = acc[i] <op> data[i], and acc[i] *= k for the mean.
void add_collective_codelets(Graph& g) {
  const std::string file = sdk_paths().codelet_dir() + "/collectives.c";
  for (DType type : {DType::kF32, DType::kI32, DType::kF16})
    for (const char* op : {"sum", "max"})
      g.add_codelet(fmt::format("ipu_ring_{}_{}", op, dtype_name(type)), file,
                    {{"acc", FieldKind::kInOut, type},
                     {"data", FieldKind::kInput, type},
                     {"n", FieldKind::kScalar, DType::kU32}});
  for (DType type : {DType::kF32, DType::kI32})
    for (const char* op : {"sum", "max"})
      g.add_codelet(fmt::format("ipu_tiles_{}_{}", op, dtype_name(type)), file,
                    {{"in", FieldKind::kInput, type},
                     {"out", FieldKind::kOutput, type},
                     {"rows", FieldKind::kScalar, DType::kU32},
                     {"n", FieldKind::kScalar, DType::kU32}});
  for (DType type : {DType::kF32, DType::kF16})
    g.add_codelet(fmt::format("ipu_ring_scale_{}", dtype_name(type)), file,
                  {{"acc", FieldKind::kInOut, type},
                   {"n", FieldKind::kScalar, DType::kU32},
                   {"k", FieldKind::kScalar, DType::kU32}});
}

bool is_collective(const Program& p) {
  return p.kind == Program::Kind::kAllReduce || p.kind == Program::Kind::kReduceScatter ||
         p.kind == Program::Kind::kAllGather || p.kind == Program::Kind::kAllReduceAcrossTiles ||
         p.kind == Program::Kind::kReduceScatterAcrossTiles;
}

bool has_collective(const Program& p) {
  return is_collective(p) || std::any_of(p.body.begin(), p.body.end(), has_collective);
}

// One compilation: the graph (with the collectives' buffers and codelets added), its memory
// and the per-tile control programs of every tile of every replica (machine tiles).
class Compilation {
 public:
  Compilation(const Graph& graph, const CompileOptions& options)
      : graph_(graph),
        options_(options),
        replicas_(graph.replicas()),
        replica_tiles_(graph.tiles()),
        scheduler_(graph.target().machine,
                   {options.action_gap, options.receive_setup, options.action_slack}) {}

  Executable run(const std::vector<NamedProgram>& programs);

 private:
  unsigned machine_tile(unsigned replica, unsigned tile) const {
    return replica * replica_tiles_ + tile;
  }
  const TensorInfo& info(Tensor t) const { return graph_.tensor(t); }
  const TensorInfo* require_mapped(Tensor t, const char* role) const;
  void check(const Program& p) const;
  void add_ring_buffers(const Program& p);
  void build_firmware_image();
  void allocate_tensors();
  // (graph tile, address) of element `index` of `t`.
  std::pair<unsigned, uint32_t> address_of(Tensor t, size_t index) const;
  void add_vertex(unsigned tile, const std::string& codelet, const std::vector<uint32_t>& state,
                  unsigned workers, unsigned compute_set);
  void add_graph_vertices();
  void emit_all(uint32_t op, uint32_t a, uint32_t b, uint32_t c);
  void lower(const Program& p);
  void execute(unsigned compute_set);
  // A phase's transfers, indexed by their source words so that a multicast joins in log time.
  struct Transfers {
    std::vector<Transfer> list;
    std::map<std::tuple<unsigned, uint32_t, uint32_t>, std::vector<size_t>> by_source;
  };
  void exchange(const Transfers& transfers);
  // Transfers moving `count` elements of `source` from element `source_begin` on replica
  // `from` to `destination` from `destination_begin` on replica `to`.
  void add_transfers(Transfers& out, Tensor source, size_t source_begin, unsigned from,
                     Tensor destination, size_t destination_begin, unsigned to, size_t count) const;
  // The collectives, as ring steps.
  struct RingPart {
    std::vector<unsigned> order;  // replicas round the ring
    size_t begin_fraction;        // 0: the first half of each chunk (or all of it), 1: the second
  };
  std::vector<RingPart> ring_parts(CollectiveOptions options) const;
  std::vector<unsigned> ring_order() const;
  // Elements [first, second) of chunk `chunk` (of `elements` split into replicas) that `part`
  // carries.
  // Elements [first, second) of chunk `chunk` of `elements` split into replicas in whole words
  // (`granule` elements each: 2 for f16).
  std::pair<size_t, size_t> chunk_range(size_t elements, unsigned chunk, size_t granule) const;
  std::pair<size_t, size_t> part_range(size_t elements, unsigned chunk, const RingPart& part,
                                       size_t parts, size_t granule) const;
  // Ring reduce-scatter: replica r ends with chunk r reduced, in `acc` or, `into_data`, in
  // `data` (the last step adds into data rather than acc).
  void reduce_scatter(Tensor data, Tensor acc, CollectiveOp op, CollectiveOptions options,
                      bool into_data);
  void all_reduce(const Program& p);
  void reduce_scatter(const Program& p);
  void all_gather(const Program& p);
  // Across the tiles of each replica: gather chunk c of every row on its destination's tile,
  // reduce there, and (AllReduceAcrossTiles) send the result back to every row.
  std::pair<Tensor, size_t> tiles_destination(const Program& p, size_t chunk) const;
  void across_tiles(const Program& p);
  // Streaming memory: each replica's remote buffers, then the transfers of one copy.
  void place_remote_buffers();
  void remote_copy(const Program& p);
  void lay_out();
  void write_image();
  void write_manifest();

  Graph graph_;
  const CompileOptions& options_;
  unsigned replicas_, replica_tiles_;
  ExchangeScheduler scheduler_;
  Executable exe_;
  ElfImage firmware_;
  std::vector<uint8_t> firmware_debug_;  // the firmware ELF file, for .ipu.debug
  uint32_t heap_start_ = 0, heap_end_ = 0;
  std::map<unsigned, unsigned> ring_buffer_;  // tensor id -> its collectives' accumulator
  // (data, destination) ids -> the gather buffer of a collective across tiles
  std::map<std::pair<unsigned, unsigned>, unsigned> tile_buffer_;
  std::set<unsigned> active_;                         // graph tiles with a tensor or a vertex
  std::set<unsigned> tiles_;                          // their machine tiles, in every replica
  std::map<unsigned, TileMemory> memory_;             // per machine tile
  std::map<unsigned, std::vector<uint8_t>> initial_;  // image bytes above __heap_start
  std::map<unsigned, std::vector<ipu_vertex>> vertices_;
  std::map<unsigned, std::map<unsigned, std::pair<uint32_t, uint32_t>>> cs_range_;
  unsigned compute_sets_ = 0;  // the graph's, then the collectives' own
  // A compute set of the collectives' own, named for profiles (Executable::compute_sets).
  unsigned new_compute_set(std::string name) {
    exe_.compute_sets.push_back(std::move(name));
    return compute_sets_++;
  }
  std::map<unsigned, std::vector<ipu_step>> steps_;
  std::map<unsigned, std::vector<ipu_action>> actions_;
  std::map<unsigned, std::vector<uint32_t>> dest_lists_;
  unsigned host_transfer_ids_ = 0;
  std::vector<uint32_t> program_steps_;                 // each program's first step
  std::map<std::string, RemoteBuffer> stream_staging_;  // streams over the gateway
};

const TensorInfo* Compilation::require_mapped(Tensor t, const char* role) const {
  const TensorInfo& i = info(t);
  if (i.mapping.empty())
    throw GraphError(fmt::format("{} tensor '{}' is not mapped to any tile", role, i.name));
  return &i;
}

void Compilation::check(const Program& p) const {
  const auto same_size = [&](const char* what, const TensorInfo* s, const TensorInfo* d,
                             size_t factor_s, size_t factor_d) {
    if (s->elements * factor_s != d->elements * factor_d || s->type != d->type)
      throw GraphError(fmt::format(
          "{} from '{}' ({} x {}) to '{}' ({} x {}): {}", what, s->name, s->elements,
          dtype_name(s->type), d->name, d->elements, dtype_name(d->type),
          factor_s == factor_d ? std::string("shapes or types differ")
          : factor_s > factor_d
              ? fmt::format("the destination must have {} times the source's elements "
                            "(one chunk per replica), of the same type",
                            factor_s)
              : fmt::format("the source must have {} times the destination's elements (one "
                            "chunk per replica), of the same type",
                            factor_d)));
  };
  const auto whole_words = [&](const char* what, const TensorInfo* t) {
    if (t->elements * dtype_size(t->type) % 4 != 0)
      throw GraphError(fmt::format(
          "{} of '{}' ({} x {}): collectives move whole 32-bit words; give it an even number of "
          "elements",
          what, t->name, t->elements, dtype_name(t->type)));
  };
  const auto collective_type = [&](const char* what, const TensorInfo* t, CollectiveOp op) {
    if (t->type != DType::kF32 && t->type != DType::kI32 && t->type != DType::kF16)
      throw GraphError(fmt::format("{} of '{}' ({}): collectives reduce f32, f16 or i32 tensors",
                                   what, t->name, dtype_name(t->type)));
    if (op == CollectiveOp::kMean && t->type == DType::kI32)
      throw GraphError(fmt::format("{} of '{}' ({}): a mean needs an f32 or f16 tensor", what,
                                   t->name, dtype_name(t->type)));
    whole_words(what, t);
  };
  switch (p.kind) {
    case Program::Kind::kBroadcast: {
      const TensorInfo *s = require_mapped(p.source, "Broadcast source"),
                       *d = require_mapped(p.destination, "Broadcast destination");
      if (d->elements % s->elements != 0 || s->type != d->type)
        throw GraphError(fmt::format(
            "Broadcast from '{}' ({} x {}) to '{}' ({} x {}): the destination is not a "
            "whole number of source-sized chunks of the same type",
            s->name, s->elements, dtype_name(s->type), d->name, d->elements, dtype_name(d->type)));
      break;
    }
    case Program::Kind::kCopy:
      if (p.pairs.empty()) {
        same_size("Copy", require_mapped(p.source, "Copy source"),
                  require_mapped(p.destination, "Copy destination"), 1, 1);
        break;
      }
      for (size_t i = 0; i < p.pairs.size(); ++i) {
        const auto& [from, to] = p.pairs[i];
        const TensorInfo *s = require_mapped(from.tensor, "Copy source"),
                         *d = require_mapped(to.tensor, "Copy destination");
        for (const Region& r : {from, to})
          if (r.begin >= r.end || r.end > info(r.tensor).elements)
            throw GraphError(
                fmt::format("Copy pair {}: region [{}, {}) is not inside '{}' ({} elements)", i,
                            r.begin, r.end, info(r.tensor).name, info(r.tensor).elements));
        if (from.end - from.begin != to.end - to.begin || s->type != d->type)
          throw GraphError(fmt::format(
              "Copy pair {} from '{}' [{}, {}) ({}) to '{}' [{}, {}) ({}): sizes or types differ",
              i, s->name, from.begin, from.end, dtype_name(s->type), d->name, to.begin, to.end,
              dtype_name(d->type)));
      }
      break;
    case Program::Kind::kCrossReplicaCopy: {
      same_size("CrossReplicaCopy", require_mapped(p.source, "CrossReplicaCopy source"),
                require_mapped(p.destination, "CrossReplicaCopy destination"), 1, 1);
      std::vector<bool> seen(replicas_, false);
      if (p.replica_map.size() != replicas_)
        throw GraphError(fmt::format(
            "CrossReplicaCopy from '{}': the replica map has {} entries for {} replicas",
            info(p.source).name, p.replica_map.size(), replicas_));
      for (size_t r = 0; r < p.replica_map.size(); ++r) {
        const unsigned to = p.replica_map[r];
        if (to >= replicas_ || seen[to])
          throw GraphError(fmt::format(
              "CrossReplicaCopy from '{}': replica {} sends to replica {}, {} (the map must be "
              "a permutation of replicas 0-{})",
              info(p.source).name, r, to, to >= replicas_ ? "which does not exist" : "twice",
              replicas_ - 1));
        seen[to] = true;
      }
      break;
    }
    case Program::Kind::kAllReduce:
      collective_type("AllReduce", require_mapped(p.source, "AllReduce"), p.op);
      break;
    case Program::Kind::kReduceScatter: {
      const TensorInfo* s = require_mapped(p.source, "ReduceScatter source");
      collective_type("ReduceScatter", s, p.op);
      const TensorInfo* d = require_mapped(p.destination, "ReduceScatter destination");
      same_size("ReduceScatter", s, d, 1, replicas_);
      whole_words("ReduceScatter", d);
      break;
    }
    case Program::Kind::kAllGather: {
      const TensorInfo* s = require_mapped(p.source, "AllGather source");
      // Chunks move as whole words: any 32-bit type, or f16 in pairs.
      if (dtype_size(s->type) != 4 && s->type != DType::kF16)
        throw GraphError(fmt::format(
            "AllGather of '{}' ({}): gathers move 32-bit elements (f32, i32, u32) or f16 pairs",
            s->name, dtype_name(s->type)));
      whole_words("AllGather", s);
      same_size("AllGather", s, require_mapped(p.destination, "AllGather destination"), replicas_,
                1);
      break;
    }
    case Program::Kind::kHostWrite:
    case Program::Kind::kHostRead: {
      const bool write = p.kind == Program::Kind::kHostWrite;
      const auto st = graph_.streams().find(p.stream);
      if (st == graph_.streams().end())
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
      if (p.compute_set.id >= graph_.compute_sets().size())
        throw GraphError("Execute of an unknown compute set");
      break;
    case Program::Kind::kAllReduceAcrossTiles:
    case Program::Kind::kReduceScatterAcrossTiles: {
      const bool all = p.kind == Program::Kind::kAllReduceAcrossTiles;
      const char* what = all ? "AllReduceAcrossTiles" : "ReduceScatterAcrossTiles";
      const TensorInfo* d = require_mapped(p.source, what);
      if (d->type != DType::kF32 && d->type != DType::kI32)
        throw GraphError(fmt::format("{} of '{}' ({}): across tiles, collectives reduce f32 or i32",
                                     what, d->name, dtype_name(d->type)));
      if (p.op == CollectiveOp::kMean && d->type != DType::kF32)
        throw GraphError(fmt::format("{} of '{}' ({}): a mean needs an f32 tensor", what, d->name,
                                     dtype_name(d->type)));
      if (d->shape.size() != 2 || d->shape[0] == 0 || d->shape[1] % d->shape[0] != 0)
        throw GraphError(
            fmt::format("{} of '{}': the tensor must have shape {{G, n}} (G rows, one per tile's "
                        "slice) with n a "
                        "multiple of G, so each row splits into G chunks",
                        what, d->name));
      if (!all) {
        const TensorInfo* o = require_mapped(p.destination, what);
        if (o->elements != d->shape[1] || o->type != d->type)
          throw GraphError(fmt::format(
              "{} from '{}' ({} x {} {}) to '{}' ({} x {}): the destination needs {} elements, one "
              "chunk per row",
              what, d->name, d->shape[0], d->shape[1], dtype_name(d->type), o->name, o->elements,
              dtype_name(o->type), d->shape[1]));
      }
      break;
    }
    case Program::Kind::kCopyToRemote:
    case Program::Kind::kCopyFromRemote: {
      const bool to = p.kind == Program::Kind::kCopyToRemote;
      const char* what = to ? "CopyToRemote" : "CopyFromRemote";
      const RemoteBufferInfo& b = graph_.remote_buffer(p.remote);
      const TensorInfo* t = require_mapped(to ? p.source : p.destination, what);
      if (t->elements != b.elements || t->type != b.type)
        throw GraphError(
            fmt::format("{} between '{}' ({} x {}) and remote buffer '{}' ({} x {}): "
                        "the shapes or types differ",
                        what, t->name, t->elements, dtype_name(t->type), b.name, b.elements,
                        dtype_name(b.type)));
      if (p.entry >= b.entries)
        throw GraphError(fmt::format(
            "{} of '{}': entry {} of remote buffer '{}' is out of range (it has {} entr{}, 0-{})",
            what, t->name, p.entry, b.name, b.entries, b.entries == 1 ? "y" : "ies",
            b.entries - 1));
      break;
    }
    default: break;
  }
  for (const Program& c : p.body) check(c);
}

// Where chunk c of a collective across tiles ends: (tensor, first element) of its destination.
std::pair<Tensor, size_t> Compilation::tiles_destination(const Program& p, size_t c) const {
  const size_t rows = info(p.source).shape[0], n = info(p.source).shape[1], m = n / rows;
  if (p.kind == Program::Kind::kAllReduceAcrossTiles) return {p.source, c * n + c * m};
  return {p.destination, c * m};
}

void Compilation::add_ring_buffers(const Program& p) {
  if ((p.kind == Program::Kind::kAllReduceAcrossTiles ||
       p.kind == Program::Kind::kReduceScatterAcrossTiles) &&
      tile_buffer_.count({p.source.id, p.destination.id}) == 0) {
    // Chunk c of every row gathers on the tile of chunk c's destination.
    const TensorInfo data = info(p.source);
    const size_t rows = data.shape[0], m = data.shape[1] / rows;
    std::vector<Interval> mapping;
    for (size_t c = 0; c < rows; ++c) {
      const auto [dest, first] = tiles_destination(p, c);
      const unsigned tile = graph_.tile_of(dest, first);
      if (graph_.tile_of(dest, first + m - 1) != tile)
        throw GraphError(fmt::format(
            "{} of '{}': chunk {} ends in '{}' elements {}-{}, which lie on more than one tile; "
            "map each destination chunk to one tile",
            p.kind == Program::Kind::kAllReduceAcrossTiles ? "AllReduceAcrossTiles"
                                                           : "ReduceScatterAcrossTiles",
            data.name, c, info(dest).name, first, first + m - 1));
      mapping.push_back({c * rows * m, (c + 1) * rows * m, tile});
    }
    const std::string name = p.kind == Program::Kind::kAllReduceAcrossTiles
                                 ? data.name + ".tiles"
                                 : data.name + ".tiles_to_" + info(p.destination).name;
    const Tensor gather = graph_.add_variable(data.type, {rows, rows, m}, name);
    graph_.set_tile_mapping(gather, mapping);
    tile_buffer_[{p.source.id, p.destination.id}] = gather.id;
  }
  if ((p.kind == Program::Kind::kAllReduce || p.kind == Program::Kind::kReduceScatter) &&
      replicas_ > 1 && ring_buffer_.count(p.source.id) == 0) {
    // The accumulator lies beside the data, piece for piece: a ring step's words land on the
    // tile that adds them.
    const TensorInfo data = info(p.source);
    const Tensor acc = graph_.add_variable(data.type, data.shape, data.name + ".ring");
    graph_.set_tile_mapping(acc, data.mapping);
    ring_buffer_[p.source.id] = acc.id;
  }
  for (const Program& c : p.body) add_ring_buffers(c);
}

void Compilation::build_firmware_image() {
  std::string dir = options_.work_dir;
  struct Scratch {  // a build directory of our own goes when the compilation does
    std::string path;
    ~Scratch() {
      std::error_code ignored;
      if (!path.empty()) std::filesystem::remove_all(path, ignored);
    }
  } scratch;
  if (dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(tmp != nullptr && *tmp != 0 ? tmp : "/tmp") + "/ipu-compile-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr)
      throw CompileError(fmt::format("cannot create a build directory {}", tmpl));
    dir = scratch.path = tmpl;
  } else {
    mkdir(dir.c_str(), 0755);
  }
  const std::string firmware_path = build_firmware(graph_, dir);
  firmware_ = read_elf(firmware_path);
  {
    // The firmware as linked, with its DWARF: reports on the executable name the codelet's file
    // and line (Symbolizer; the section is not loaded).
    std::ifstream in(firmware_path, std::ios::binary);
    firmware_debug_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const auto symbol = [&](const std::string& name) {
    const auto it = firmware_.symbols.find(name);
    if (it == firmware_.symbols.end())
      throw CompileError(fmt::format("the firmware defines no symbol '{}'", name));
    return it->second;
  };
  heap_start_ = symbol("__heap_start");
  heap_end_ = symbol("__heap_end");
  for (const auto& [name, c] : graph_.codelets())
    if (firmware_.symbols.count(name) == 0)
      throw CompileError(fmt::format(
          "codelet '{}': {} defines no function named '{}' (a codelet's name is its C function's)",
          name, c.source, name));
}

void Compilation::allocate_tensors() {
  for (const TensorInfo& t : graph_.tensors())
    for (const Interval& m : t.mapping) active_.insert(m.tile);
  for (const VertexInfo& v : graph_.vertices()) active_.insert(v.tile);
  if (active_.empty()) throw GraphError("the graph places nothing on any tile");
  // Header first, then tensors: the same on every replica, so placements hold for all.
  std::map<unsigned, TileMemory> layout;
  for (unsigned t : active_) {
    layout[t].next = heap_start_;
    layout[t].top = layout[t].limit = heap_end_ & ~7u;
    layout[t].allocate(sizeof(ipu_tile_program), "control program header");
  }
  for (const TensorInfo& t : graph_.tensors()) {
    for (const Interval& m : t.mapping) {
      const uint32_t bytes = static_cast<uint32_t>((m.end - m.begin) * dtype_size(t.type));
      const std::string what = fmt::format("tensor '{}' [{}, {})", t.name, m.begin, m.end);
      const uint32_t address = t.initial.empty()
                                   ? layout[m.tile].allocate_top((bytes + 3) & ~3u, what)
                                   : layout[m.tile].allocate((bytes + 3) & ~3u, what);
      exe_.tensors[t.name].push_back({m.tile, m.begin, m.end, address});
    }
  }
  for (unsigned r = 0; r < replicas_; ++r)
    for (unsigned t : active_) {
      tiles_.insert(machine_tile(r, t));
      memory_[machine_tile(r, t)] = layout[t];
    }
}

std::pair<unsigned, uint32_t> Compilation::address_of(Tensor t, size_t index) const {
  const TensorInfo& i = info(t);
  for (const Placement& p : exe_.tensors.at(i.name))
    if (index >= p.begin && index < p.end)
      return {p.tile, p.address + static_cast<uint32_t>((index - p.begin) * dtype_size(i.type))};
  throw GraphError(fmt::format("element {} of tensor '{}' is not mapped", index, i.name));
}

void Compilation::add_vertex(unsigned tile, const std::string& codelet,
                             const std::vector<uint32_t>& state, unsigned workers,
                             unsigned compute_set) {
  // At least a word, so that every vertex's state has its own address (profiles tell vertices
  // apart by it).
  const uint32_t at =
      memory_[tile].allocate(static_cast<uint32_t>(4 * std::max<size_t>(1, state.size())),
                             fmt::format("vertex state ({})", codelet));
  auto& bytes = initial_[tile];
  const uint32_t offset = at - heap_start_;
  if (bytes.size() < offset + 4 * state.size()) bytes.resize(offset + 4 * state.size());
  place(bytes, offset, state);
  exe_.vertex_sites[{tile, at}] = compute_set;
  auto& range = cs_range_[tile][compute_set];
  if (range.second == 0) range.first = static_cast<uint32_t>(vertices_[tile].size());
  // A six-worker vertex is six table entries sharing one state: the runtime starts each.
  for (unsigned w = 0; w < workers; ++w) {
    ++range.second;
    vertices_[tile].push_back({firmware_.symbols.at(codelet), at});
  }
}

void Compilation::add_graph_vertices() {
  compute_sets_ = static_cast<unsigned>(graph_.compute_sets().size());
  exe_.compute_sets = graph_.compute_sets();
  for (unsigned r = 0; r < replicas_; ++r)
    for (unsigned cs = 0; cs < compute_sets_; ++cs)
      for (const VertexInfo& v : graph_.vertices()) {
        if (v.compute_set != cs) continue;
        std::vector<uint32_t> state;
        for (const Field& f : graph_.codelets().at(v.codelet).fields) {
          const Binding& b = v.fields.at(f.name);
          if (std::holds_alternative<uint32_t>(b)) {
            state.push_back(std::get<uint32_t>(b));
          } else {
            const Region& region = std::get<Region>(b);
            state.push_back(address_of(region.tensor, region.begin).second);
          }
        }
        add_vertex(machine_tile(r, v.tile), v.codelet, state, v.workers, cs);
      }
}

void Compilation::emit_all(uint32_t op, uint32_t a, uint32_t b, uint32_t c) {
  for (unsigned t : tiles_) steps_[t].push_back({op, a, b, c});
}

void Compilation::execute(unsigned compute_set) {
  for (unsigned t : tiles_) {
    const auto& ranges = cs_range_[t];
    const auto r = ranges.find(compute_set);
    steps_[t].push_back({IPU_STEP_EXECUTE, r == ranges.end() ? 0 : r->second.first,
                         r == ranges.end() ? 0 : r->second.second, 0});
  }
}

void Compilation::exchange(const Transfers& transfers) {
  PhaseSchedule phase = scheduler_.schedule(transfers.list, tiles_);
  for (unsigned t : tiles_) {
    auto& acts = phase.actions[t];
    steps_[t].push_back({phase.crosses_chips ? IPU_STEP_EXCHANGE_EXTERNAL : IPU_STEP_EXCHANGE,
                         static_cast<uint32_t>(actions_[t].size()),
                         static_cast<uint32_t>(acts.size()), phase.end});
    actions_[t].insert(actions_[t].end(), acts.begin(), acts.end());
    auto& lists = phase.dest_lists[t];
    dest_lists_[t].insert(dest_lists_[t].end(), lists.begin(), lists.end());
  }
  exe_.exchange_sends += phase.sends;
  exe_.exchange_destinations += phase.destinations;
  exe_.inter_chip_sends += phase.inter_chip_sends;
  exe_.external_exchanges += phase.crosses_chips ? 1 : 0;
  ++exe_.supersteps;
}

void Compilation::add_transfers(Transfers& out, Tensor source, size_t source_begin, unsigned from,
                                Tensor destination, size_t destination_begin, unsigned to,
                                size_t count) const {
  const TensorInfo& s = info(source);
  const size_t size = dtype_size(s.type);
  const auto& sp = exe_.tensors.at(s.name);
  const auto& dp = exe_.tensors.at(info(destination).name);
  // In element offsets from the start of the range: [lo, hi) on both a and b.
  for (const Placement& a : sp) {
    const size_t a_lo = std::max(a.begin, source_begin),
                 a_hi = std::min(a.end, source_begin + count);
    if (a_lo >= a_hi) continue;
    for (const Placement& b : dp) {
      const size_t b_lo = std::max(b.begin, destination_begin),
                   b_hi = std::min(b.end, destination_begin + count);
      if (b_lo >= b_hi) continue;
      const size_t lo = std::max(a_lo - source_begin, b_lo - destination_begin);
      const size_t hi = std::min(a_hi - source_begin, b_hi - destination_begin);
      if (lo >= hi) continue;
      const uint32_t at = a.address + static_cast<uint32_t>((source_begin + lo - a.begin) * size);
      const unsigned source_tile = machine_tile(from, a.tile), tile = machine_tile(to, b.tile);
      const uint32_t address =
          b.address + static_cast<uint32_t>((destination_begin + lo - b.begin) * size);
      const uint32_t words = static_cast<uint32_t>(((hi - lo) * size + 3) / 4);
      // Multicast: the same source words to another receiver join one send.
      auto& sends = out.by_source[{source_tile, at, words}];
      const auto same = std::find_if(sends.begin(), sends.end(), [&](size_t i) {
        const auto& d = out.list[i].destinations;
        return std::none_of(d.begin(), d.end(), [&](const auto& x) { return x.first == tile; });
      });
      if (same != sends.end()) {
        out.list[*same].destinations.emplace_back(tile, address);
      } else {
        sends.push_back(out.list.size());
        out.list.push_back({source_tile, at, words, {{tile, address}}});
      }
    }
  }
}

std::vector<unsigned> Compilation::ring_order() const {
  // One chip per replica: up the even column of the ladder and down the odd one, so that
  // every step of the ring crosses one IPU-Link bundle. Replicas of several chips go in order.
  std::vector<unsigned> order;
  if (graph_.target().replica_chips() == 1 && replicas_ > 2) {
    for (unsigned r = 0; r < replicas_; r += 2) order.push_back(r);
    for (unsigned r = replicas_; r-- > 0;)
      if (r % 2 == 1) order.push_back(r);
  } else {
    for (unsigned r = 0; r < replicas_; ++r) order.push_back(r);
  }
  return order;
}

std::vector<Compilation::RingPart> Compilation::ring_parts(CollectiveOptions options) const {
  std::vector<unsigned> order = ring_order();
  if (options.algorithm == CollectiveAlgorithm::kRing) return {{order, 0}};
  std::vector<unsigned> reverse(order.rbegin(), order.rend());
  return {{order, 0}, {reverse, 1}};
}

std::pair<size_t, size_t> Compilation::chunk_range(size_t elements, unsigned chunk,
                                                   size_t granule) const {
  const size_t words = elements / granule;
  return {words * chunk / replicas_ * granule, words * (chunk + 1) / replicas_ * granule};
}

std::pair<size_t, size_t> Compilation::part_range(size_t elements, unsigned chunk,
                                                  const RingPart& part, size_t parts,
                                                  size_t granule) const {
  const auto [begin, end] = chunk_range(elements, chunk, granule);
  if (parts == 1) return {begin, end};
  const size_t middle = begin + (end - begin) / granule / 2 * granule;
  return part.begin_fraction == 0 ? std::make_pair(begin, middle) : std::make_pair(middle, end);
}

// Ring reduce-scatter into `acc`: at step s the replica at ring position p sends the chunk of
// position p - s - 1 (from `data` at the first step, from `acc` after) to position p + 1, which
// adds its own `data` to it; after replicas - 1 steps replica r's acc holds chunk r reduced.
// The additions are acc + data in ring order: chunk r's sum starts with the data of the
// position after r's and ends with r's own (docs/sdk.md).
void Compilation::reduce_scatter(Tensor data, Tensor acc, CollectiveOp op,
                                 CollectiveOptions options, bool into_data) {
  const TensorInfo& d = info(data);
  const auto parts = ring_parts(options);
  const unsigned R = replicas_;
  const size_t granule = 4 / dtype_size(d.type);
  const std::string codelet =
      fmt::format("ipu_ring_{}_{}", op == CollectiveOp::kMax ? "max" : "sum", dtype_name(d.type));
  for (unsigned s = 0; s + 1 < R; ++s) {
    Transfers transfers;
    std::vector<std::tuple<unsigned, size_t, size_t>> adds;  // (replica, begin, end)
    for (const RingPart& part : parts)
      for (unsigned p = 0; p < R; ++p) {
        const unsigned from = part.order[p], to = part.order[(p + 1) % R];
        const unsigned chunk = part.order[(p + 2 * R - s - 1) % R];
        const auto [lo, hi] = part_range(d.elements, chunk, part, parts.size(), granule);
        if (lo == hi) continue;
        add_transfers(transfers, s == 0 ? data : acc, lo, from, acc, lo, to, hi - lo);
        adds.emplace_back(to, lo, hi);
      }
    exchange(transfers);
    const unsigned cs = new_compute_set(fmt::format("reduce-scatter {} step {}", d.name, s + 1));
    // The last step may write its sums into data: data + acc has the bits of acc + data.
    const bool last_into_data = into_data && s + 2 == R;
    for (const auto& [replica, lo, hi] : adds)
      for (const Placement& piece : exe_.tensors.at(d.name)) {
        const size_t b = std::max(piece.begin, lo), e = std::min(piece.end, hi);
        if (b >= e) continue;
        const uint32_t a = address_of(acc, b).second, x = address_of(data, b).second;
        add_vertex(machine_tile(replica, piece.tile), codelet,
                   {last_into_data ? x : a, last_into_data ? a : x, static_cast<uint32_t>(e - b)},
                   6, cs);
      }
    execute(cs);
  }
  if (op == CollectiveOp::kMean) {
    const unsigned cs = new_compute_set(fmt::format("reduce-scatter {} mean", d.name));
    const float inverse = 1.0f / static_cast<float>(R);
    uint32_t k = 0, flags = 0;
    std::memcpy(&k, &inverse, 4);
    if (d.type == DType::kF16) k = hw::fpu::f32_to_f16(k, hw::fpu::kRne, flags, 0);
    for (unsigned r = 0; r < R; ++r) {
      const auto [lo, hi] = chunk_range(d.elements, r, granule);
      for (const Placement& piece : exe_.tensors.at(d.name)) {
        const size_t b = std::max(piece.begin, lo), e = std::min(piece.end, hi);
        if (b >= e) continue;
        add_vertex(
            machine_tile(r, piece.tile), fmt::format("ipu_ring_scale_{}", dtype_name(d.type)),
            {address_of(into_data ? data : acc, b).second, static_cast<uint32_t>(e - b), k}, 6, cs);
      }
    }
    execute(cs);
  }
}

void Compilation::all_reduce(const Program& p) {
  if (replicas_ == 1) return;  // the reduction over one replica is the data itself
  const Tensor data = p.source, acc{ring_buffer_.at(p.source.id)};
  reduce_scatter(data, acc, p.op, p.collective, true);
  // All-gather: at step s position p sends the chunk of position p - s (its own at the first
  // step) to position p + 1's data.
  const size_t elements = info(data).elements;
  const auto parts = ring_parts(p.collective);
  const unsigned R = replicas_;
  for (unsigned s = 0; s + 1 < R; ++s) {
    Transfers transfers;
    for (const RingPart& part : parts)
      for (unsigned q = 0; q < R; ++q) {
        const unsigned from = part.order[q], to = part.order[(q + 1) % R];
        const unsigned chunk = part.order[(q + R - s) % R];
        const auto [lo, hi] =
            part_range(elements, chunk, part, parts.size(), 4 / dtype_size(info(data).type));
        if (lo == hi) continue;
        add_transfers(transfers, data, lo, from, data, lo, to, hi - lo);
      }
    exchange(transfers);
  }
}

void Compilation::reduce_scatter(const Program& p) {
  const size_t n = info(p.destination).elements;
  Tensor reduced = p.source;
  if (replicas_ > 1) {
    reduced = Tensor{ring_buffer_.at(p.source.id)};
    reduce_scatter(p.source, reduced, p.op, p.collective, false);
  }
  Transfers transfers;
  for (unsigned r = 0; r < replicas_; ++r)
    add_transfers(transfers, reduced, r * n, r, p.destination, 0, r, n);
  exchange(transfers);
}

void Compilation::all_gather(const Program& p) {
  const size_t n = info(p.source).elements;
  const auto parts = ring_parts(p.collective);
  const unsigned R = replicas_;
  Transfers transfers;
  if (R == 1) {
    add_transfers(transfers, p.source, 0, 0, p.destination, 0, 0, n);
    exchange(transfers);
    return;
  }
  for (unsigned s = 0; s + 1 < R; ++s) {
    transfers = {};
    for (const RingPart& part : parts)
      for (unsigned q = 0; q < R; ++q) {
        const unsigned from = part.order[q], to = part.order[(q + 1) % R];
        const unsigned chunk = part.order[(q + R - s) % R];
        // Halves of the gathered tensor, not of a chunk of it: each replica's `in` is split.
        size_t lo = 0, hi = n;
        const size_t granule = 4 / dtype_size(info(p.source).type);
        if (parts.size() == 2) (part.begin_fraction == 0 ? hi : lo) = n / granule / 2 * granule;
        if (lo == hi) continue;
        const size_t at = chunk * n + lo;
        if (s == 0) {
          add_transfers(transfers, p.source, lo, from, p.destination, at, from, hi - lo);
          add_transfers(transfers, p.source, lo, from, p.destination, at, to, hi - lo);
        } else {
          add_transfers(transfers, p.destination, at, from, p.destination, at, to, hi - lo);
        }
      }
    exchange(transfers);
  }
}

void Compilation::lower(const Program& p) {
  switch (p.kind) {
    case Program::Kind::kSequence:
      for (const Program& c : p.body) lower(c);
      break;
    case Program::Kind::kExecute: execute(p.compute_set.id); break;
    case Program::Kind::kSync: {
      static constexpr uint32_t kGroup[] = {0, hw::SyncNetwork::kExternal, hw::SyncNetwork::kGs1,
                                            hw::SyncNetwork::kGs2};
      emit_all(IPU_STEP_SYNC, kGroup[static_cast<unsigned>(p.scope)], 0, 0);
      ++exe_.supersteps;
      break;
    }
    case Program::Kind::kRepeat: {
      const unsigned first = *tiles_.begin();
      const uint32_t begin = static_cast<uint32_t>(steps_[first].size());
      emit_all(IPU_STEP_REPEAT, p.count, 0, 0);
      for (const Program& c : p.body) lower(c);
      emit_all(IPU_STEP_REPEAT_END, begin, 0, 0);
      const uint32_t after = static_cast<uint32_t>(steps_[first].size());
      for (unsigned t : tiles_) steps_[t][begin].b = after;
      break;
    }
    case Program::Kind::kHostWrite:
    case Program::Kind::kHostRead: {
      const bool write = p.kind == Program::Kind::kHostWrite;
      const Tensor tensor = write ? p.destination : p.source;
      const unsigned id = host_transfer_ids_++;
      const auto staging = stream_staging_.find(p.stream);
      const bool gateway = staging != stream_staging_.end();
      exe_.host_transfers.push_back(
          {id, p.stream, write, info(tensor).name,
           gateway ? graph_.remote_buffer(staging->second).name : std::string()});
      exe_.programs.back().host_transfers.push_back(id);
      // Over the gateway: host <-> streaming memory in the host sync, tiles <-> streaming
      // memory in an exchange phase of their own.
      if (gateway && !write) remote_copy(CopyToRemote(tensor, staging->second, 0));
      emit_all(IPU_STEP_HOST_SYNC, id, 0, 0);
      ++exe_.supersteps;
      if (gateway && write) remote_copy(CopyFromRemote(staging->second, 0, tensor));
      break;
    }
    case Program::Kind::kCopy:
    case Program::Kind::kBroadcast:
    case Program::Kind::kCrossReplicaCopy: {
      // Runs contiguous on both the source and the destination tile; a broadcast makes them
      // once per source-sized chunk of the destination.
      if (!p.pairs.empty()) {  // several copies, one phase
        Transfers transfers;
        for (unsigned r = 0; r < replicas_; ++r)
          for (const auto& [from, to] : p.pairs)
            add_transfers(transfers, from.tensor, from.begin, r, to.tensor, to.begin, r,
                          from.end - from.begin);
        exchange(transfers);
        break;
      }
      const size_t n = info(p.source).elements;
      const size_t chunks =
          p.kind == Program::Kind::kBroadcast ? info(p.destination).elements / n : 1;
      Transfers transfers;
      for (unsigned r = 0; r < replicas_; ++r) {
        const unsigned to = p.kind == Program::Kind::kCrossReplicaCopy ? p.replica_map[r] : r;
        for (size_t chunk = 0; chunk < chunks; ++chunk)
          add_transfers(transfers, p.source, 0, r, p.destination, chunk * n, to, n);
      }
      exchange(transfers);
      break;
    }
    case Program::Kind::kAllReduce: all_reduce(p); break;
    case Program::Kind::kReduceScatter: reduce_scatter(p); break;
    case Program::Kind::kAllGather: all_gather(p); break;
    case Program::Kind::kCopyToRemote:
    case Program::Kind::kCopyFromRemote: remote_copy(p); break;
    case Program::Kind::kAllReduceAcrossTiles:
    case Program::Kind::kReduceScatterAcrossTiles: across_tiles(p); break;
  }
}

void Compilation::across_tiles(const Program& p) {
  const TensorInfo& d = info(p.source);
  const size_t rows = d.shape[0], n = d.shape[1], m = n / rows;
  const Tensor gather{tile_buffer_.at({p.source.id, p.destination.id})};
  Transfers transfers;
  for (unsigned r = 0; r < replicas_; ++r)
    for (size_t c = 0; c < rows; ++c)
      for (size_t g = 0; g < rows; ++g)
        add_transfers(transfers, p.source, g * n + c * m, r, gather, (c * rows + g) * m, r, m);
  exchange(transfers);
  const unsigned cs = new_compute_set(fmt::format("across tiles {}", d.name));
  const std::string codelet = fmt::format(
      "ipu_tiles_{}_{}", p.op == CollectiveOp::kMax ? "max" : "sum", dtype_name(d.type));
  for (unsigned r = 0; r < replicas_; ++r)
    for (size_t c = 0; c < rows; ++c) {
      const auto [dest, first] = tiles_destination(p, c);
      const auto [tile, out] = address_of(dest, first);
      add_vertex(machine_tile(r, tile), codelet,
                 {address_of(gather, c * rows * m).second, out, static_cast<uint32_t>(rows),
                  static_cast<uint32_t>(m)},
                 6, cs);
    }
  execute(cs);
  if (p.op == CollectiveOp::kMean) {
    const unsigned scale = new_compute_set(fmt::format("across tiles {} mean", d.name));
    const float inverse = 1.0f / static_cast<float>(rows);
    uint32_t k = 0;
    std::memcpy(&k, &inverse, 4);
    for (unsigned r = 0; r < replicas_; ++r)
      for (size_t c = 0; c < rows; ++c) {
        const auto [dest, first] = tiles_destination(p, c);
        const auto [tile, out] = address_of(dest, first);
        add_vertex(machine_tile(r, tile), "ipu_ring_scale_f32", {out, static_cast<uint32_t>(m), k},
                   6, scale);
      }
    execute(scale);
  }
  if (p.kind != Program::Kind::kAllReduceAcrossTiles) return;
  transfers = {};
  for (unsigned r = 0; r < replicas_; ++r)
    for (size_t c = 0; c < rows; ++c)
      for (size_t g = 0; g < rows; ++g)
        if (g != c)
          add_transfers(transfers, p.source, c * n + c * m, r, p.source, g * n + c * m, r, m);
  exchange(transfers);
}

void Compilation::place_remote_buffers() {
  const auto& buffers = graph_.remote_buffers();
  if (buffers.empty()) return;
  uint64_t per_replica = 0;
  for (const RemoteBufferInfo& b : buffers) {
    RemotePlacement& r = exe_.remote_buffers[b.name];
    r.info = b;
    r.entry_bytes = b.elements * dtype_size(b.type);
    r.offset = per_replica;
    per_replica += (r.entry_bytes * b.entries + 63) / 64 * 64;  // whole bursts
  }
  // Replicas sharing a gateway take its memory in turn.
  const hw::MachineConfig& m = graph_.target().machine;
  const uint64_t memory = uint64_t{m.gateway.dimms} * m.gateway.dimm_bytes;
  std::map<unsigned, unsigned> on_gateway;
  for (unsigned r = 0; r < replicas_; ++r) {
    const unsigned gateway = r * graph_.target().replica_chips() / m.gateway.chips_per_gateway;
    const uint64_t base = on_gateway[gateway]++ * per_replica;
    if (base + per_replica > memory)
      throw CompileError(fmt::format(
          "the remote buffers of replica {} need {} bytes of streaming memory from byte {} of "
          "gateway {}, which has {}",
          r, per_replica, base, gateway, memory));
    exe_.replica_memory.push_back({gateway, base});
  }
}

void Compilation::remote_copy(const Program& p) {
  const bool write = p.kind == Program::Kind::kCopyToRemote;
  const TensorInfo& t = info(write ? p.source : p.destination);
  const RemoteBufferInfo& b = graph_.remote_buffer(p.remote);
  const RemotePlacement& rp = exe_.remote_buffers.at(b.name);
  const hw::MachineConfig& m = graph_.target().machine;
  const size_t size = dtype_size(t.type);
  // Each tile issues its pieces one after another; a write's words leave through the tile's
  // send port a word a cycle, a read sends one request. The gateway times the rest, and the
  // sync after the phase waits for every transfer to complete.
  std::map<unsigned, std::vector<ipu_action>> acts;
  // A tile's first action leaves the runtime its gap, and the out-of-line call that issues
  // remote transfers (firmware/runtime/bsp_runtime.c) a setup's worth more.
  std::map<unsigned, uint32_t> next;
  uint32_t end = 0;
  for (unsigned r = 0; r < replicas_; ++r)
    for (const Placement& pl : exe_.tensors.at(t.name)) {
      const unsigned tile = machine_tile(r, pl.tile), chip = tile / m.chip.tiles;
      const std::string where =
          fmt::format("{} of '{}' ({} of replica {})", write ? "CopyToRemote" : "CopyFromRemote",
                      t.name, graph_.describe_tile(pl.tile), r);
      if (chip / m.gateway.chips_per_gateway != exe_.replica_memory[r].gateway)
        throw CompileError(fmt::format(
            "{}: the tile's chip {} is not on gateway {}, which holds the replica's remote "
            "buffer '{}' (chips {}-{})",
            where, chip, exe_.replica_memory[r].gateway, b.name,
            exe_.replica_memory[r].gateway * m.gateway.chips_per_gateway,
            (exe_.replica_memory[r].gateway + 1) * m.gateway.chips_per_gateway - 1));
      // Whole words: pieces start on 32-bit boundaries (the graph checks) and an entry is whole
      // words (add_remote_buffer checks).
      const size_t first = pl.begin * size, bytes = (pl.end - pl.begin) * size;
      const uint64_t address =
          exe_.replica_memory[r].base + rp.offset + p.entry * rp.entry_bytes + first;
      const auto words = static_cast<uint32_t>(bytes / 4);
      const uint32_t offset =
          next.emplace(tile, options_.action_gap + options_.receive_setup).first->second;
      acts[tile].push_back({offset,
                            write ? uint32_t{IPU_ACTION_SM_WRITE} : uint32_t{IPU_ACTION_SM_READ},
                            static_cast<uint32_t>(address), words, pl.address,
                            static_cast<uint32_t>(address >> 32)});
      const uint32_t busy = write ? words : 1;
      const uint32_t issued = offset + busy + options_.action_gap + options_.receive_setup;
      next[tile] = issued;
      end = std::max(end, issued);
      ++exe_.remote_copies;
    }
  for (unsigned tile : tiles_) {
    auto& a = acts[tile];
    steps_[tile].push_back({IPU_STEP_EXCHANGE, static_cast<uint32_t>(actions_[tile].size()),
                            static_cast<uint32_t>(a.size()), end});
    actions_[tile].insert(actions_[tile].end(), a.begin(), a.end());
  }
  emit_all(IPU_STEP_SYNC, 0, 0, 0);  // the transfers are complete at this sync
  exe_.supersteps += 2;
}

void Compilation::lay_out() {
  // Destination lists: each send's list follows its action order.
  for (unsigned t : tiles_) {
    auto& lists = dest_lists_[t];
    if (lists.empty()) continue;
    const uint32_t base =
        memory_[t].allocate(static_cast<uint32_t>(4 * lists.size()), "exchange destination lists");
    size_t cursor = 0;
    for (ipu_action& a : actions_[t]) {
      if (a.kind != IPU_ACTION_SEND) continue;
      a.dests = base + static_cast<uint32_t>(4 * cursor);
      cursor += 1 + lists[cursor];
    }
    auto& bytes = initial_[t];
    const uint32_t offset = base - heap_start_;
    if (bytes.size() < offset + 4 * lists.size()) bytes.resize(offset + 4 * lists.size());
    std::memcpy(bytes.data() + offset, lists.data(), 4 * lists.size());
  }
  // The control program; memory checked; the data segments.
  std::ostringstream report;
  for (unsigned t : tiles_) {
    TileMemory& m = memory_[t];
    const auto& steps = steps_[t];
    const auto& acts = actions_[t];
    const auto& vs = vertices_[t];
    const uint32_t steps_at =
        m.allocate(static_cast<uint32_t>(sizeof(ipu_step) * steps.size()), "control steps");
    const uint32_t actions_at =
        m.allocate(static_cast<uint32_t>(sizeof(ipu_action) * acts.size()), "exchange actions");
    const uint32_t vertices_at =
        m.allocate(static_cast<uint32_t>(sizeof(ipu_vertex) * vs.size()), "vertex table");
    const uint32_t programs_at =
        m.allocate(static_cast<uint32_t>(4 * program_steps_.size()), "program table");
    uint64_t needed = 0;
    for (const auto& [what, bytes] : m.contents) needed += (bytes + 7) & ~7u;
    const unsigned replica = t / replica_tiles_, tile = t % replica_tiles_;
    const std::string where =
        replicas_ == 1 ? graph_.describe_tile(tile)
                       : fmt::format("{} of replica {}", graph_.describe_tile(tile), replica);
    if (m.overflows() || needed > m.limit - heap_start_) {
      std::string contents;
      for (const auto& [what, bytes] : m.contents)
        contents += fmt::format("\n  {} bytes: {}", bytes, what);
      throw CompileError(fmt::format(
          "{} needs {} bytes of data but has {} free above its firmware ({} bytes over); on it:{}",
          where, needed, m.limit - heap_start_, needed - (m.limit - heap_start_), contents));
    }
    if (replica == 0)
      report << fmt::format("{:>9}: {:7} bytes of {} ({:.1f}%)\n", where, m.used(heap_start_),
                            m.limit - heap_start_,
                            100.0 * m.used(heap_start_) / (m.limit - heap_start_));
    auto& bytes = initial_[t];
    bytes.resize(m.next - heap_start_, 0);
    const ipu_tile_program header{IPU_PROGRAM_MAGIC,
                                  steps_at,
                                  actions_at,
                                  vertices_at,
                                  static_cast<uint32_t>(steps.size()),
                                  programs_at,
                                  static_cast<uint32_t>(program_steps_.size()),
                                  0};
    std::memcpy(bytes.data(), &header, sizeof header);
    place(bytes, steps_at - heap_start_, steps);
    place(bytes, programs_at - heap_start_, program_steps_);
    place(bytes, actions_at - heap_start_, acts);
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

void Compilation::write_image() {
  // The firmware on every tile of every replica, plus the tile's data.
  const unsigned per_chip = graph_.target().chip().tiles;
  exe_.image.path = "<compiled>";
  exe_.image.entry = firmware_.entry;
  exe_.image.symbols = firmware_.symbols;
  exe_.image.function_sizes = firmware_.function_sizes;
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
    ElfSegment data;
    data.index = index++;
    data.chip = chip;
    data.vaddr = heap_start_;
    data.paddr = tile_physical_address(tile, heap_start_);
    data.data = initial_[t];
    data.mem_size = static_cast<uint32_t>(initial_[t].size());
    exe_.image.segments.push_back(std::move(data));
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
      "end",       "execute",           "sync",     "exchange", "repeat", "repeat_end",
      "host_sync", "exchange_external", "dispatch", "goto"};
  m["steps"] = Json::array();
  for (const ipu_step& st : steps_[*tiles_.begin()]) {
    Json step = {{"step", st.op < std::size(kStepNames) ? kStepNames[st.op] : "?"}};
    if (st.op == IPU_STEP_EXECUTE) step["vertices_on_first_tile"] = st.b;
    if (st.op == IPU_STEP_EXCHANGE || st.op == IPU_STEP_EXCHANGE_EXTERNAL)
      step["end_cycles"] = st.c;
    if (st.op == IPU_STEP_REPEAT) step["count"] = st.a;
    if (st.op == IPU_STEP_GOTO) step["to"] = st.a;
    if (st.op == IPU_STEP_SYNC && st.a != 0)
      step["scope"] = st.a == hw::SyncNetwork::kExternal ? "external"
                      : st.a == hw::SyncNetwork::kGs1    ? "gs1"
                                                         : "gs2";
    if (st.op == IPU_STEP_HOST_SYNC) {
      const HostTransfer& h = exe_.host_transfers.at(st.a);
      step["stream"] = h.stream;
      step["tensor"] = h.tensor;
    }
    m["steps"].push_back(std::move(step));
  }
  exe_.manifest = m.dump(1) + "\n";
  exe_.image.sections[".ipu.manifest"] =
      std::vector<uint8_t>(exe_.manifest.begin(), exe_.manifest.end());
}

Executable Compilation::run(const std::vector<NamedProgram>& programs) {
  exe_.machine = graph_.target().machine;
  exe_.replicas = replicas_;
  exe_.replica_tiles = replica_tiles_;
  exe_.streams = graph_.streams();
  if (programs.empty()) throw CompileError("an executable needs at least one program");
  std::set<std::string> names;
  for (const NamedProgram& n : programs) {
    if (n.name.empty()) throw CompileError("a program needs a name");
    if (!names.insert(n.name).second)
      throw CompileError(fmt::format("two programs are named '{}'", n.name));
    check(n.program);
  }
  if (std::any_of(programs.begin(), programs.end(),
                  [](const NamedProgram& n) { return has_collective(n.program); }))
    add_collective_codelets(graph_);
  for (const NamedProgram& n : programs) add_ring_buffers(n.program);
  const hw::MachineConfig& machine = graph_.target().machine;
  if (options_.host_link == HostLink::kGateway && !machine.gateway.present)
    throw CompileError(fmt::format(
        "host streams over the gateway: the target ({}) has no IPU-Gateway", machine.preset));
  // kAuto takes the gateway when each replica's chips share one (a replica larger than an
  // IPU-Machine would need its stream split across gateways: it stays on PCIe).
  const bool one_gateway = graph_.target().replica_chips() <= machine.gateway.chips_per_gateway;
  if (options_.host_link == HostLink::kGateway ||
      (options_.host_link == HostLink::kAuto && machine.gateway.present && one_gateway))
    for (const auto& [name, stream] : graph_.streams()) {
      if (stream.elements * dtype_size(stream.type) % 4 != 0)
        throw CompileError(fmt::format(
            "stream '{}': {} {} elements are {} bytes; over the gateway a stream moves whole "
            "32-bit words",
            name, stream.elements, dtype_name(stream.type),
            stream.elements * dtype_size(stream.type)));
      stream_staging_[name] =
          graph_.add_remote_buffer(name + ".host_stream", stream.type, stream.elements, 1);
    }
  for (const TensorInfo& t : graph_.tensors()) exe_.tensor_info[t.name] = t;
  build_firmware_image();
  allocate_tensors();
  add_graph_vertices();
  place_remote_buffers();
  // Step 0 waits for the host's command; each program returns to it.
  static_assert(IPU_HOST_COMMAND == hw::SyncNetwork::kHostCommand);
  emit_all(IPU_STEP_DISPATCH, 0, 0, 0);
  exe_.command_address = heap_start_ + offsetof(ipu_tile_program, command);
  for (const NamedProgram& n : programs) {
    program_steps_.push_back(static_cast<uint32_t>(steps_[*tiles_.begin()].size()));
    const unsigned supersteps = exe_.supersteps;
    exe_.programs.push_back({n.name, {}, 0});
    lower(n.program);
    exe_.programs.back().supersteps = exe_.supersteps - supersteps;
    emit_all(IPU_STEP_GOTO, 0, 0, 0);
  }
  lay_out();
  write_image();
  write_manifest();
  const std::string runtime = runtime_json(exe_);  // what a saved image needs to run again
  exe_.image.sections[kRuntimeSection].assign(runtime.begin(), runtime.end());
  return std::move(exe_);
}

}  // namespace

Executable compile(const Graph& graph, const std::vector<NamedProgram>& programs,
                   const CompileOptions& options) {
  return Compilation(graph, options).run(programs);
}

Executable compile(const Graph& graph, const Program& program, const CompileOptions& options) {
  return compile(graph, {{"main", program}}, options);
}

}  // namespace ipu::sdk

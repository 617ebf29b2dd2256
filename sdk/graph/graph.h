// The SDK's graph and program API: how a host program describes a bulk-synchronous program for
// the virtual IPU, in the spirit of the IPU's own graph API (docs/sdk.md).
//
// A Graph holds tensors (typed, shaped, named) mapped onto tiles, codelets (C functions run on
// a worker, with typed fields), vertices (a codelet on one tile with its fields bound to tensor
// regions on that tile) grouped into compute sets, and host streams. A Program is a tree of
// Sequence, Execute(compute set), Copy(tensor -> tensor, anywhere on the target), Repeat(n),
// Sync, host stream copies, and, across replicas, CrossReplicaCopy and the collectives.
// sdk/compiler turns a graph and a program into one image.
//
// A target is a chip or a machine of several (docs/sdk.md). Its chips may be split into
// replicas: the graph then describes one replica (its tiles are numbered chip * tiles + tile
// within the replica) and every replica runs it on its own data.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "hw/machine/machine_config.h"

namespace ipu::sdk {

// Any error in a graph or program the user built: names the object at fault.
class GraphError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class DType : uint8_t { kF32, kF16, kI32, kU32, kU8 };
inline size_t dtype_size(DType type) {
  switch (type) {
    case DType::kF32:
    case DType::kI32:
    case DType::kU32: return 4;
    case DType::kF16: return 2;
    case DType::kU8: return 1;
  }
  return 4;
}
inline const char* dtype_name(DType type) {
  switch (type) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kI32: return "i32";
    case DType::kU32: return "u32";
    case DType::kU8: return "u8";
  }
  return "?";
}

struct Target {
  hw::MachineConfig machine;
  unsigned replicas = 1;  // machine.chips / replicas chips run each replica of the graph

  // A chip preset ("mk2", "bow") or a machine preset ("m2000", "pod16", ...), optionally with
  // fewer tiles per chip (for tests) and split into `replicas` replicas.
  static Target preset(const std::string& name, unsigned tiles = 0, unsigned replicas = 1);
  // The same from a configured machine (hw::configure_machine: a preset with any parameters).
  static Target of(hw::MachineConfig machine, unsigned tiles = 0, unsigned replicas = 1);
  const hw::ChipConfig& chip() const { return machine.chip; }
  unsigned replica_chips() const { return machine.chips / replicas; }
  unsigned replica_tiles() const { return replica_chips() * machine.chip.tiles; }
};

// Elements [begin, end) of a tensor (flattened, row-major) live on `tile`.
struct Interval {
  size_t begin, end;
  unsigned tile;
};

struct TensorInfo {
  std::string name;
  DType type;
  std::vector<size_t> shape;
  size_t elements;
  std::vector<Interval> mapping;  // sorted, disjoint, covering [0, elements) once mapped
  std::vector<uint8_t> initial;   // constants: their value
  // A view (Graph::slice, Graph::reshape) has no memory of its own: it is elements
  // [view_offset, view_offset + elements) of tensor `view_of`, which is not a view.
  unsigned view_of = ~0u;
  size_t view_offset = 0;
  bool is_view() const { return view_of != ~0u; }
  // Its value matters only from its first use to its last (Graph::set_scratch).
  bool scratch = false;
};

struct Tensor {
  unsigned id = ~0u;
};

// Elements [begin, end) of a tensor, flattened.
struct Region {
  Tensor tensor;
  size_t begin = 0, end = 0;
};

enum class FieldKind : uint8_t { kInput, kOutput, kInOut, kScalar };
struct Field {
  std::string name;
  FieldKind kind;
  DType type;  // element type of a tensor field; ignored for scalars (32-bit)
};

struct CodeletInfo {
  std::string name;    // the C function's name
  std::string source;  // path of the C file that defines it
  std::vector<Field> fields;
};

using Binding = std::variant<Region, uint32_t>;

struct VertexInfo {
  std::string codelet;
  unsigned tile;
  // In the order of the codelet's fields (CodeletInfo::fields): a graph of BERT-Large holds
  // millions of vertices, and a map of field names a vertex took three times the memory.
  std::vector<Binding> fields;
  unsigned compute_set;
  unsigned workers = 1;  // 6: the codelet runs on all six workers, each finding its share
};

struct ComputeSet {
  unsigned id = ~0u;
};

// A program compiled once and run wherever a Call names it (poplar's Graph::addFunction): work
// repeated in a program (a pipeline stage's forward pass, run again for its recomputation) takes
// its control steps and exchange tables once.
struct Program;
struct Function {
  unsigned id = ~0u;
};
struct FunctionInfo {
  std::string name;
  std::shared_ptr<const Program> body;
};

// A remote buffer: `entries` slots of `elements` elements each in the streaming memory of the
// replica's IPU-Gateway (machines only), each replica with its own. Programs copy a tile
// tensor to or from one entry (CopyToRemote / CopyFromRemote), timed through the gateway.
struct RemoteBuffer {
  unsigned id = ~0u;
};
struct RemoteBufferInfo {
  std::string name;
  DType type;
  size_t elements;
  unsigned entries;
};

enum class StreamDirection : uint8_t { kHostToDevice, kDeviceToHost };
struct StreamInfo {
  std::string name;
  DType type;
  size_t elements;
  StreamDirection direction;
};

class Graph {
 public:
  explicit Graph(Target target);

  const Target& target() const { return target_; }
  // Tiles of one replica: chip c's tile t is tile c * chip tiles + t.
  unsigned tiles() const { return target_.replica_tiles(); }
  unsigned replicas() const { return target_.replicas; }
  // The graph tile of tile `tile` of chip `chip` of a replica; throws GraphError naming a chip or
  // tile the target lacks.
  unsigned tile(unsigned chip, unsigned tile) const;

  Tensor add_variable(DType type, std::vector<size_t> shape, const std::string& name);
  // A constant: its value is part of the image.
  Tensor add_constant(DType type, std::vector<size_t> shape, const void* data,
                      const std::string& name);

  // A view of elements [begin, end) of `t` (flattened, row-major) as a tensor of `shape`, as
  // poplar's slices and reshapes are: it takes no memory, is mapped as those elements are, and
  // programs, vertices and the host use it as any tensor (writing it writes `t`). `t` must be
  // mapped first and keeps its mapping; `begin` starts on a 32-bit word, as every piece does.
  // The name defaults to "t[begin:end]".
  Tensor slice(Tensor t, size_t begin, size_t end, std::vector<size_t> shape,
               const std::string& name = "");
  Tensor reshape(Tensor t, std::vector<size_t> shape, const std::string& name = "");
  // A scratch tensor's value matters only from its first use to its last, in a walk of the
  // programs in the order they are compiled (a Repeat's uses span the whole Repeat): the
  // compiler lets scratch tensors whose spans do not meet share memory, as poplar's liveness
  // analysis does. An operation's staging buffers and a layer's activations are scratch; a
  // tensor the host reads after the run, or that keeps state from one run to the next, is not.
  // Marking a view marks its tensor.
  void set_scratch(Tensor t);
  void set_tile_mapping(Tensor t, unsigned tile);                  // the whole tensor on one tile
  void set_tile_mapping(Tensor t, std::vector<Interval> mapping);  // explicit intervals
  // Spreads a tensor over tiles first .. first+count-1 in equal contiguous pieces whose sizes
  // are multiples of `grain` elements (the last tiles may get one grain less).
  void map_evenly(Tensor t, unsigned first, unsigned count, size_t grain = 1);
  // The same over the listed tiles, in their order.
  void map_evenly(Tensor t, const std::vector<unsigned>& tiles, size_t grain = 1);

  Region region(Tensor t) const;  // the whole tensor
  Region region(Tensor t, size_t begin, size_t end) const;

  void add_codelet(const std::string& name, const std::string& source, std::vector<Field> fields);
  ComputeSet add_compute_set(const std::string& name);
  // workers = 6 runs the codelet on all six workers of the tile with the same fields; each
  // finds its share from ipu_context_id() (1..6). Otherwise the vertex takes one worker.
  void add_vertex(ComputeSet cs, const std::string& codelet, unsigned tile,
                  std::map<std::string, Binding> fields, unsigned workers = 1);

  // A function of `body`, run by each Call(f). Its body may not call a function nor move a host
  // stream's data (the compiler refuses it, naming the function). A scratch tensor used only in
  // the body lives only while the body runs: the functions' own scratch tensors share memory
  // with one another's, never with the rest.
  Function add_function(const Program& body, const std::string& name);

  void add_host_stream(const std::string& name, DType type, size_t elements,
                       StreamDirection direction);
  // Throws GraphError on a target without streaming memory, for a repeated name, no entries,
  // or an entry that is not a whole number of 32-bit words.
  RemoteBuffer add_remote_buffer(const std::string& name, DType type, size_t elements,
                                 unsigned entries);

  const TensorInfo& tensor(Tensor t) const;
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, CodeletInfo>& codelets() const { return codelets_; }
  const std::vector<VertexInfo>& vertices() const { return *vertices_; }
  const std::vector<std::string>& compute_sets() const { return compute_sets_; }
  const std::map<std::string, StreamInfo>& streams() const { return streams_; }
  const std::vector<RemoteBufferInfo>& remote_buffers() const { return remote_buffers_; }
  const RemoteBufferInfo& remote_buffer(RemoteBuffer b) const;
  const std::vector<FunctionInfo>& functions() const { return functions_; }
  const FunctionInfo& function(Function f) const;  // throws GraphError for one it lacks
  // The tile holding element `index` of `t` (throws GraphError for an unmapped element).
  unsigned tile_of(Tensor t, size_t index) const;
  // "tile 5", or "tile 1477 (chip 1 tile 5)" on a multi-chip replica; "8 tiles (2 chips of 4)".
  std::string describe_tile(unsigned tile) const;
  std::string describe_size() const;

 private:
  TensorInfo& info(Tensor t);
  Target target_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, CodeletInfo> codelets_;
  // Shared by the graph's copies until one adds a vertex: the compiler copies the graph to add
  // its own tensors and buffers, never vertices, and the vertices are most of a large graph.
  std::shared_ptr<std::vector<VertexInfo>> vertices_ = std::make_shared<std::vector<VertexInfo>>();
  std::vector<std::string> compute_sets_;
  std::map<std::string, StreamInfo> streams_;
  std::vector<RemoteBufferInfo> remote_buffers_;
  std::vector<FunctionInfo> functions_;
};

// ---- programs ----

// Which tiles a Sync waits for: those of each chip (internal), every tile of every chip
// (external, the kind that lets the next exchange cross chips), or the tiles of the chips of
// this chip's part of the machine's grouped sync GS1 or GS2 (sync.gs1 / sync.gs2, docs/machine.md).
enum class SyncScope : uint8_t { kInternal, kExternal, kGs1, kGs2 };

// Reductions of the collectives. kMean is the sum divided by the replica count (f32 only).
enum class CollectiveOp : uint8_t { kSum, kMean, kMax };
const char* collective_op_name(CollectiveOp op);

// How collectives move data between replicas. A ring visits the replicas in an order whose
// neighbours are joined by IPU-Links (one chip per replica: up one column of the ladder and
// down the other); the unidirectional ring sends every chunk one way round, the bidirectional
// ring sends half the data each way, using both directions of every link it crosses. Two more
// serve AllReduce alone, where a ring's R - 1 steps each way cost more in fixed costs than
// their data: kDirect (two replicas: each sends its whole tensor to the other and adds, one
// step) and kHalvingDoubling (one-chip replicas, a power of two of them: log2 R steps of
// recursive halving, the largest over the ladder's rungs, then as many of doubling). kAuto
// chooses by size, as GCL does (collective_algorithm() and all_reduce_algorithm() in
// sdk/compiler/compiler.h).
enum class CollectiveAlgorithm : uint8_t {
  kRing,
  kBidirectionalRing,
  kAuto,
  kDirect,
  kHalvingDoubling
};
const char* collective_algorithm_name(CollectiveAlgorithm algorithm);
struct CollectiveOptions {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;
};

// A Copy's (source, destination) pairs, shared by the copies of its Program: a program is
// copied into the sequences, functions and parts that run it, and BERT-Large's relayouts list
// tens of millions of pairs. Read-only once made.
class CopyPairList {
 public:
  using Pair = std::pair<Region, Region>;
  CopyPairList() = default;
  CopyPairList(std::vector<Pair> pairs)  // NOLINT(google-explicit-constructor): a list's value
      : pairs_(pairs.empty() ? nullptr
                             : std::make_shared<const std::vector<Pair>>(std::move(pairs))) {}
  bool empty() const { return pairs_ == nullptr; }
  size_t size() const { return pairs_ ? pairs_->size() : 0; }
  const Pair& operator[](size_t i) const { return (*pairs_)[i]; }
  const Pair* begin() const { return pairs_ ? pairs_->data() : nullptr; }
  const Pair* end() const { return pairs_ ? pairs_->data() + pairs_->size() : nullptr; }

 private:
  std::shared_ptr<const std::vector<Pair>> pairs_;
};

struct Program {
  enum class Kind : uint8_t {
    kSequence,
    kExecute,
    kCopy,
    kBroadcast,
    kRepeat,
    kSync,
    kHostWrite,
    kHostRead,
    kCrossReplicaCopy,
    kAllReduce,
    kReduceScatter,
    kAllGather,
    kCopyToRemote,
    kCopyFromRemote,
    kAllReduceAcrossTiles,
    kReduceScatterAcrossTiles,
    kCall
  };
  Kind kind = Kind::kSequence;
  std::vector<Program> body;               // Sequence, Repeat
  ComputeSet compute_set;                  // Execute
  Tensor source, destination;              // Copy; HostWrite: destination; HostRead: source
  std::string stream;                      // HostWrite, HostRead
  unsigned count = 0;                      // Repeat
  SyncScope scope = SyncScope::kInternal;  // Sync
  std::vector<unsigned> replica_map;       // CrossReplicaCopy: replica r sends to replica_map[r]
  CollectiveOp op = CollectiveOp::kSum;    // AllReduce, ReduceScatter
  CollectiveOptions collective;            // AllReduce, ReduceScatter, AllGather
  CopyPairList pairs;                      // Copy of several regions: (source, destination)
  RemoteBuffer remote;                     // CopyToRemote, CopyFromRemote
  unsigned entry = 0;                      // CopyToRemote, CopyFromRemote
  Function function;                       // Call
};

Program Sequence(std::vector<Program> steps);
Program Execute(ComputeSet cs);
Program Copy(Tensor source, Tensor destination);
// Several copies in one exchange phase: each pair's source region goes to its destination
// region (same element count and type). Regions may be of any tensors and on any chips.
Program Copy(std::vector<std::pair<Region, Region>> pairs);
// Every consecutive source-sized chunk of `destination` gets a copy of `source`: one multicast
// send per source piece.
Program Broadcast(Tensor source, Tensor destination);
Program Repeat(unsigned count, Program body);
Program Call(Function function);  // runs the function's body (Graph::add_function)
Program Sync(SyncScope scope = SyncScope::kInternal);
Program HostWrite(const std::string& stream, Tensor destination);  // host -> device
Program HostRead(Tensor source, const std::string& stream);        // device -> host

// Across replicas (all compiled into inter-chip exchange after an external sync):
// Replica r's `source` goes to replica replica_map[r]'s `destination` (replica_map is a
// permutation of the replicas).
Program CrossReplicaCopy(Tensor source, Tensor destination, std::vector<unsigned> replica_map);
// `data` (f32 or i32) becomes, on every replica, the reduction over replicas of it.
Program AllReduce(Tensor data, CollectiveOp op, CollectiveOptions options = {});
// `out` (data's elements / replicas) becomes on replica r the reduction of chunk r of `data`
// (elements [r x n, (r + 1) x n)). `data` is left as it was.
Program ReduceScatter(Tensor data, Tensor out, CollectiveOp op, CollectiveOptions options = {});
// `out` (replicas x in's elements, any 32-bit type) gets replica r's `in` as its chunk r, on
// every replica.
Program AllGather(Tensor in, Tensor out, CollectiveOptions options = {});

// Inside each replica, across tiles (one exchange phase to gather, one to share back): `data`
// has shape {G, n}, row g a tile's slice. AllReduceAcrossTiles leaves in every row the
// element-wise reduction of all G rows; ReduceScatterAcrossTiles leaves in row c of `out`
// ({G, n / G}) chunk c of that reduction, `data` unchanged. Chunk c (elements [c n/G,
// (c+1) n/G) of a row) is reduced on the tile of its destination (row c's chunk c, or out's
// row c, which must lie on one tile), adding rows 0, 1, ..., G-1 in order. f32 or i32; sum,
// mean (f32) or max.
Program AllReduceAcrossTiles(Tensor data, CollectiveOp op);
Program ReduceScatterAcrossTiles(Tensor data, Tensor out, CollectiveOp op);

// Streaming memory (each replica its own buffer): the tiles holding `source` write it to entry
// `entry` of `buffer`, or read the entry into `destination`, in one exchange phase through the
// gateway; the phase's data is complete at the sync that follows it. The tensor has the
// buffer's type and elements, and lies on chips of the replica's gateway.
Program CopyToRemote(Tensor source, RemoteBuffer buffer, unsigned entry);
Program CopyFromRemote(RemoteBuffer buffer, unsigned entry, Tensor destination);

}  // namespace ipu::sdk

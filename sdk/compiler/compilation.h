// The compiler's pipeline, one stage a file (compiler.cpp runs them in order):
//   cross_compile.cpp  the codelets and the tile runtime through the cross compiler
//   checks.cpp         every program checked against the graph before anything is laid out
//   memory_plan.cpp    each tile's tensors and each replica's remote buffers placed
//   lowering.cpp       programs lowered to per-tile control steps and exchange actions
//   collectives.cpp    collectives across replicas (rings) and across tiles, as steps
//   image_layout.cpp   each tile's control program and vertex states laid out; image, manifest
// Internal to the compiler: not installed.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "firmware/include/ipu_program.h"
#include "sdk/compiler/compiler.h"
#include "sdk/compiler/exchange_schedule.h"
#include "sdk/compiler/stack_usage.h"
#include "sdk/image/elf_reader.h"

namespace ipu::sdk {

// ---- memory ----

// What a tile's memory holds, said once however many pieces say it ("control steps",
// "tensor 'x'", "vertex state (add_f32)"): a POD's compilation places millions of pieces, and
// a string each took gigabytes.
class MemoryLabels {
 public:
  uint32_t operator()(const std::string& text) {
    const auto [it, added] = ids_.try_emplace(text, static_cast<uint32_t>(texts_.size()));
    if (added) texts_.push_back(text);
    return it->second;
  }
  const std::string& text(uint32_t id) const { return texts_.at(id); }

 private:
  std::vector<std::string> texts_;
  std::unordered_map<std::string, uint32_t> ids_;
};

// One piece of a tile's memory, for the overflow report: its label and, for a tensor's piece,
// the elements it holds.
struct MemoryUse {
  uint32_t label, bytes;
  size_t begin = 0, end = 0;  // elements [begin, end) of a tensor (end 0: not a tensor's)
};

// A tile's free memory above the firmware: what the image must carry (control program, vertex
// states, constants) grows from the bottom; variables, which need no bytes in the image because
// tile SRAM starts zeroed, grow down from the top. The two must not meet.
struct TileMemory {
  uint32_t next = 0, top = 0, limit = 0;
  std::vector<MemoryUse> contents;  // for the overflow report
  uint32_t allocate(uint32_t bytes, uint32_t label, size_t begin = 0, size_t end = 0) {
    next = (next + 7) & ~7u;
    const uint32_t at = next;
    next += bytes;
    contents.push_back({label, bytes, begin, end});
    return at;
  }
  uint32_t allocate_top(uint32_t bytes, uint32_t label, size_t begin = 0, size_t end = 0) {
    const uint32_t need = (bytes + 7) & ~7u;
    top = need > top ? 0 : top - need;
    contents.push_back({label, bytes, begin, end});
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

// A tile's image bytes as segments: [begin, end) of them, of which the first `stored` are
// kept in the image and the rest are zeros (stored_runs never stores a zero gap of a page or
// more). Together they cover the bytes.
struct StoredRun {
  uint32_t begin, end, stored;
};
std::vector<StoredRun> stored_runs(const std::vector<uint8_t>& bytes);

// Ranges [first, second) of a tensor's elements.
using ElementRanges = std::vector<std::pair<size_t, size_t>>;

// The collectives' reduction codelets (firmware/codelets/collectives.c), added to a graph whose
// program has a collective.
void add_collective_codelets(Graph& g);
// Whether `p` or any program in it (or in a function it calls) is a collective.
bool has_collective(const Graph& g, const Program& p);

// One compilation: the graph (with the collectives' buffers and codelets added), its memory
// and the per-tile control programs of every tile of every replica (machine tiles).
class Compilation {
 public:
  Compilation(const Graph& graph, const CompileOptions& options)
      : graph_(graph),
        options_(options),
        replicas_(graph.replicas()),
        replica_tiles_(graph.tiles()),
        scheduler_(graph.target().machine, ScheduleMargins::of(options)),
        chip_computed_(graph.target().machine.chips, 1) {}

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
  // Places every tensor: the others for the whole run, scratch tensors by their spans of use in
  // `programs` (memory_plan.cpp).
  void allocate_tensors(const std::vector<NamedProgram>& programs);
  // (graph tile, address) of element `index` of `t`.
  std::pair<unsigned, uint32_t> address_of(Tensor t, size_t index) const;
  void add_vertex(unsigned tile, const std::string& codelet, const std::vector<uint32_t>& state,
                  unsigned workers, unsigned compute_set);
  // The vertices of every compute set `programs` execute, on their tiles.
  void add_graph_vertices(const std::vector<NamedProgram>& programs);
  // The same step on every tile; `label` names it (default: the program step being lowered).
  void emit_all(uint32_t op, uint32_t a, uint32_t b, uint32_t c, const std::string& label = "");
  void lower(const Program& p);
  void execute(unsigned compute_set);
  // A phase's transfers, indexed by their source words so that a multicast joins in log time.
  using Transfers = TransferList;
  // `part`: which part of the program step the phase is, appended to its label.
  void exchange(const Transfers& transfers, const std::string& part = "");
  // Transfers moving `count` elements of `source` from element `source_begin` on replica
  // `from` to `destination` from `destination_begin` on replica `to`.
  void add_transfers(Transfers& out, Tensor source, size_t source_begin, unsigned from,
                     Tensor destination, size_t destination_begin, unsigned to, size_t count) const;
  // The collectives, as ring steps.
  struct RingPart {
    std::vector<unsigned> order;  // replicas round the ring
    size_t begin_fraction;        // 0: the first half of each chunk (or all of it), 1: the second
  };
  // `options` chosen by size already (collective_algorithm): not kAuto.
  std::vector<RingPart> ring_parts(CollectiveOptions options) const;
  std::vector<unsigned> ring_order() const;
  // The elements of t's chunk `chunk` (one of replicas, in whole words) that `part` of `parts`
  // carries: a range of t, or (`spread`) the chunk's share of each of t's tile pieces.
  ElementRanges ring_chunk(Tensor t, bool spread, unsigned chunk, const RingPart& part,
                           size_t parts) const;
  // Ring reduce-scatter: replica r ends with chunk r reduced, in `acc` or, `into_data`, in
  // `data` (the last step adds into data rather than acc); chunks as ring_chunk's.
  void reduce_scatter(Tensor data, Tensor acc, CollectiveOp op, CollectiveOptions options,
                      bool into_data, bool spread);
  // One reduction vertex for each tile piece of `data`'s elements [lo, hi) on `replica`: with
  // `k`, the mean's scale of acc or (`into`) data; else `op` of data into acc or (`into`) of
  // acc into data.
  void reduction_vertices(unsigned cs, Tensor data, Tensor acc, CollectiveOp op, unsigned replica,
                          size_t lo, size_t hi, bool into, std::optional<uint32_t> k);
  uint32_t mean_scale(DType type) const;
  void direct_all_reduce(Tensor data, Tensor acc, CollectiveOp op);
  void halving_doubling_all_reduce(Tensor data, Tensor acc, CollectiveOp op, bool spread);
  void all_reduce(const Program& p);
  void reduce_scatter(const Program& p);
  void all_gather(const Program& p);
  // Across the tiles of each replica: gather chunk c of every row on its destination's tile,
  // reduce there, and (AllReduceAcrossTiles) send the result back to every row.
  std::pair<Tensor, size_t> tiles_destination(const Program& p, size_t chunk) const;
  void across_tiles(const Program& p);
  // Streaming memory: each replica's remote buffers, then the transfers of one copy.
  void place_remote_buffers();
  // `part`: which part of the program step it is (a host stream's leg), for its label.
  // `joint`: the phase opens with a sync across the copy's chips, so that the gateway serves
  // their transfers together (a host stream's tiles' leg, next to a host sync that aligns its
  // chips anyway); otherwise each chip's transfers are a phase of that chip.
  void remote_copy(const Program& p, const std::string& part = "", bool joint = false);
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
  FirmwareStacks stacks_;                     // as linked: sized from the code (stack_usage.h)
  std::map<unsigned, unsigned> ring_buffer_;  // tensor id -> its collectives' accumulator
  // (data, destination) ids -> the gather buffer of a collective across tiles
  std::map<std::pair<unsigned, unsigned>, unsigned> tile_buffer_;
  std::set<unsigned> active_;                         // graph tiles with a tensor or a vertex
  std::set<unsigned> tiles_;                          // their machine tiles, in every replica
  MemoryLabels labels_;                               // what memory_'s pieces hold
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
  // Per chip: whether a tile of it ran a vertex since the chip's last sync (unknown, after a
  // jump: yes). An exchange phase the chip has no part in then still ends in its sync.
  std::vector<char> chip_computed_;
  // The exchange steps some chips step over: their index, op and those chips.
  struct SatOut {
    uint32_t op;
    std::vector<unsigned> chips;
  };
  std::map<uint32_t, SatOut> sat_out_;
  std::map<unsigned, std::vector<ExchangeAction>> actions_;
  std::map<unsigned, std::vector<uint32_t>> dest_lists_;
  unsigned host_transfer_ids_ = 0;
  std::vector<uint32_t> program_steps_;  // each program's first step
  // What the steps emitted next do, for Executable::control: the program step being lowered
  // (in a function's body, behind the function's name), and the label of each step so far.
  std::string step_label_, label_prefix_;
  std::vector<std::string> step_labels_;
  // Labels the steps emitted since the last call: `label`, or the program step's.
  void label_new_steps(const std::string& label = "");
  // The program step `p` for people: its kind and the tensors, stream or buffer it names.
  std::string describe(const Program& p) const;
  struct LoweredFunction {
    uint32_t first_step = 0;
    unsigned supersteps = 0;
  };
  std::map<unsigned, LoweredFunction> functions_;         // by function id, once lowered
  std::map<std::string, RemoteBuffer> stream_staging_;    // streams over the gateway
  std::map<std::string, unsigned> stream_slot_counters_;  // those with two buffers
};

}  // namespace ipu::sdk

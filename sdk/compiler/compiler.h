// The SDK compiler: turns a Graph and a Program into one firmware image (docs/sdk.md).
//
//  1. Builds one firmware for every tile with the RISC-V cross compiler: the BSP runtime
//     (firmware/runtime/bsp_runtime.c) and every codelet's C source. The compiler's diagnostics
//     reach the user as a CompileError with file and line.
//  2. Allocates each tile's memory above the firmware: its control program, tensors, vertex
//     states and exchange destination lists. A tile that overflows is an error naming the tile
//     and every tensor on it with its size.
//  3. Lowers each program to a per-tile list of steps (ipu_program.h), for every tile of every
//     replica: Execute runs the tile's vertices on its workers; Copy becomes a conflict-free,
//     time-deterministic exchange schedule (multicast where one source feeds many) timed with
//     the exchange's cost model, after an external sync and within the IPU-Links' rate where
//     words cross chips; the collectives become ring steps of such exchanges and reduction
//     vertices; host stream copies become host syncs. The programs follow one dispatch step, at
//     which the host names the program to run next.
//  4. Writes the image: per tile of each chip, the firmware plus that tile's data, and a
//     manifest section (.ipu.manifest, JSON) describing target, tensors, streams and supersteps.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sdk/compiler/stack_usage.h"
#include "sdk/graph/graph.h"
#include "sdk/image/elf_reader.h"

namespace ipu::sdk {

class CompileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// How host streams reach the tiles. Over PCIe: the host's DMA writes each tile piece through
// the chip's endpoint. Over the gateway (an IPU-Machine's host link): the host writes the
// stream into streaming memory over RoCE (by the host sync's end), then the tiles read their
// pieces from it in an exchange phase (HostRead: the reverse; see prefetch_streams).
enum class HostLink : uint8_t { kAuto, kPcie, kGateway };  // kAuto: the gateway if there is one

struct CompileOptions {
  // Where the firmware is built and kept; empty: a fresh directory under $TMPDIR (or /tmp),
  // removed when the compilation ends.
  std::string work_dir;
  HostLink host_link = HostLink::kAuto;
  // The exchange schedule's margins, in tile cycles. The firmware runtime
  // (firmware/runtime/exchange_actions.S) issues each action's key instruction exactly at its
  // offset, and needs a lead from the previous action's key by the later action's kind
  // (ipu_program.h): two actions of a tile are at least 54 cycles apart before a receive, 66
  // before a send and 114 before a streaming-memory transfer. `action_gap` raises that floor
  // for every action (0: the runtime's own).
  unsigned action_gap = 0;
  // From a receive's ipu.recv to its first word: words land from the cycle after it.
  unsigned receive_setup = 1;
  // After a receive's last word, before the tile listens to its next sender (the next
  // receive's ipu.recvsrc issues 6 cycles before its ipu.recv) or leaves the phase.
  unsigned action_slack = 6;
  // How much later than another send a send may reach its IPU-Link, beyond their scheduled
  // offsets: the cycles a link lane stays reserved after a send's last word. Every send issues
  // exactly at its offset and sends its first word the next cycle, so sends reach their links
  // equally late and a lane needs no margin.
  unsigned link_slack = 0;
  // Over the gateway, a host-to-device stream has two buffers in streaming memory, which its
  // uses take in turn: while the tiles read one use's batch, the host's RoCE leg fills the
  // other with the next use's, as Poplar's prefetching streams do (the runtime starts it as
  // soon as the host sync releases). Off: one buffer, and the two legs run in series.
  bool prefetch_streams = true;
};

// Where part of a tensor lives (the same in every replica).
struct Placement {
  unsigned tile;      // graph tile: chip * chip tiles + tile within a replica
  size_t begin, end;  // elements
  uint32_t address;   // tile address of element `begin`
};

struct HostTransfer {
  unsigned id;
  std::string stream;
  bool to_device;
  std::string tensor;
  std::string staging;  // over the gateway: the stream's buffer in streaming memory ("": PCIe)
};

// Where a remote buffer lies in each replica's streaming memory: at
// replica_memory[r].base + offset + entry x entry_bytes of gateway replica_memory[r].gateway.
struct RemotePlacement {
  RemoteBufferInfo info;
  uint64_t offset = 0;
  uint64_t entry_bytes = 0;
};
struct ReplicaMemory {
  unsigned gateway = 0;  // the gateway of the replica's first chip
  uint64_t base = 0;     // where its remote buffers start in that gateway's memory
};

// One of an executable's programs: what Device::run(name) runs.
struct ProgramInfo {
  std::string name;
  std::vector<unsigned> host_transfers;  // ids of the host transfers it makes
  unsigned supersteps = 0;               // syncs one pass of it makes (repeats counted once)
  uint32_t first_step = 0;               // its first control step (Executable::control)
};

// A step of the control program every tile runs (firmware/include/ipu_program.h: the same
// sequence on every tile), as the host follows it to name a run's supersteps
// (sdk/runtime/superstep_labels.h): its op and control operands (a sync's group, a host sync's
// transfer, a repeat's count and the step after it, a jump's or call's target) and, for people,
// an execute step's compute set or the program step that made a syncing step
// ("Copy 'x' -> 'y'", "AllReduce(sum) 'grads': reduce-scatter step 1 of 3").
struct ControlStep {
  uint32_t op = 0, a = 0, b = 0;
  std::string label;
  // Chips that step over this exchange (ascending): none of their tiles sends, receives or ran
  // a vertex since their last sync, so they sit it out as a chip whose program lacks it would.
  std::vector<unsigned> idle_chips;
};

struct Executable {
  ElfImage image;
  std::string manifest;  // JSON, also stored in the image's .ipu.manifest section
  hw::MachineConfig machine;
  unsigned replicas = 1;
  unsigned replica_tiles = 0;  // graph tiles of a replica: replica r's tile g is machine tile
                               // r * replica_tiles + g
  std::map<std::string, std::vector<Placement>> tensors;
  std::map<std::string, TensorInfo> tensor_info;
  std::map<std::string, StreamInfo> streams;
  std::vector<HostTransfer> host_transfers;
  std::map<std::string, RemotePlacement> remote_buffers;
  std::vector<ReplicaMemory> replica_memory;  // per replica (empty without remote buffers)
  std::vector<ProgramInfo> programs;          // in index order
  std::vector<ControlStep> control;           // the control steps, in order
  // Every compute set's name by id: the graph's, then those the collectives add ("reduce-scatter
  // grads step 1"); and the compute set of each vertex by its state's place (machine tile,
  // address), which a profile's worker runs carry (sdk/runtime/profile.h).
  std::vector<std::string> compute_sets;
  std::map<std::pair<unsigned, uint32_t>, unsigned> vertex_sites;
  uint32_t command_address = 0;        // every tile's ipu_tile_program.command
  unsigned supersteps = 0;             // syncs one pass of every program makes, summed
  unsigned exchange_sends = 0;         // sends in the compiled exchange schedule
  unsigned exchange_destinations = 0;  // their destinations (> sends where multicast)
  unsigned inter_chip_sends = 0;       // sends with a destination on another chip
  unsigned external_exchanges = 0;     // exchange phases after an external sync
  unsigned remote_copies = 0;          // tile transfers to or from streaming memory
  std::string memory_report;
  FirmwareStacks stacks;  // every tile's stacks, sized from the firmware's code
  // The tile whose data (tensors, programs, exchange tables) take the most of its memory above
  // the firmware, on replica 0.
  struct FullestTile {
    unsigned tile = 0;
    uint32_t used = 0, free = 0;
  } fullest_tile;
  // The most a tile of replica 0 holds of exchange tables (actions and destination lists).
  uint32_t most_exchange_table_bytes = 0;
};

// A program with the name the runtime runs it by.
struct NamedProgram {
  std::string name;
  Program program;
};

// An executable of several programs over one graph (and its memory): load it once, then run
// any of them, any number of times and in any order (Device::run(name)). Names are unique and
// not empty.
Executable compile(const Graph& graph, const std::vector<NamedProgram>& programs,
                   const CompileOptions& options = {});
// An executable of one program, named "main".
Executable compile(const Graph& graph, const Program& program, const CompileOptions& options = {});

// The ring a collective over `replicas` of a tensor of `bytes` (a replica's whole tensor; the
// gathered one for AllGather) runs: options.algorithm, or for kAuto the one-way ring on two
// replicas (both rings would cross the same rung the same ways) and where each replica's chunk
// is under 16 KiB (a step's sends are then a few words a tile, and the bidirectional ring's
// twice as many sends cost about what its second direction saves: 16 chips, 64 KiB, measured
// 1.03 times the ring's time), the bidirectional ring otherwise.
CollectiveAlgorithm collective_algorithm(CollectiveOptions options, unsigned replicas,
                                         size_t bytes);

// The algorithm an AllReduce over `replicas` of `replica_chips` chips each runs on a replica's
// tensor of `bytes`: options.algorithm, or for kAuto, where a ring's fixed costs a step
// outweigh its data, kDirect on two replicas (up to 1 MiB: beyond it adding the whole tensor
// on both costs more than the step it saves) and kHalvingDoubling on a power of two of
// one-chip replicas (up to 1 MiB: beyond it the bidirectional ring's both directions win);
// collective_algorithm()'s ring otherwise.
CollectiveAlgorithm all_reduce_algorithm(CollectiveOptions options, unsigned replicas,
                                         unsigned replica_chips, size_t bytes);

// What AllReduce(sum) of an f32 tensor leaves on every replica, computed on the host with the
// compiled collective's additions in their order, so that it equals the device's bit for bit:
// data[r] is replica r's tensor, `mapping` its tile mapping (Graph::tensor(t).mapping: large
// pieces make each chunk a share of every piece), or empty for the contiguous chunks of a
// ReduceScatter (whose sums are the same additions as a ring's AllReduce: an empty mapping
// means the ring, collective_algorithm()'s choice). Throws std::invalid_argument for data of
// another replica count or of unequal sizes.
std::vector<float> all_reduce_sum_reference(const Target& target,
                                            const std::vector<std::vector<float>>& data,
                                            const std::vector<Interval>& mapping,
                                            CollectiveOptions options = {});
// The same for an f16 tensor, its values as f16 bits: each addition rounded to f16, to nearest
// even, as the ring's f16 vertices add.
std::vector<uint16_t> all_reduce_sum_reference_f16(const Target& target,
                                                   const std::vector<std::vector<uint16_t>>& data,
                                                   const std::vector<Interval>& mapping,
                                                   CollectiveOptions options = {});

}  // namespace ipu::sdk

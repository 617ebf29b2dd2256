// Memory: each tile's tensors placed above the firmware (variables from the top, image bytes from
// the bottom; an overflow names the tile and its tensors), and each replica's remote buffers in
// streaming memory.
#include <fmt/format.h>

#include <algorithm>

#include "sdk/compiler/compilation.h"

namespace ipu::sdk {

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
    if (t.is_view()) continue;
    for (const Interval& m : t.mapping) {
      const uint32_t bytes = static_cast<uint32_t>((m.end - m.begin) * dtype_size(t.type));
      const std::string what = fmt::format("tensor '{}' [{}, {})", t.name, m.begin, m.end);
      const uint32_t address = t.initial.empty()
                                   ? layout[m.tile].allocate_top((bytes + 3) & ~3u, what)
                                   : layout[m.tile].allocate((bytes + 3) & ~3u, what);
      exe_.tensors[t.name].push_back({m.tile, m.begin, m.end, address});
    }
  }
  // A view's pieces are its base's, cut to the view's elements and renumbered from its first.
  for (const TensorInfo& v : graph_.tensors()) {
    if (!v.is_view()) continue;
    const size_t begin = v.view_offset, end = begin + v.elements, size = dtype_size(v.type);
    for (const Placement& p : exe_.tensors.at(graph_.tensors()[v.view_of].name))
      if (p.end > begin && p.begin < end) {
        const size_t from = std::max(p.begin, begin);
        exe_.tensors[v.name].push_back(
            {p.tile, from - begin, std::min(p.end, end) - begin,
             p.address + static_cast<uint32_t>((from - p.begin) * size)});
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
  const auto& pieces = exe_.tensors.at(i.name);  // in element order
  const auto p = std::upper_bound(pieces.begin(), pieces.end(), index,
                                  [](size_t x, const Placement& q) { return x < q.end; });
  if (p != pieces.end() && index >= p->begin)
    return {p->tile, p->address + static_cast<uint32_t>((index - p->begin) * dtype_size(i.type))};
  throw GraphError(fmt::format("element {} of tensor '{}' is not mapped", index, i.name));
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

}  // namespace ipu::sdk

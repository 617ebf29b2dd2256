// Memory: each tile's tensors placed above the firmware (variables from the top, image bytes from
// the bottom; an overflow names the tile and its tensors), and each replica's remote buffers in
// streaming memory.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <tuple>

#include "sdk/compiler/compilation.h"

namespace ipu::sdk {

namespace {

// Each scratch tensor's span of use, [first, last] in a walk of the programs in order: every
// program node takes a step; a tensor is used by a node that names it (a copy's, a stream's or
// a collective's tensors, the vertices of an executed compute set). A Repeat's body runs again,
// so what it uses spans the whole Repeat. A view's use is its base tensor's.
using Span = std::pair<uint64_t, uint64_t>;
std::map<unsigned, Span> scratch_spans(const Graph& g, const std::vector<NamedProgram>& programs) {
  const std::vector<TensorInfo>& tensors = g.tensors();
  const auto base = [&](Tensor t) {
    return tensors[t.id].is_view() ? tensors[t.id].view_of : t.id;
  };
  std::vector<std::vector<unsigned>> by_compute_set(g.compute_sets().size());
  for (const VertexInfo& v : g.vertices())
    for (const auto& [field, binding] : v.fields)
      if (const Region* r = std::get_if<Region>(&binding))
        by_compute_set.at(v.compute_set).push_back(base(r->tensor));
  std::map<unsigned, Span> spans;
  uint64_t clock = 0;
  const auto use = [&](unsigned id, uint64_t at) {
    if (id >= tensors.size() || !tensors[id].scratch) return;
    const auto [it, fresh] = spans.try_emplace(id, Span{at, at});
    it->second.first = std::min(it->second.first, at);
    it->second.second = std::max(it->second.second, at);
  };
  std::function<void(const Program&)> walk = [&](const Program& p) {
    const uint64_t at = clock++;
    for (const Tensor t : {p.source, p.destination})
      if (t.id < tensors.size()) use(base(t), at);
    for (const auto& [from, to] : p.pairs) use(base(from.tensor), at), use(base(to.tensor), at);
    if (p.kind == Program::Kind::kExecute && p.compute_set.id < by_compute_set.size())
      for (unsigned id : by_compute_set[p.compute_set.id]) use(id, at);
    for (const Program& step : p.body) walk(step);
    if (p.kind == Program::Kind::kRepeat)
      for (auto& [id, span] : spans)
        if (span.second >= at) span = {std::min(span.first, at), clock};
  };
  for (const NamedProgram& n : programs) walk(n.program);
  return spans;
}

// Scratch pieces of one tile placed in one region: each at the lowest offset that no piece whose
// span meets its own occupies. Returns the region's size; `offsets` gets each piece's offset.
struct ScratchPiece {
  Span span;
  uint32_t bytes;
};
uint32_t pack_scratch(const std::vector<ScratchPiece>& pieces, std::vector<uint32_t>& offsets) {
  std::vector<size_t> order(pieces.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(pieces[a].span.first, pieces[b].bytes) <
           std::tie(pieces[b].span.first, pieces[a].bytes);
  });
  offsets.assign(pieces.size(), 0);
  // Pieces come in order of their first use: a placed piece whose last use is before this one's
  // first meets no later piece either, and leaves the list.
  std::vector<size_t> live;
  uint32_t extent = 0;
  for (size_t i : order) {
    live.erase(
        std::remove_if(live.begin(), live.end(),
                       [&](size_t j) { return pieces[j].span.second < pieces[i].span.first; }),
        live.end());
    std::vector<std::pair<uint32_t, uint32_t>> busy;  // [offset, end) of pieces live with it
    for (size_t j : live) busy.emplace_back(offsets[j], offsets[j] + pieces[j].bytes);
    std::sort(busy.begin(), busy.end());
    uint32_t at = 0;
    for (const auto& [begin, end] : busy) {
      if (at + pieces[i].bytes <= begin) break;
      at = std::max(at, (end + 7) & ~7u);
    }
    offsets[i] = at;
    extent = std::max(extent, at + pieces[i].bytes);
    live.push_back(i);
  }
  return (extent + 7) & ~7u;
}

}  // namespace

void Compilation::allocate_tensors(const std::vector<NamedProgram>& programs) {
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
  const std::map<unsigned, Span> spans = scratch_spans(graph_, programs);
  for (const TensorInfo& t : graph_.tensors()) {
    if (t.is_view() || (t.scratch && t.initial.empty())) continue;
    for (const Interval& m : t.mapping) {
      const uint32_t bytes = static_cast<uint32_t>((m.end - m.begin) * dtype_size(t.type));
      const std::string what = fmt::format("tensor '{}' [{}, {})", t.name, m.begin, m.end);
      const uint32_t address = t.initial.empty()
                                   ? layout[m.tile].allocate_top((bytes + 3) & ~3u, what)
                                   : layout[m.tile].allocate((bytes + 3) & ~3u, what);
      exe_.tensors[t.name].push_back({m.tile, m.begin, m.end, address});
    }
  }
  // Scratch tensors below the others, sharing memory where their spans do not meet. One never
  // used takes none: nothing reads or writes it.
  std::map<unsigned, std::vector<ScratchPiece>> pieces;
  std::map<unsigned, std::vector<std::pair<unsigned, size_t>>> owners;  // (tensor, interval)
  const auto& all = graph_.tensors();
  for (unsigned id = 0; id < all.size(); ++id) {
    const TensorInfo& t = all[id];
    if (t.is_view() || !t.scratch || !t.initial.empty()) continue;
    const auto span = spans.find(id);
    for (size_t k = 0; k < t.mapping.size(); ++k) {
      const Interval& m = t.mapping[k];
      const auto bytes = static_cast<uint32_t>(((m.end - m.begin) * dtype_size(t.type) + 3) & ~3u);
      pieces[m.tile].push_back(
          {span == spans.end() ? Span{0, 0} : span->second, span == spans.end() ? 0u : bytes});
      owners[m.tile].emplace_back(id, k);
    }
  }
  for (auto& [tile, list] : pieces) {
    std::vector<uint32_t> offsets;
    const uint32_t extent = pack_scratch(list, offsets);
    TileMemory& mem = layout[tile];
    // What is live together when the most is (for an overflow's report): a sweep over the
    // pieces' first and last uses finds the step and the bytes.
    std::vector<std::pair<uint64_t, int64_t>> events;  // (step, +bytes at first use / - after last)
    for (const ScratchPiece& q : list)
      if (q.bytes > 0)
        events.push_back({q.span.first, q.bytes}),
            events.push_back({q.span.second + 1, -int64_t{q.bytes}});
    std::sort(events.begin(), events.end());  // at one step, the ends (negative) come first
    int64_t live = 0, peak = 0;
    uint64_t peak_step = 0;
    for (const auto& [step, delta] : events)
      if ((live += delta) > peak) peak = live, peak_step = step;
    std::vector<std::pair<uint32_t, std::string>> at_peak;
    for (size_t i = 0; i < list.size(); ++i)
      if (list[i].bytes > 0 && list[i].span.first <= peak_step && peak_step <= list[i].span.second)
        at_peak.emplace_back(list[i].bytes, all[owners[tile][i].first].name);
    std::sort(at_peak.rbegin(), at_peak.rend());
    std::string largest;
    for (size_t i = 0; i < at_peak.size() && i < 6; ++i)
      largest += fmt::format("{}{} {}", i ? ", " : "", at_peak[i].second, at_peak[i].first);
    const uint32_t base = mem.allocate_top(
        extent, fmt::format("scratch tensors: {} pieces sharing memory by their spans of use; "
                            "{} bytes live together at most ({} pieces; the largest: {})",
                            list.size(), peak, at_peak.size(), largest));
    for (size_t i = 0; i < list.size(); ++i) {
      const auto [id, k] = owners[tile][i];
      const Interval& m = all[id].mapping[k];
      exe_.tensors[all[id].name].push_back({m.tile, m.begin, m.end, base + offsets[i]});
    }
  }
  // Pieces in element order, as address_of and the runtime expect.
  for (const TensorInfo& t : all)
    if (t.scratch && !t.is_view() && t.initial.empty())
      std::sort(exe_.tensors[t.name].begin(), exe_.tensors[t.name].end(),
                [](const Placement& a, const Placement& b) { return a.begin < b.begin; });
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

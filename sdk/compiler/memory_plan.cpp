// Memory: each tile's tensors placed above the firmware (variables from the top, image bytes from
// the bottom; an overflow names the tile and its tensors), and each replica's remote buffers in
// streaming memory.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include "sdk/compiler/compilation.h"

namespace ipu::sdk {

namespace {

// Each scratch tensor's span of use, [first, last] in a walk of the programs in order: every
// program node takes a step; a tensor is used by a node that names it (a copy's, a stream's or
// a collective's tensors, the vertices of an executed compute set). A Repeat's body runs again,
// so what it uses spans the whole Repeat. A view's use is its base tensor's.
//
// A scratch tensor used only inside one function's body is that function's own: its span is
// taken in a walk of the body alone, and it lives only while the body runs (the functions' own
// tensors share one region, since no body runs inside another). Every other tensor a body uses
// is used at each Call of it.
using Span = std::pair<uint64_t, uint64_t>;
struct ScratchSpans {
  std::map<unsigned, Span> outside;                       // by tensor id
  std::map<unsigned, std::pair<unsigned, Span>> in_body;  // tensor id -> (function id, span)
};
ScratchSpans scratch_spans(const Graph& g, const std::vector<NamedProgram>& programs) {
  const std::vector<TensorInfo>& tensors = g.tensors();
  const auto base = [&](Tensor t) {
    return tensors[t.id].is_view() ? tensors[t.id].view_of : t.id;
  };
  std::vector<std::vector<unsigned>> by_compute_set(g.compute_sets().size());
  for (const VertexInfo& v : g.vertices())
    for (const Binding& binding : v.fields)
      if (const Region* r = std::get_if<Region>(&binding))
        by_compute_set.at(v.compute_set).push_back(base(r->tensor));
  // The scratch tensors one node names (not those of the programs in its body).
  const auto named = [&](const Program& p, const std::function<void(unsigned)>& use) {
    const auto scratch = [&](unsigned id) {
      if (id < tensors.size() && tensors[id].scratch) use(id);
    };
    for (const Tensor t : {p.source, p.destination})
      if (t.id < tensors.size()) scratch(base(t));
    for (const auto& [from, to] : p.pairs) scratch(base(from.tensor)), scratch(base(to.tensor));
    if (p.kind == Program::Kind::kExecute && p.compute_set.id < by_compute_set.size())
      for (unsigned id : by_compute_set[p.compute_set.id]) scratch(id);
  };
  // Which tensors each function's body uses, and which the programs use outside any body.
  std::map<unsigned, std::set<unsigned>> body_uses;
  std::set<unsigned> outside_uses, called;
  std::function<void(const Program&, std::set<unsigned>&)> gather = [&](const Program& p,
                                                                        std::set<unsigned>& to) {
    named(p, [&](unsigned id) { to.insert(id); });
    if (p.kind == Program::Kind::kCall) called.insert(p.function.id);
    for (const Program& c : p.body) gather(c, to);
  };
  for (const NamedProgram& n : programs) gather(n.program, outside_uses);
  for (unsigned f : called) gather(*g.function(Function{f}).body, body_uses[f]);
  std::map<unsigned, unsigned> owner;  // a tensor used by exactly one body and nothing else
  std::set<unsigned> shared;
  for (const auto& [f, ids] : body_uses)
    for (unsigned id : ids)
      if (!owner.emplace(id, f).second) shared.insert(id);
  for (unsigned id : outside_uses) shared.insert(id);
  for (unsigned id : shared) owner.erase(id);

  ScratchSpans out;
  // The spans of the tensors `keep` accepts, in one walk of `roots` in order.
  const auto walk = [&](const std::vector<const Program*>& roots, std::map<unsigned, Span>& spans,
                        const std::function<bool(unsigned)>& keep) {
    uint64_t clock = 0;
    const auto use = [&](unsigned id, uint64_t at) {
      if (!keep(id)) return;
      const auto [it, fresh] = spans.try_emplace(id, Span{at, at});
      it->second.first = std::min(it->second.first, at);
      it->second.second = std::max(it->second.second, at);
    };
    std::function<void(const Program&)> step = [&](const Program& p) {
      const uint64_t at = clock++;
      named(p, [&](unsigned id) { use(id, at); });
      if (p.kind == Program::Kind::kCall)
        for (unsigned id : body_uses[p.function.id]) use(id, at);
      for (const Program& c : p.body) step(c);
      if (p.kind == Program::Kind::kRepeat)
        for (auto& [id, span] : spans)
          if (span.second >= at) span = {std::min(span.first, at), clock};
    };
    for (const Program* p : roots) step(*p);
  };
  std::vector<const Program*> roots;
  for (const NamedProgram& n : programs) roots.push_back(&n.program);
  walk(roots, out.outside, [&](unsigned id) { return owner.count(id) == 0; });
  for (unsigned f : called) {
    std::map<unsigned, Span> spans;
    walk({g.function(Function{f}).body.get()}, spans, [&](unsigned id) {
      const auto o = owner.find(id);
      return o != owner.end() && o->second == f;
    });
    for (const auto& [id, span] : spans) out.in_body[id] = {f, span};
  }
  return out;
}

// Scratch pieces of one tile placed in one region, where no two pieces whose spans meet may
// overlap: a dynamic storage allocation problem (NP-hard), solved by the better of two greedy
// placements. By first use: each piece at the lowest offset free of the pieces live with it. By
// size (TensorFlow Lite's arena planner's "greedy by size"): the largest piece first, each
// into the smallest gap that fits among the placed pieces its span meets. First use wins where
// pieces come and go in a stack's order; size wins where large pieces of short lives are
// interleaved with small long-lived ones (BERT-Large's heads: 576 KB by first use, for 396 KB
// live at once). No region can be smaller than the most bytes live at one step (the sweep in
// live_bytes_at_peak), so the second placement is tried only when the first is above it.
// Returns the region's size; `offsets` gets each piece's offset.
struct ScratchPiece {
  Span span;
  uint32_t bytes;
};
bool meet(const Span& a, const Span& b) { return a.first <= b.second && b.first <= a.second; }
uint32_t aligned(uint32_t x) { return (x + 7) & ~7u; }

uint32_t pack_by_first_use(const std::vector<ScratchPiece>& pieces,
                           std::vector<uint32_t>& offsets) {
  std::vector<size_t> order(pieces.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(pieces[a].span.first, pieces[b].bytes) <
           std::tie(pieces[b].span.first, pieces[a].bytes);
  });
  offsets.assign(pieces.size(), 0);
  // Pieces come in order of their first use: a placed piece whose last use is before this one's
  // first meets no later piece either, and leaves the list. The list is kept by offset, so that
  // each piece finds its gap in one walk (BERT-Large's tiles have thousands of pieces: sorting
  // the live ones again for each took a fifth of a bench child's host time, half its compiling). A
  // piece of no bytes is in no one's way.
  struct Placed {
    uint32_t begin, end;
    uint64_t last_use;
  };
  std::vector<Placed> live;
  uint32_t extent = 0;
  for (size_t i : order) {
    const ScratchPiece& p = pieces[i];
    live.erase(std::remove_if(live.begin(), live.end(),
                              [&](const Placed& q) { return q.last_use < p.span.first; }),
               live.end());
    uint32_t at = 0;
    for (const Placed& q : live) {
      if (at + p.bytes <= q.begin) break;
      at = std::max(at, aligned(q.end));
    }
    offsets[i] = at;
    extent = std::max(extent, at + p.bytes);
    if (p.bytes == 0) continue;
    const Placed placed{at, at + p.bytes, p.span.second};
    live.insert(std::upper_bound(live.begin(), live.end(), placed,
                                 [](const Placed& a, const Placed& b) {
                                   return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
                                 }),
                placed);
  }
  return aligned(extent);
}

uint32_t pack_by_size(const std::vector<ScratchPiece>& pieces, std::vector<uint32_t>& offsets) {
  std::vector<size_t> order(pieces.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(pieces[b].bytes, pieces[a].span.first, a) <
           std::tie(pieces[a].bytes, pieces[b].span.first, b);
  });
  offsets.assign(pieces.size(), 0);
  std::vector<std::pair<uint32_t, size_t>> placed;  // (offset, piece), by offset
  uint32_t extent = 0;
  for (size_t i : order) {
    if (pieces[i].bytes == 0) continue;
    uint32_t at = 0, best = 0, best_gap = UINT32_MAX;
    bool found = false;
    for (const auto& [offset, j] : placed) {
      if (!meet(pieces[i].span, pieces[j].span)) continue;
      if (offset >= at && offset - at >= pieces[i].bytes && offset - at < best_gap)
        best = at, best_gap = offset - at, found = true;
      at = std::max(at, aligned(offset + pieces[j].bytes));
    }
    offsets[i] = found ? best : at;
    extent = std::max(extent, offsets[i] + pieces[i].bytes);
    placed.insert(std::upper_bound(placed.begin(), placed.end(), std::pair{offsets[i], i}),
                  {offsets[i], i});
  }
  return aligned(extent);
}

// The most bytes live at one step (no placement takes less) and the first step they are: a
// sweep over the pieces' first and last uses.
struct LivePeak {
  uint32_t bytes = 0;
  uint64_t step = 0;
};
LivePeak live_bytes_at_peak(const std::vector<ScratchPiece>& pieces) {
  std::vector<std::pair<uint64_t, int64_t>> events;  // (step, +bytes at first use / - after last)
  for (const ScratchPiece& q : pieces)
    if (q.bytes > 0)
      events.push_back({q.span.first, q.bytes}),
          events.push_back({q.span.second + 1, -int64_t{q.bytes}});
  std::sort(events.begin(), events.end());  // at one step, the ends (negative) come first
  int64_t live = 0;
  LivePeak peak;
  for (const auto& [step, delta] : events)
    if ((live += delta) > peak.bytes) peak = {static_cast<uint32_t>(live), step};
  return peak;
}

uint32_t pack_scratch(const std::vector<ScratchPiece>& pieces, std::vector<uint32_t>& offsets) {
  const uint32_t first_use = pack_by_first_use(pieces, offsets);
  if (first_use <= aligned(live_bytes_at_peak(pieces).bytes)) return first_use;
  std::vector<uint32_t> by_size;
  const uint32_t size = pack_by_size(pieces, by_size);
  if (size >= first_use) return first_use;
  offsets = std::move(by_size);
  return size;
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
    layout[t].allocate(sizeof(ipu_tile_program), labels_("control program header"));
  }
  const ScratchSpans spans = scratch_spans(graph_, programs);
  for (const TensorInfo& t : graph_.tensors()) {
    if (t.is_view() || (t.scratch && t.initial.empty())) continue;
    const uint32_t label = labels_(fmt::format("tensor '{}'", t.name));
    for (const Interval& m : t.mapping) {
      const uint32_t bytes =
          (static_cast<uint32_t>((m.end - m.begin) * dtype_size(t.type)) + 3) & ~3u;
      const uint32_t address = t.initial.empty()
                                   ? layout[m.tile].allocate_top(bytes, label, m.begin, m.end)
                                   : layout[m.tile].allocate(bytes, label, m.begin, m.end);
      exe_.tensors[t.name].push_back({m.tile, m.begin, m.end, address});
    }
  }
  // Scratch tensors below the others, sharing memory where their spans do not meet; the
  // functions' own below those, each function's packed from the region's start. One never used
  // takes none: nothing reads or writes it.
  struct TilePieces {
    std::vector<ScratchPiece> list;
    std::vector<std::pair<unsigned, size_t>> owners;  // (tensor, interval)
  };
  std::map<unsigned, TilePieces> outside;
  std::map<unsigned, std::map<unsigned, TilePieces>> in_body;  // tile -> function -> pieces
  const auto& all = graph_.tensors();
  for (unsigned id = 0; id < all.size(); ++id) {
    const TensorInfo& t = all[id];
    if (t.is_view() || !t.scratch || !t.initial.empty()) continue;
    const auto local = spans.in_body.find(id);
    const auto span = spans.outside.find(id);
    for (size_t k = 0; k < t.mapping.size(); ++k) {
      const Interval& m = t.mapping[k];
      const auto bytes = static_cast<uint32_t>(((m.end - m.begin) * dtype_size(t.type) + 3) & ~3u);
      TilePieces& tp =
          local != spans.in_body.end() ? in_body[m.tile][local->second.first] : outside[m.tile];
      if (local != spans.in_body.end())
        tp.list.push_back({local->second.second, bytes});
      else
        tp.list.push_back({span == spans.outside.end() ? Span{0, 0} : span->second,
                           span == spans.outside.end() ? 0u : bytes});
      tp.owners.emplace_back(id, k);
    }
  }
  const auto place_pieces = [&](const TilePieces& tp, uint32_t base,
                                const std::vector<uint32_t>& offsets) {
    for (size_t i = 0; i < tp.list.size(); ++i) {
      const auto [id, k] = tp.owners[i];
      const Interval& m = all[id].mapping[k];
      exe_.tensors[all[id].name].push_back({m.tile, m.begin, m.end, base + offsets[i]});
    }
  };
  // What is live together when the most is (for an overflow's report): the step, the bytes and
  // the largest pieces then.
  const auto live_at_peak = [&all](const TilePieces& tp) {
    const std::vector<ScratchPiece>& list = tp.list;
    const LivePeak at = live_bytes_at_peak(list);
    const uint32_t peak = at.bytes;
    const uint64_t peak_step = at.step;
    std::vector<std::pair<uint32_t, std::string>> at_peak;
    for (size_t i = 0; i < list.size(); ++i)
      if (list[i].bytes > 0 && list[i].span.first <= peak_step && peak_step <= list[i].span.second)
        at_peak.emplace_back(list[i].bytes, all[tp.owners[i].first].name);
    std::sort(at_peak.rbegin(), at_peak.rend());
    std::string largest;
    for (size_t i = 0; i < at_peak.size() && i < 6; ++i)
      largest += fmt::format("{}{} {}", i ? ", " : "", at_peak[i].second, at_peak[i].first);
    return fmt::format("{} bytes live together at most ({} pieces; the largest: {})", peak,
                       at_peak.size(), largest);
  };
  for (auto& [tile, tp] : outside) {
    std::vector<uint32_t> offsets;
    const uint32_t extent = pack_scratch(tp.list, offsets);
    const uint32_t base = layout[tile].allocate_top(
        extent,
        labels_(fmt::format("scratch tensors: {} pieces sharing memory by their spans of use; {}",
                            tp.list.size(), live_at_peak(tp))));
    place_pieces(tp, base, offsets);
  }
  for (auto& [tile, functions] : in_body) {
    std::map<unsigned, std::vector<uint32_t>> offsets;
    uint32_t extent = 0;
    const TilePieces* largest = nullptr;
    std::string name;
    for (auto& [f, tp] : functions) {
      const uint32_t e = pack_scratch(tp.list, offsets[f]);
      if (e > extent) extent = e, largest = &tp, name = graph_.function(Function{f}).name;
    }
    const uint32_t base = layout[tile].allocate_top(
        extent, labels_(fmt::format(
                    "functions' scratch tensors: {} functions' own, one body's at a time (the "
                    "largest: '{}', {})",
                    functions.size(), name,
                    largest != nullptr ? live_at_peak(*largest) : std::string("none"))));
    for (auto& [f, tp] : functions) place_pieces(tp, base, offsets[f]);
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

// Collectives: across replicas as ring steps over the IPU-Links (reduce-scatter, all-gather,
// all-reduce; one way or both), and across the tiles of each replica, with their reduction
// codelets.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <tuple>

#include "iss/fpu.h"
#include "sdk/compiler/compilation.h"
#include "sdk/graph/sdk_paths.h"

namespace ipu::sdk {

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

bool has_collective(const Graph& g, const Program& p) {
  if (p.kind == Program::Kind::kCall) return has_collective(g, *g.function(p.function).body);
  return is_collective(p) || std::any_of(p.body.begin(), p.body.end(),
                                         [&](const Program& c) { return has_collective(g, c); });
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
  if (p.kind == Program::Kind::kCall) add_ring_buffers(*graph_.function(p.function).body);
  for (const Program& c : p.body) add_ring_buffers(c);
}

namespace {

// The rings' geometry, shared by the compiled collectives and their host reference.
// One chip per replica: up the even column of the ladder and down the odd one, so that every
// step of the ring crosses one IPU-Link bundle. Replicas of several chips go in order.
std::vector<unsigned> ring_order_of(unsigned replicas, unsigned replica_chips) {
  std::vector<unsigned> order;
  if (replica_chips == 1 && replicas > 2) {
    for (unsigned r = 0; r < replicas; r += 2) order.push_back(r);
    for (unsigned r = replicas; r-- > 0;)
      if (r % 2 == 1) order.push_back(r);
  } else {
    for (unsigned r = 0; r < replicas; ++r) order.push_back(r);
  }
  return order;
}

// Elements [first, second) of chunk `chunk` of `elements` split into `replicas` in whole words
// (`granule` elements each: 2 for f16).
std::pair<size_t, size_t> chunk_of(size_t elements, unsigned chunk, size_t granule,
                                   unsigned replicas) {
  const size_t words = elements / granule;
  return {words * chunk / replicas * granule, words * (chunk + 1) / replicas * granule};
}

// A tile piece of this many words or more makes an all-reduce's chunks a share of every piece.
constexpr size_t kSpreadWords = 64;

// Whether an all-reduce's chunks are a share of every tile piece rather than a contiguous range
// of the tensor. A contiguous chunk lies on 1/R of the tiles, whose reduction adds their whole
// pieces while the others wait: over 16 chips at 4 MiB, 712 elements on each of 92 tiles, 5,200
// cycles a step, where a sixteenth of every piece takes about 460. A share of every piece makes
// every tile send and receive at each step, one more action (an action gap, 120 cycles) a phase:
// that pays from pieces of about 64 words. Pieces must start and end on whole words.
bool spread_chunks(const std::vector<Interval>& mapping, size_t granule, unsigned replicas) {
  if (replicas < 2 || mapping.empty()) return false;
  size_t largest = 0;
  for (const Interval& i : mapping) {
    if (i.begin % granule != 0 || i.end % granule != 0) return false;
    largest = std::max(largest, (i.end - i.begin) / granule);
  }
  return largest >= kSpreadWords;
}

// The elements of chunk `chunk` (of `replicas`) that part `part` of `parts` carries (all of it,
// or its first or second half in each range): one range of the tensor, or (`spread`) the
// chunk's share of each interval of `mapping`.
ElementRanges chunk_ranges(size_t elements, const std::vector<Interval>& mapping, bool spread,
                           unsigned chunk, size_t granule, unsigned replicas, size_t parts,
                           size_t part) {
  ElementRanges out;
  const auto add = [&](size_t begin, size_t end) {
    if (parts == 2) {
      const size_t middle = begin + (end - begin) / granule / 2 * granule;
      (part == 0 ? end : begin) = middle;
    }
    if (begin < end) out.emplace_back(begin, end);
  };
  if (!spread) {
    const auto [begin, end] = chunk_of(elements, chunk, granule, replicas);
    add(begin, end);
    return out;
  }
  for (const Interval& i : mapping) {
    const auto [begin, end] = chunk_of(i.end - i.begin, chunk, granule, replicas);
    add(i.begin + begin, i.begin + end);
  }
  return out;
}

// Two replicas' AllReduce is one direct step up to this many bytes a replica: beyond it, adding
// the whole tensor on both replicas (where the ring adds half on each) costs more than the
// step's fixed costs it saves (measured: 16,948 cycles against the ring's 17,279 at 1 MiB,
// 32,810 against 32,479 at 2 MiB).
constexpr size_t kDirectBytes = size_t{1} << 20;
// Halving-doubling's data crosses the column links as much as the one-way ring's, in log2 R
// steps where the ring takes R - 1: it wins up to this many bytes a replica, and the
// bidirectional ring, whose data crosses both directions at once, beyond (measured, 16 chips:
// 92,485 cycles against 93,534 at 1 MiB, 52,804 against 69,803 at 512 KiB; 4 chips: 41,720
// against 42,882 at 1 MiB, 153,950 against 143,921 at 4 MiB).
constexpr size_t kHalvingDoublingBytes = size_t{1} << 20;

// Halving-doubling's chunk c (replica c's at the end of the halving) lies at chunk position
// reverse(c), its log2 R bits reversed: the chunks a step sends, those whose low bits match
// the partner's, then lie side by side.
unsigned reversed_bits(unsigned c, unsigned bits) {
  unsigned r = 0;
  for (unsigned b = 0; b < bits; ++b) r |= ((c >> b) & 1u) << (bits - 1 - b);
  return r;
}

// The ranges of `ranges` sorted, neighbours joined.
ElementRanges joined(ElementRanges ranges) {
  std::sort(ranges.begin(), ranges.end());
  ElementRanges out;
  for (const auto& r : ranges)
    if (!out.empty() && out.back().second == r.first)
      out.back().second = r.second;
    else
      out.push_back(r);
  return out;
}

// Halving-doubling's chunks whose low `bits` bits equal those of `replica`: the elements that
// replica holds after `bits` halving steps (or before the doubling step that leaves it
// `bits - 1`), in ranges as chunk_ranges cuts them.
ElementRanges halving_share(size_t elements, const std::vector<Interval>& mapping, bool spread,
                            size_t granule, unsigned replicas, unsigned replica, unsigned bits) {
  unsigned log2 = 0;
  while ((1u << log2) < replicas) ++log2;
  const unsigned mask = (1u << bits) - 1;
  ElementRanges out;
  for (unsigned c = 0; c < replicas; ++c)
    if ((c & mask) == (replica & mask))
      for (const auto& r :
           chunk_ranges(elements, mapping, spread, reversed_bits(c, log2), granule, replicas, 1, 0))
        out.push_back(r);
  return joined(std::move(out));
}

}  // namespace

CollectiveAlgorithm collective_algorithm(CollectiveOptions options, unsigned replicas,
                                         size_t bytes) {
  if (options.algorithm != CollectiveAlgorithm::kAuto) return options.algorithm;
  return replicas > 2 && bytes / replicas >= 16 * 1024 ? CollectiveAlgorithm::kBidirectionalRing
                                                       : CollectiveAlgorithm::kRing;
}

CollectiveAlgorithm all_reduce_algorithm(CollectiveOptions options, unsigned replicas,
                                         unsigned replica_chips, size_t bytes) {
  if (options.algorithm != CollectiveAlgorithm::kAuto) return options.algorithm;
  if (replicas == 2 && bytes <= kDirectBytes) return CollectiveAlgorithm::kDirect;
  if (replicas > 2 && replica_chips == 1 && (replicas & (replicas - 1)) == 0 &&
      bytes <= kHalvingDoublingBytes)
    return CollectiveAlgorithm::kHalvingDoubling;
  return collective_algorithm(options, replicas, bytes);
}

std::vector<unsigned> Compilation::ring_order() const {
  return ring_order_of(replicas_, graph_.target().replica_chips());
}

std::vector<Compilation::RingPart> Compilation::ring_parts(CollectiveOptions options) const {
  if (options.algorithm == CollectiveAlgorithm::kAuto)  // its size decides: the caller's
    throw std::logic_error("ring_parts: the collective's algorithm was not chosen by size");
  std::vector<unsigned> order = ring_order();
  if (options.algorithm == CollectiveAlgorithm::kRing) return {{order, 0}};
  std::vector<unsigned> reverse(order.rbegin(), order.rend());
  return {{order, 0}, {reverse, 1}};
}

ElementRanges Compilation::ring_chunk(Tensor t, bool spread, unsigned chunk, const RingPart& part,
                                      size_t parts) const {
  const TensorInfo& i = info(t);
  return chunk_ranges(i.elements, i.mapping, spread, chunk, 4 / dtype_size(i.type), replicas_,
                      parts, part.begin_fraction);
}

namespace {

// all_reduce_sum_reference's additions for elements of type T (f32 values or f16 bits), `add`
// the tiles' addition of two, `granule` elements a 32-bit word.
template <typename T, typename Add>
std::vector<T> reduce_reference(const Target& target, const std::vector<std::vector<T>>& data,
                                const std::vector<Interval>& mapping, CollectiveOptions options,
                                size_t granule, Add add) {
  const char* who = granule == 1 ? "all_reduce_sum_reference" : "all_reduce_sum_reference_f16";
  const unsigned R = target.replicas;
  if (data.size() != R)
    throw std::invalid_argument(
        fmt::format("{}: {} replicas' data for a target of {} replicas", who, data.size(), R));
  const size_t n = data[0].size();
  for (unsigned r = 1; r < R; ++r)
    if (data[r].size() != n)
      throw std::invalid_argument(
          fmt::format("{}: replica {} has {} elements, replica 0 {}", who, r, data[r].size(), n));
  if (R == 1) return data[0];
  // An empty mapping stands for a ReduceScatter's contiguous chunks: the ring, by size.
  const size_t bytes = n * sizeof(T);
  const CollectiveAlgorithm algorithm =
      mapping.empty() ? collective_algorithm(options, R, bytes)
                      : all_reduce_algorithm(options, R, target.replica_chips(), bytes);
  std::vector<T> out(n);
  if (algorithm == CollectiveAlgorithm::kDirect) {
    if (R != 2)
      throw std::invalid_argument(
          fmt::format("{}: the direct AllReduce takes 2 replicas, not {}", who, R));
    for (size_t i = 0; i < n; ++i) out[i] = add(data[0][i], data[1][i]);
    return out;
  }
  if (algorithm == CollectiveAlgorithm::kHalvingDoubling) {
    unsigned K = 0;
    while ((1u << K) < R) ++K;
    if ((1u << K) != R)
      throw std::invalid_argument(
          fmt::format("{}: halving-doubling takes a power of two of replicas, not {}", who, R));
    const bool spread = spread_chunks(mapping, granule, R);
    // f(p, k + 1) = f(p, k) + f(p ^ 2^k, k), chunk c's sum f(c, K).
    const auto f = [&](const auto& self, unsigned p, unsigned k, size_t i) -> T {
      if (k == 0) return data[p][i];
      return add(self(self, p, k - 1, i), self(self, p ^ (1u << (k - 1)), k - 1, i));
    };
    for (unsigned c = 0; c < R; ++c)
      for (const auto& [lo, hi] : halving_share(n, mapping, spread, granule, R, c, K))
        for (size_t i = lo; i < hi; ++i) out[i] = f(f, c, K, i);
    return out;
  }
  std::vector<unsigned> order = ring_order_of(R, target.replica_chips());
  std::vector<std::vector<unsigned>> rings = {order};
  if (algorithm == CollectiveAlgorithm::kBidirectionalRing)
    rings.emplace_back(order.rbegin(), order.rend());
  // Chunk order[j] starts with the data of the replica after it on the ring, adds the next ones
  // in turn, and its own last (reduce_scatter above).
  const bool spread = spread_chunks(mapping, granule, R);
  for (size_t way = 0; way < rings.size(); ++way) {
    const std::vector<unsigned>& ring = rings[way];
    for (unsigned j = 0; j < R; ++j)
      for (const auto& [lo, hi] :
           chunk_ranges(n, mapping, spread, ring[j], granule, R, rings.size(), way))
        for (size_t i = lo; i < hi; ++i) {
          T sum = data[ring[(j + 1) % R]][i];
          for (unsigned hop = 2; hop < R; ++hop) sum = add(sum, data[ring[(j + hop) % R]][i]);
          out[i] = add(sum, data[ring[j]][i]);
        }
  }
  return out;
}

}  // namespace

std::vector<float> all_reduce_sum_reference(const Target& target,
                                            const std::vector<std::vector<float>>& data,
                                            const std::vector<Interval>& mapping,
                                            CollectiveOptions options) {
  return reduce_reference(target, data, mapping, options, 1,
                          [](float a, float b) { return a + b; });
}

std::vector<uint16_t> all_reduce_sum_reference_f16(const Target& target,
                                                   const std::vector<std::vector<uint16_t>>& data,
                                                   const std::vector<Interval>& mapping,
                                                   CollectiveOptions options) {
  // The ring's f16 addition (ipu.f16v4add): one rounding to nearest even.
  return reduce_reference(target, data, mapping, options, 2, [](uint16_t a, uint16_t b) {
    uint32_t flags = 0;
    return static_cast<uint16_t>(iss::fpu::add16(a, b, iss::fpu::kRne, flags, 0));
  });
}

// Ring reduce-scatter into `acc`: at step s the replica at ring position p sends the chunk of
// position p - s - 1 (from `data` at the first step, from `acc` after) to position p + 1, which
// adds its own `data` to it; after replicas - 1 steps replica r's acc holds chunk r reduced.
// The additions are acc + data in ring order: chunk r's sum starts with the data of the
// position after r's and ends with r's own (docs/sdk.md).
// 1 / replicas as the mean's scale field: f32 bits, or f16 bits for f16 data.
uint32_t Compilation::mean_scale(DType type) const {
  const float inverse = 1.0f / static_cast<float>(replicas_);
  uint32_t k = 0, flags = 0;
  std::memcpy(&k, &inverse, 4);
  if (type == DType::kF16) k = iss::fpu::f32_to_f16(k, iss::fpu::kRne, flags, 0);
  return k;
}

void Compilation::reduction_vertices(unsigned cs, Tensor data, Tensor acc, CollectiveOp op,
                                     unsigned replica, size_t lo, size_t hi, bool into,
                                     std::optional<uint32_t> k) {
  const TensorInfo& d = info(data);
  const std::string codelet =
      k ? fmt::format("ipu_ring_scale_{}", dtype_name(d.type))
        : fmt::format("ipu_ring_{}_{}", op == CollectiveOp::kMax ? "max" : "sum",
                      dtype_name(d.type));
  const std::vector<Placement>& pieces = exe_.tensors.at(d.name);  // in element order
  // From the first piece that ends after lo: a share of every piece makes as many ranges as
  // pieces, and each range would otherwise scan them all.
  auto it = std::upper_bound(pieces.begin(), pieces.end(), lo,
                             [](size_t x, const Placement& q) { return x < q.end; });
  for (; it != pieces.end() && it->begin < hi; ++it) {
    const Placement& piece = *it;
    const size_t b = std::max(piece.begin, lo), e = std::min(piece.end, hi);
    if (b >= e) continue;
    const uint32_t a = address_of(acc, b).second, x = address_of(data, b).second;
    const uint32_t n = static_cast<uint32_t>(e - b);
    if (k)
      add_vertex(machine_tile(replica, piece.tile), codelet, {into ? x : a, n, *k}, 6, cs);
    else
      add_vertex(machine_tile(replica, piece.tile), codelet, {into ? x : a, into ? a : x, n}, 6,
                 cs);
  }
}

// Ring reduce-scatter into `acc`: at step s the replica at ring position p sends the chunk of
// position p - s - 1 (from `data` at the first step, from `acc` after) to position p + 1, which
// adds its own `data` to it; after replicas - 1 steps replica r's acc holds chunk r reduced.
// The additions are acc + data in ring order: chunk r's sum starts with the data of the
// position after r's and ends with r's own (docs/sdk.md).
void Compilation::reduce_scatter(Tensor data, Tensor acc, CollectiveOp op,
                                 CollectiveOptions options, bool into_data, bool spread) {
  const TensorInfo& d = info(data);
  options.algorithm = collective_algorithm(options, replicas_, d.elements * dtype_size(d.type));
  const auto parts = ring_parts(options);
  const unsigned R = replicas_;
  for (unsigned s = 0; s + 1 < R; ++s) {
    Transfers transfers;
    std::vector<std::tuple<unsigned, size_t, size_t>> adds;  // (replica, begin, end)
    for (const RingPart& part : parts)
      for (unsigned p = 0; p < R; ++p) {
        const unsigned from = part.order[p], to = part.order[(p + 1) % R];
        const unsigned chunk = part.order[(p + 2 * R - s - 1) % R];
        for (const auto& [lo, hi] : ring_chunk(data, spread, chunk, part, parts.size())) {
          add_transfers(transfers, s == 0 ? data : acc, lo, from, acc, lo, to, hi - lo);
          adds.emplace_back(to, lo, hi);
        }
      }
    exchange(transfers, fmt::format("reduce-scatter step {} of {}", s + 1, R - 1));
    const unsigned cs = new_compute_set(fmt::format("reduce-scatter {} step {}", d.name, s + 1));
    // The last step may write its sums into data: data + acc has the bits of acc + data.
    const bool last_into_data = into_data && s + 2 == R;
    for (const auto& [replica, lo, hi] : adds)
      reduction_vertices(cs, data, acc, op, replica, lo, hi, last_into_data, std::nullopt);
    execute(cs);
  }
  if (op == CollectiveOp::kMean) {
    const unsigned cs = new_compute_set(fmt::format("reduce-scatter {} mean", d.name));
    for (unsigned r = 0; r < R; ++r)
      for (const auto& [lo, hi] : ring_chunk(data, spread, r, parts[0], 1))
        reduction_vertices(cs, data, acc, op, r, lo, hi, into_data, mean_scale(d.type));
    execute(cs);
  }
}

// Two replicas: each sends its whole tensor into the other's accumulator, then adds it to its
// own, data + acc: x0 + x1 on replica 0, x1 + x0 on replica 1, the same bits (IEEE addition
// commutes), and those of the ring's sums. The ring's two steps carry as much data over the
// rung; this saves a step's sync, latency and fixed costs.
void Compilation::direct_all_reduce(Tensor data, Tensor acc, CollectiveOp op) {
  const TensorInfo& d = info(data);
  Transfers up, down, transfers;  // replica 0 to 1, 1 to 0, both
  add_transfers(up, data, 0, 0, acc, 0, 1, d.elements);
  add_transfers(down, data, 0, 1, acc, 0, 0, d.elements);
  // Every tile sends and receives, and its second action comes a gap after its first. Taken in
  // turns, one way from the first tile and the other from the last, each way's first sends go
  // a gap after the sync; their tiles receive later, when the other way's words come.
  for (size_t i = 0; i < std::max(up.list.size(), down.list.size()); ++i) {
    if (i < up.list.size()) transfers.list.push_back(up.list[i]);
    if (i < down.list.size()) transfers.list.push_back(down.list[down.list.size() - 1 - i]);
  }
  exchange(transfers, "direct");
  const unsigned cs = new_compute_set(fmt::format("all-reduce {} direct", d.name));
  for (unsigned r = 0; r < 2; ++r)
    reduction_vertices(cs, data, acc, op, r, 0, d.elements, true, std::nullopt);
  execute(cs);
  if (op != CollectiveOp::kMean) return;
  const unsigned scale = new_compute_set(fmt::format("all-reduce {} mean", d.name));
  for (unsigned r = 0; r < 2; ++r)
    reduction_vertices(scale, data, acc, op, r, 0, d.elements, true, mean_scale(d.type));
  execute(scale);
}

// Recursive halving, then doubling, over R = 2^K replicas. Halving step k pairs replica p with
// p ^ 2^k: p sends its partial sums of the chunks whose low k + 1 bits are its partner's into
// the partner's accumulator, and adds the partner's of its own into its data, data + acc. After
// K steps replica c holds chunk c reduced; the doubling steps, k = K - 1 down to 0, send what
// each holds to its partner's data. One chip a replica, p ^ 1 is the rung's other chip and
// p ^ 2^k for k > 0 the chip 2^(k-1) rungs along the column: the largest step crosses the
// rungs, the fastest bundles. Chunk c's sum is f(c, K), f(p, 0) replica p's data and
// f(p, k + 1) = f(p, k) + f(p ^ 2^k, k) (all_reduce_sum_reference).
void Compilation::halving_doubling_all_reduce(Tensor data, Tensor acc, CollectiveOp op,
                                              bool spread) {
  const TensorInfo& d = info(data);
  const unsigned R = replicas_;
  unsigned K = 0;
  while ((1u << K) < R) ++K;
  const size_t granule = 4 / dtype_size(d.type);
  const auto share = [&](unsigned replica, unsigned bits) {
    return halving_share(d.elements, d.mapping, spread, granule, R, replica, bits);
  };
  for (unsigned k = 0; k < K; ++k) {
    Transfers transfers;
    for (unsigned p = 0; p < R; ++p)
      for (const auto& [lo, hi] : share(p ^ (1u << k), k + 1))
        add_transfers(transfers, data, lo, p, acc, lo, p ^ (1u << k), hi - lo);
    exchange(transfers, fmt::format("halving step {} of {}", k + 1, K));
    const unsigned cs = new_compute_set(fmt::format("all-reduce {} halving {}", d.name, k + 1));
    for (unsigned p = 0; p < R; ++p)
      for (const auto& [lo, hi] : share(p, k + 1))
        reduction_vertices(cs, data, acc, op, p, lo, hi, true, std::nullopt);
    execute(cs);
  }
  if (op == CollectiveOp::kMean) {
    const unsigned cs = new_compute_set(fmt::format("all-reduce {} mean", d.name));
    for (unsigned p = 0; p < R; ++p)
      for (const auto& [lo, hi] : share(p, K))
        reduction_vertices(cs, data, acc, op, p, lo, hi, true, mean_scale(d.type));
    execute(cs);
  }
  for (unsigned k = K; k-- > 0;) {
    Transfers transfers;
    for (unsigned p = 0; p < R; ++p)
      for (const auto& [lo, hi] : share(p, k + 1))
        add_transfers(transfers, data, lo, p, data, lo, p ^ (1u << k), hi - lo);
    exchange(transfers, fmt::format("doubling step {} of {}", K - k, K));
  }
}

void Compilation::all_reduce(const Program& p) {
  if (replicas_ == 1) return;  // the reduction over one replica is the data itself
  const Tensor data = p.source, acc{ring_buffer_.at(p.source.id)};
  const TensorInfo& d = info(data);
  const CollectiveAlgorithm algorithm = all_reduce_algorithm(
      p.collective, replicas_, graph_.target().replica_chips(), d.elements * dtype_size(d.type));
  const bool spread = spread_chunks(d.mapping, 4 / dtype_size(d.type), replicas_);
  if (algorithm == CollectiveAlgorithm::kDirect) return direct_all_reduce(data, acc, p.op);
  if (algorithm == CollectiveAlgorithm::kHalvingDoubling)
    return halving_doubling_all_reduce(data, acc, p.op, spread);
  const CollectiveOptions options{algorithm};
  reduce_scatter(data, acc, p.op, options, true, spread);
  // All-gather: at step s position p sends the chunk of position p - s (its own at the first
  // step) to position p + 1's data.
  const auto parts = ring_parts(options);
  const unsigned R = replicas_;
  for (unsigned s = 0; s + 1 < R; ++s) {
    Transfers transfers;
    for (const RingPart& part : parts)
      for (unsigned q = 0; q < R; ++q) {
        const unsigned from = part.order[q], to = part.order[(q + 1) % R];
        const unsigned chunk = part.order[(q + R - s) % R];
        for (const auto& [lo, hi] : ring_chunk(data, spread, chunk, part, parts.size()))
          add_transfers(transfers, data, lo, from, data, lo, to, hi - lo);
      }
    exchange(transfers, fmt::format("all-gather step {} of {}", s + 1, R - 1));
  }
}

void Compilation::reduce_scatter(const Program& p) {
  const size_t n = info(p.destination).elements;
  Tensor reduced = p.source;
  if (replicas_ > 1) {
    reduced = Tensor{ring_buffer_.at(p.source.id)};
    reduce_scatter(p.source, reduced, p.op, p.collective, false, false);  // chunk r contiguous
  }
  Transfers transfers;
  for (unsigned r = 0; r < replicas_; ++r)
    add_transfers(transfers, reduced, r * n, r, p.destination, 0, r, n);
  exchange(transfers, replicas_ > 1 ? "to the destination" : "");
}

void Compilation::all_gather(const Program& p) {
  const size_t n = info(p.source).elements;
  const unsigned R = replicas_;
  const auto parts =
      ring_parts({collective_algorithm(p.collective, R, n * R * dtype_size(info(p.source).type))});
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
    exchange(transfers, fmt::format("step {} of {}", s + 1, R - 1));
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
  exchange(transfers, "gather the rows");
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
  exchange(transfers, "share the result");
}

}  // namespace ipu::sdk

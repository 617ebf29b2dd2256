// Helpers the operator library's operations share (not part of the installed API): copies
// listed so that the compiler's greedy exchange scheduler keeps tiles busy, and tensors made of
// one chunk a tile.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sdk/graph/graph.h"

namespace ipu::sdk::ops {

using CopyPairs = std::vector<std::pair<Region, Region>>;
// The lists' copies in rounds, list i starting at its element i (mod its length): every list's
// first, then every list's second, and so on. The exchange scheduler places transfers greedily
// in order: a list at a time would have tiles wait on chains of others' transfers (a 256 x 256
// product's last exchange took 551,046 cycles so), and lists that read their rows from the same
// tiles in the same order would all wait on one tile a round (86,615 cycles for its gather).
// Without `rotate`, every list starts at its first element: lists whose copies are multicasts
// to one another's tiles (each tile's list in the same order) keep those receivers in step.
inline CopyPairs interleave(const std::vector<CopyPairs>& lists, bool rotate = true) {
  CopyPairs out;
  size_t longest = 0, total = 0;
  for (const CopyPairs& l : lists) longest = std::max(longest, l.size()), total += l.size();
  out.reserve(total);  // a graph keeps the list: no slack from growing it
  for (size_t round = 0; round < longest; ++round)
    for (size_t i = 0; i < lists.size(); ++i)
      if (round < lists[i].size())
        out.push_back(lists[i][rotate ? (round + i) % lists[i].size() : round]);
  return out;
}

// The copies in rounds, each in the first round in which its source tile sends nothing else and
// its destination tile receives nothing else (first fit, as a greedy edge colouring). interleave's
// rounds keep each source to one send a round, but several sources may then send to one tile,
// which takes them one at a time while the rest wait: the gather of 16 heads' 512 x 512 x 64
// weight gradient, 158 actions on its busiest tile (19k cycles at 120 apart), took 39.6k cycles
// interleaved by source and 24.9k in these rounds.
inline CopyPairs in_rounds(const Graph& g, const CopyPairs& pairs) {
  std::map<unsigned, std::vector<char>> sends, receives;  // per tile: whether round r is taken
  std::vector<std::vector<size_t>> rounds;
  for (size_t i = 0; i < pairs.size(); ++i) {
    std::vector<char>& s = sends[g.tile_of(pairs[i].first.tensor, pairs[i].first.begin)];
    std::vector<char>& d = receives[g.tile_of(pairs[i].second.tensor, pairs[i].second.begin)];
    size_t r = 0;
    while ((r < s.size() && s[r]) || (r < d.size() && d[r])) ++r;
    for (std::vector<char>* taken : {&s, &d}) {
      if (taken->size() <= r) taken->resize(r + 1, 0);
      (*taken)[r] = 1;
    }
    if (rounds.size() <= r) rounds.resize(r + 1);
    rounds[r].push_back(i);
  }
  CopyPairs out;
  out.reserve(pairs.size());
  for (const std::vector<size_t>& round : rounds)
    for (size_t i : round) out.push_back(pairs[i]);
  return out;
}

// The copy of all of `from` into `to` (same elements, other mappings), as pairs of the runs
// where both mappings stay on one tile each, listed a receiving tile at a time and interleaved
// (a whole-tensor Copy lists them in element order: relaying out a product's [3072 x 512]
// result, whose rows lie in pieces over many tiles, took 23 million cycles so).
inline CopyPairs relayout(const Graph& g, Tensor from, Tensor to) {
  const std::vector<Interval> a = g.tensor(from).mapping, b = g.tensor(to).mapping;
  std::map<unsigned, CopyPairs> by_receiver;
  for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    const size_t lo = std::max(a[i].begin, b[j].begin), hi = std::min(a[i].end, b[j].end);
    if (lo < hi) by_receiver[b[j].tile].emplace_back(Region{from, lo, hi}, Region{to, lo, hi});
    (a[i].end < b[j].end) ? ++i : ++j;
  }
  std::vector<CopyPairs> lists;
  for (auto& [tile, list] : by_receiver) lists.push_back(std::move(list));
  return interleave(lists);
}

// A tensor made of one chunk per listed tile, each `sizes[i]` elements: the chunks' offsets.
struct Chunks {
  Tensor tensor;
  std::vector<size_t> offsets;
};
inline Chunks add_chunked(Graph& g, DType type,
                          const std::vector<std::pair<unsigned, size_t>>& chunks,
                          const std::string& name) {
  Chunks out;
  size_t total = 0;
  std::vector<Interval> mapping;
  for (const auto& [tile, size] : chunks) {
    out.offsets.push_back(total);
    if (size > 0) mapping.push_back({total, total + size, tile});
    total += size;
  }
  out.tensor = g.add_variable(type, {total}, name);
  // Intervals must be sorted and disjoint: they are, by construction, in offset order.
  g.set_tile_mapping(out.tensor, mapping);
  return out;
}

}  // namespace ipu::sdk::ops

// Graph-building helpers shared by the SDK tests.
#pragma once

#include "sdk/graph/graph.h"

namespace ipu::test {

// One add_f32 vertex per tile piece of `out = a + b` (a, b and out mapped alike).
inline void add_vertices(sdk::Graph& g, sdk::ComputeSet cs, sdk::Tensor a, sdk::Tensor b,
                         sdk::Tensor out) {
  for (const sdk::Interval& m : g.tensor(out).mapping)
    g.add_vertex(cs, "add_f32", m.tile,
                 {{"a", g.region(a, m.begin, m.end)},
                  {"b", g.region(b, m.begin, m.end)},
                  {"out", g.region(out, m.begin, m.end)},
                  {"n", static_cast<uint32_t>(m.end - m.begin)}});
}

}  // namespace ipu::test

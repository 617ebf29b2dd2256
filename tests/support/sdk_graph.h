// Graph-building helpers shared by the SDK tests.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sdk/compiler/compiler.h"
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

// The manifest's steps of one kind ("exchange_external", "host_sync", ...), parsed.
inline std::vector<nlohmann::json> manifest_steps(const sdk::Executable& exe,
                                                  const std::string& kind) {
  std::vector<nlohmann::json> out;
  const nlohmann::json manifest = nlohmann::json::parse(exe.manifest);
  for (const nlohmann::json& step : manifest.at("steps"))
    if (step.at("step") == kind) out.push_back(step);
  return out;
}

}  // namespace ipu::test

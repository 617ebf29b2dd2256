// Where an SDK program's cycles went, as PopVision's execution view shows it: per compute set,
// per codelet and per vertex, from the worker runs the tiles' cores profiled
// (iss/worker_profile.h). A run is a vertex's by the place of the state it was started with
// (Executable::vertex_sites); each batch of runs the supervisor joined is one execution of the
// compute set of its first vertex.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "iss/worker_profile.h"
#include "sdk/compiler/compiler.h"

namespace ipu::hw {
class Machine;
}  // namespace ipu::hw

namespace ipu::sdk {

struct VertexProfile {
  unsigned tile = 0;   // machine tile
  uint32_t state = 0;  // its state's address on the tile
  unsigned compute_set = 0;
  std::string codelet;
  iss::RunTotals runs;  // every run (a six-worker vertex runs six times an execution)
};

struct CodeletProfile {
  std::string codelet;
  iss::RunTotals runs;  // of every vertex of the codelet
  unsigned vertices = 0, tiles = 0;
};

struct ComputeSetProfile {
  unsigned id = 0;
  std::string name;
  iss::RunTotals runs;  // of its vertices, over every tile
  unsigned vertices = 0, tiles = 0;
  // On each tile, each execution lasts from its first vertex's start to its last vertex's end;
  // summed over the executions: the most any tile took (the compute set's cycles, as the
  // busiest tile holds up the superstep), on which tile, and the sum over the tiles.
  uint64_t executions = 0;  // on the busiest tile
  uint64_t cycles = 0;
  unsigned busiest_tile = 0;
  uint64_t tile_cycles = 0;
};

struct Profile {
  std::vector<ComputeSetProfile> compute_sets;  // the most cycles first
  std::vector<CodeletProfile> codelets;         // the most cycles first
  std::vector<VertexProfile> vertices;          // by tile, then state address
  iss::RunTotals other_runs;  // worker runs of no vertex (none in a program the SDK compiled)
};

// The profile of everything the machine's workers ran so far. `function_name` names a codelet
// by its address (Symbolizer::function).
Profile make_profile(const Executable& executable, const hw::Machine& machine,
                     const std::function<std::string(uint32_t)>& function_name);

// The compute-set and codelet tables, up to `rows` rows each (the rest summed in a last row).
void print_profile(std::ostream& out, const Profile& profile, unsigned tiles_per_chip,
                   unsigned chips, size_t rows = 20);

// The profile as JSON members of the statistics ("compute_sets", "codelets", "vertices").
std::string profile_json(const Profile& profile);

}  // namespace ipu::sdk

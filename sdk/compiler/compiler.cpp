// The compiler: a graph and its programs become one image, through the stages of the pipeline
// in order (compilation.h lists each stage's file).
#include "sdk/compiler/compiler.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "sdk/compiler/compilation.h"
#include "sdk/compiler/executable_io.h"

namespace ipu::sdk {

Executable Compilation::run(const std::vector<NamedProgram>& programs) {
  exe_.machine = graph_.target().machine;
  exe_.replicas = replicas_;
  exe_.replica_tiles = replica_tiles_;
  exe_.streams = graph_.streams();
  if (programs.empty()) throw CompileError("an executable needs at least one program");
  std::set<std::string> names;
  for (const NamedProgram& n : programs) {
    if (n.name.empty()) throw CompileError("a program needs a name");
    if (!names.insert(n.name).second)
      throw CompileError(fmt::format("two programs are named '{}'", n.name));
    check(n.program);
  }
  if (std::any_of(programs.begin(), programs.end(),
                  [this](const NamedProgram& n) { return has_collective(graph_, n.program); }))
    add_collective_codelets(graph_);
  for (const NamedProgram& n : programs) add_ring_buffers(n.program);
  const hw::MachineConfig& machine = graph_.target().machine;
  if (options_.host_link == HostLink::kGateway && !machine.gateway.present)
    throw CompileError(fmt::format(
        "host streams over the gateway: the target ({}) has no IPU-Gateway", machine.preset));
  // kAuto takes the gateway when each replica's chips share one (a replica larger than an
  // IPU-Machine would need its stream split across gateways: it stays on PCIe).
  const bool one_gateway = graph_.target().replica_chips() <= machine.gateway.chips_per_gateway;
  if (options_.host_link == HostLink::kGateway ||
      (options_.host_link == HostLink::kAuto && machine.gateway.present && one_gateway))
    for (const auto& [name, stream] : graph_.streams()) {
      if (stream.elements * dtype_size(stream.type) % 4 != 0)
        throw CompileError(fmt::format(
            "stream '{}': {} {} elements are {} bytes; over the gateway a stream moves whole "
            "32-bit words",
            name, stream.elements, dtype_name(stream.type),
            stream.elements * dtype_size(stream.type)));
      // Two buffers for a stream to the device, while counters last (ipu_program.h).
      const bool two = options_.prefetch_streams &&
                       stream.direction == StreamDirection::kHostToDevice &&
                       stream_slot_counters_.size() < IPU_STREAM_SLOT_COUNTERS;
      if (two) stream_slot_counters_.emplace(name, stream_slot_counters_.size());
      stream_staging_[name] = graph_.add_remote_buffer(name + ".host_stream", stream.type,
                                                       stream.elements, two ? 2 : 1);
    }
  for (const TensorInfo& t : graph_.tensors()) exe_.tensor_info[t.name] = t;
  build_firmware_image();
  allocate_tensors(programs);
  add_graph_vertices(programs);
  place_remote_buffers();
  // Step 0 waits for the host's command; each program returns to it.
  static_assert(IPU_HOST_COMMAND == hw::sync_group::kHostCommand);
  emit_all(IPU_STEP_DISPATCH, 0, 0, 0, "host dispatch");
  exe_.command_address = heap_start_ + offsetof(ipu_tile_program, command);
  for (const NamedProgram& n : programs) {
    program_steps_.push_back(static_cast<uint32_t>(steps_[*tiles_.begin()].size()));
    const unsigned supersteps = exe_.supersteps;
    exe_.programs.push_back({n.name, {}, 0, program_steps_.back()});
    chip_computed_.assign(graph_.target().machine.chips, 0);  // entered from the dispatch's sync
    lower(n.program);
    exe_.programs.back().supersteps = exe_.supersteps - supersteps;
    emit_all(IPU_STEP_GOTO, 0, 0, 0);
  }
  const std::vector<ipu_step>& steps = steps_[*tiles_.begin()];
  for (size_t i = 0; i < steps.size(); ++i) {
    const auto sat_out = sat_out_.find(static_cast<uint32_t>(i));
    if (sat_out == sat_out_.end())
      exe_.control.push_back({steps[i].op, steps[i].a, steps[i].b, step_labels_.at(i), {}});
    else  // the op of the chips that take part (the first tile's may step over it)
      exe_.control.push_back({sat_out->second.op, 0, 0, step_labels_.at(i), sat_out->second.chips});
  }
  lay_out();
  write_image();
  write_manifest();
  const std::string runtime = runtime_json(exe_);  // what a saved image needs to run again
  exe_.image.sections[kRuntimeSection].assign(runtime.begin(), runtime.end());
  return std::move(exe_);
}

Executable compile(const Graph& graph, const std::vector<NamedProgram>& programs,
                   const CompileOptions& options) {
  return Compilation(graph, options).run(programs);
}

Executable compile(const Graph& graph, const Program& program, const CompileOptions& options) {
  return compile(graph, {{"main", program}}, options);
}

}  // namespace ipu::sdk

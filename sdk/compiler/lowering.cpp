// Lowering: programs become per-tile control steps (execute, exchange, host and streaming-memory
// transfers, repeat) and the exchange actions the scheduler times.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <set>

#include "sdk/compiler/compilation.h"

namespace ipu::sdk {

void Compilation::add_vertex(unsigned tile, const std::string& codelet,
                             const std::vector<uint32_t>& state, unsigned workers,
                             unsigned compute_set) {
  // At least a word, so that every vertex's state has its own address (profiles tell vertices
  // apart by it).
  const uint32_t at =
      memory_[tile].allocate(static_cast<uint32_t>(4 * std::max<size_t>(1, state.size())),
                             labels_(fmt::format("vertex state ({})", codelet)));
  auto& bytes = initial_[tile];
  const uint32_t offset = at - heap_start_;
  if (bytes.size() < offset + 4 * state.size()) bytes.resize(offset + 4 * state.size());
  place(bytes, offset, state);
  exe_.vertex_sites[{tile, at}] = compute_set;
  auto& range = cs_range_[tile][compute_set];
  if (range.second == 0) range.first = static_cast<uint32_t>(vertices_[tile].size());
  // A six-worker vertex is one table entry the runtime starts with ipu.runall: every copy of it
  // finds its share from its context, so the six must start together on contexts 1 to 6.
  // Started one by one with ipu.run, a copy that finished before the last one started freed a
  // context the next copy then took, and a share went undone.
  const uint32_t function = firmware_.symbols.at(codelet);
  ++range.second;
  vertices_[tile].push_back({workers > 1 ? function | IPU_VERTEX_ALL_WORKERS : function, at});
}

void Compilation::add_graph_vertices(const std::vector<NamedProgram>& programs) {
  compute_sets_ = static_cast<unsigned>(graph_.compute_sets().size());
  exe_.compute_sets = graph_.compute_sets();
  // Only the compute sets a program executes take tile memory for their vertices.
  std::vector<bool> executed(compute_sets_, false);
  std::function<void(const Program&)> mark = [&](const Program& p) {
    if (p.kind == Program::Kind::kExecute && p.compute_set.id < compute_sets_)
      executed[p.compute_set.id] = true;
    if (p.kind == Program::Kind::kCall) mark(*graph_.function(p.function).body);
    for (const Program& step : p.body) mark(step);
  };
  for (const NamedProgram& n : programs) mark(n.program);
  std::vector<std::vector<const VertexInfo*>> by_set(compute_sets_);
  for (const VertexInfo& v : graph_.vertices())
    if (v.compute_set < compute_sets_ && executed[v.compute_set])
      by_set[v.compute_set].push_back(&v);
  for (unsigned r = 0; r < replicas_; ++r)
    for (unsigned cs = 0; cs < compute_sets_; ++cs)
      for (const VertexInfo* vp : by_set[cs]) {
        const VertexInfo& v = *vp;
        std::vector<uint32_t> state;
        for (const Binding& b : v.fields) {  // in the codelet's field order
          if (std::holds_alternative<uint32_t>(b)) {
            state.push_back(std::get<uint32_t>(b));
          } else {
            const Region& region = std::get<Region>(b);
            state.push_back(address_of(region.tensor, region.begin).second);
          }
        }
        add_vertex(machine_tile(r, v.tile), v.codelet, state, v.workers, cs);
      }
}

void Compilation::emit_all(uint32_t op, uint32_t a, uint32_t b, uint32_t c,
                           const std::string& label) {
  for (unsigned t : tiles_) steps_[t].push_back({op, a, b, c});
  label_new_steps(label);
  // Past a sync every chip has synced; past a jump, what ran since is not known.
  const bool syncs = op == IPU_STEP_SYNC || op == IPU_STEP_HOST_SYNC || op == IPU_STEP_DISPATCH;
  chip_computed_.assign(graph_.target().machine.chips, syncs ? 0 : 1);
}

void Compilation::label_new_steps(const std::string& label) {
  // Only the steps a person would look for get a label: a compute set run, and a sync.
  const std::vector<ipu_step>& steps = steps_[*tiles_.begin()];
  while (step_labels_.size() < steps.size()) {
    const auto sat_out = sat_out_.find(static_cast<uint32_t>(step_labels_.size()));
    // A step some chips step over is named by the op of the chips that take it (the first
    // tile's may be a jump over it).
    const uint32_t op =
        sat_out != sat_out_.end() ? sat_out->second.op : steps[step_labels_.size()].op;
    const bool named = op == IPU_STEP_EXECUTE || op == IPU_STEP_SYNC || op == IPU_STEP_EXCHANGE ||
                       op == IPU_STEP_EXCHANGE_EXTERNAL || op == IPU_STEP_HOST_SYNC ||
                       op == IPU_STEP_DISPATCH;
    step_labels_.push_back(!named          ? std::string()
                           : label.empty() ? label_prefix_ + step_label_
                                           : label);
  }
}

std::string Compilation::describe(const Program& p) const {
  auto name = [this](Tensor t) { return "'" + info(t).name + "'"; };
  const char* op = collective_op_name(p.op);
  switch (p.kind) {
    case Program::Kind::kSequence: return "Sequence";
    case Program::Kind::kExecute:
      return fmt::format("Execute '{}'", exe_.compute_sets.at(p.compute_set.id));
    case Program::Kind::kCopy:
      if (p.pairs.empty()) return fmt::format("Copy {} -> {}", name(p.source), name(p.destination));
      return fmt::format(
          "Copy {} -> {}{}", name(p.pairs[0].first.tensor), name(p.pairs[0].second.tensor),
          p.pairs.size() == 1 ? "" : fmt::format(" and {} more", p.pairs.size() - 1));
    case Program::Kind::kBroadcast:
      return fmt::format("Broadcast {} -> {}", name(p.source), name(p.destination));
    case Program::Kind::kRepeat: return fmt::format("Repeat({})", p.count);
    case Program::Kind::kSync: {
      static const char* const kScope[] = {"internal", "external", "GS1", "GS2"};
      return fmt::format("Sync({})", kScope[static_cast<unsigned>(p.scope)]);
    }
    case Program::Kind::kHostWrite:
      return fmt::format("HostWrite '{}' -> {}", p.stream, name(p.destination));
    case Program::Kind::kHostRead:
      return fmt::format("HostRead {} -> '{}'", name(p.source), p.stream);
    case Program::Kind::kCrossReplicaCopy:
      return fmt::format("CrossReplicaCopy {} -> {}", name(p.source), name(p.destination));
    case Program::Kind::kAllReduce: return fmt::format("AllReduce({}) {}", op, name(p.source));
    case Program::Kind::kReduceScatter:
      return fmt::format("ReduceScatter({}) {} -> {}", op, name(p.source), name(p.destination));
    case Program::Kind::kAllGather:
      return fmt::format("AllGather {} -> {}", name(p.source), name(p.destination));
    case Program::Kind::kCopyToRemote:
      return fmt::format("CopyToRemote {} -> '{}'[{}]", name(p.source),
                         graph_.remote_buffer(p.remote).name, p.entry);
    case Program::Kind::kCopyFromRemote:
      return fmt::format("CopyFromRemote '{}'[{}] -> {}", graph_.remote_buffer(p.remote).name,
                         p.entry, name(p.destination));
    case Program::Kind::kAllReduceAcrossTiles:
      return fmt::format("AllReduceAcrossTiles({}) {}", op, name(p.source));
    case Program::Kind::kReduceScatterAcrossTiles:
      return fmt::format("ReduceScatterAcrossTiles({}) {} -> {}", op, name(p.source),
                         name(p.destination));
    case Program::Kind::kCall: return fmt::format("Call '{}'", graph_.function(p.function).name);
  }
  return "?";
}

void Compilation::execute(unsigned compute_set) {
  for (unsigned t : tiles_) {
    const auto ranges = cs_range_.find(t);
    std::pair<uint32_t, uint32_t> range{0, 0};  // a tile with none of its vertices runs none
    if (ranges != cs_range_.end()) {
      const auto r = ranges->second.find(compute_set);
      if (r != ranges->second.end()) range = r->second;
    }
    steps_[t].push_back({IPU_STEP_EXECUTE, range.first, range.second, 0});
    if (range.second != 0) chip_computed_.at(scheduler_.chip_of(t)) = 1;
  }
  label_new_steps(exe_.compute_sets.at(compute_set));
}

void Compilation::exchange(const Transfers& transfers, const std::string& part) {
  PhaseSchedule phase = scheduler_.schedule(transfers.list);
  // A phase inside chips ends after each chip's internal sync: a chip none of whose tiles sends
  // or receives leaves it at once (end 0, which the runtime does not wait for).
  std::set<unsigned> busy_chips;
  for (const auto& [t, acts] : phase.actions)
    if (!acts.empty()) busy_chips.insert(scheduler_.chip_of(t));
  // A chip with no part in a phase inside chips, and no vertex run since its last sync, steps
  // over it: its sync would order nothing, and the chip's program has no such phase, as each
  // IPU's own does not in Poplar (a pipeline's stages run on meanwhile, synced only by the
  // phases they take part in).
  const uint32_t op = phase.crosses_chips ? IPU_STEP_EXCHANGE_EXTERNAL : IPU_STEP_EXCHANGE;
  const auto index = static_cast<uint32_t>(steps_[*tiles_.begin()].size());
  std::vector<char> sits_out(chip_computed_.size(), 0);
  for (size_t chip = 0; chip < sits_out.size(); ++chip) {
    sits_out[chip] = !phase.crosses_chips && busy_chips.count(static_cast<unsigned>(chip)) == 0 &&
                     chip_computed_[chip] == 0;
    if (sits_out[chip]) sat_out_[index].chips.push_back(static_cast<unsigned>(chip));
    chip_computed_[chip] = 0;
  }
  if (const auto s = sat_out_.find(index); s != sat_out_.end()) s->second.op = op;
  // Every tile gets the step, most with no actions: the phase's tiles are found by walking its
  // maps beside the tiles (both in tile order), not looked up (or added) a tile at a time.
  static const std::vector<ExchangeAction> kNoActions;
  static const std::vector<uint32_t> kNoLists;
  auto acting = phase.actions.begin();
  auto listing = phase.dest_lists.begin();
  for (unsigned t : tiles_) {
    while (acting != phase.actions.end() && acting->first < t) ++acting;
    while (listing != phase.dest_lists.end() && listing->first < t) ++listing;
    const auto& acts =
        acting != phase.actions.end() && acting->first == t ? acting->second : kNoActions;
    const auto& lists =
        listing != phase.dest_lists.end() && listing->first == t ? listing->second : kNoLists;
    const unsigned chip = scheduler_.chip_of(t);
    if (sits_out[chip]) {
      steps_[t].push_back({IPU_STEP_GOTO, index + 1, 0, 0});
      continue;
    }
    const bool waits = phase.crosses_chips || busy_chips.count(chip) != 0;
    std::vector<ExchangeAction>& tile_actions = actions_[t];
    steps_[t].push_back({op, static_cast<uint32_t>(tile_actions.size()),
                         static_cast<uint32_t>(acts.size()), waits ? phase.end : 0u});
    tile_actions.insert(tile_actions.end(), acts.begin(), acts.end());
    if (!lists.empty()) {
      std::vector<uint32_t>& tile_lists = dest_lists_[t];
      tile_lists.insert(tile_lists.end(), lists.begin(), lists.end());
    }
  }
  label_new_steps(part.empty() ? "" : fmt::format("{}{}: {}", label_prefix_, step_label_, part));
  exe_.exchange_sends += phase.sends;
  exe_.exchange_destinations += phase.destinations;
  exe_.inter_chip_sends += phase.inter_chip_sends;
  exe_.external_exchanges += phase.crosses_chips ? 1 : 0;
  ++exe_.supersteps;
}

void Compilation::add_transfers(Transfers& out, Tensor source, size_t source_begin, unsigned from,
                                Tensor destination, size_t destination_begin, unsigned to,
                                size_t count) const {
  const TensorInfo& s = info(source);
  const TensorInfo& d = info(destination);
  out.add_copy({s.name, exe_.tensors.at(s.name), source_begin, machine_tile(from, 0)},
               {d.name, exe_.tensors.at(d.name), destination_begin, machine_tile(to, 0)}, count,
               s.type, [this](unsigned tile) { return graph_.describe_tile(tile); });
}

void Compilation::lower(const Program& p) {
  if (p.kind != Program::Kind::kSequence) step_label_ = describe(p);
  switch (p.kind) {
    case Program::Kind::kSequence:
      for (const Program& c : p.body) lower(c);
      break;
    case Program::Kind::kExecute: execute(p.compute_set.id); break;
    case Program::Kind::kSync: {
      static constexpr uint32_t kGroup[] = {0, hw::sync_group::kExternal, hw::sync_group::kGs1,
                                            hw::sync_group::kGs2};
      emit_all(IPU_STEP_SYNC, kGroup[static_cast<unsigned>(p.scope)], 0, 0);
      ++exe_.supersteps;
      break;
    }
    case Program::Kind::kRepeat: {
      const unsigned first = *tiles_.begin();
      const uint32_t begin = static_cast<uint32_t>(steps_[first].size());
      emit_all(IPU_STEP_REPEAT, p.count, 0, 0);
      for (const Program& c : p.body) lower(c);
      emit_all(IPU_STEP_REPEAT_END, begin, 0, 0);
      const uint32_t after = static_cast<uint32_t>(steps_[first].size());
      for (unsigned t : tiles_) steps_[t][begin].b = after;
      break;
    }
    case Program::Kind::kHostWrite:
    case Program::Kind::kHostRead: {
      const bool write = p.kind == Program::Kind::kHostWrite;
      const Tensor tensor = write ? p.destination : p.source;
      const unsigned id = host_transfer_ids_++;
      const auto staging = stream_staging_.find(p.stream);
      const bool gateway = staging != stream_staging_.end();
      exe_.host_transfers.push_back(
          {id, p.stream, write, info(tensor).name,
           gateway ? graph_.remote_buffer(staging->second).name : std::string()});
      exe_.programs.back().host_transfers.push_back(id);
      // Over the gateway: host <-> streaming memory in the host sync, tiles <-> streaming
      // memory in an exchange phase of their own.
      if (gateway && !write)
        remote_copy(CopyToRemote(tensor, staging->second, 0), "tiles -> streaming memory", true);
      emit_all(IPU_STEP_HOST_SYNC, id, 0, 0,
               gateway ? fmt::format("{}{}: host {} streaming memory", label_prefix_, step_label_,
                                     write ? "->" : "<-")
                       : std::string());
      ++exe_.supersteps;
      if (!gateway || !write) break;
      const auto counter = stream_slot_counters_.find(p.stream);
      if (counter == stream_slot_counters_.end()) {
        remote_copy(CopyFromRemote(staging->second, 0, tensor), "streaming memory -> tiles", true);
        break;
      }
      // The stream's uses take its two buffers in turn: every other use reads buffer 1.
      const unsigned first = *tiles_.begin();
      const auto slot = static_cast<uint32_t>(steps_[first].size());
      emit_all(IPU_STEP_STREAM_SLOT, counter->second, 0, 0);
      remote_copy(CopyFromRemote(staging->second, 0, tensor), "streaming memory -> tiles", true);
      const auto skip = static_cast<uint32_t>(steps_[first].size());
      emit_all(IPU_STEP_GOTO, 0, 0, 0);
      for (unsigned t : tiles_) steps_[t][slot].b = skip + 1;
      remote_copy(CopyFromRemote(staging->second, 1, tensor),
                  "streaming memory -> tiles (second buffer)", true);
      for (unsigned t : tiles_) steps_[t][skip].a = static_cast<uint32_t>(steps_[first].size());
      exe_.supersteps -= 2;  // a use runs one of the two copies
      break;
    }
    case Program::Kind::kCopy:
    case Program::Kind::kBroadcast:
    case Program::Kind::kCrossReplicaCopy: {
      // Runs contiguous on both the source and the destination tile; a broadcast makes them
      // once per source-sized chunk of the destination.
      if (!p.pairs.empty()) {  // several copies, one phase
        Transfers transfers;
        for (unsigned r = 0; r < replicas_; ++r)
          for (const auto& [from, to] : p.pairs)
            add_transfers(transfers, from.tensor, from.begin, r, to.tensor, to.begin, r,
                          from.end - from.begin);
        exchange(transfers);
        break;
      }
      const size_t n = info(p.source).elements;
      const size_t chunks =
          p.kind == Program::Kind::kBroadcast ? info(p.destination).elements / n : 1;
      Transfers transfers;
      for (unsigned r = 0; r < replicas_; ++r) {
        const unsigned to = p.kind == Program::Kind::kCrossReplicaCopy ? p.replica_map[r] : r;
        for (size_t chunk = 0; chunk < chunks; ++chunk)
          add_transfers(transfers, p.source, 0, r, p.destination, chunk * n, to, n);
      }
      exchange(transfers);
      break;
    }
    case Program::Kind::kAllReduce: all_reduce(p); break;
    case Program::Kind::kReduceScatter: reduce_scatter(p); break;
    case Program::Kind::kAllGather: all_gather(p); break;
    case Program::Kind::kCopyToRemote:
    case Program::Kind::kCopyFromRemote: remote_copy(p); break;
    case Program::Kind::kAllReduceAcrossTiles:
    case Program::Kind::kReduceScatterAcrossTiles: across_tiles(p); break;
    case Program::Kind::kCall: {
      // The body is lowered once, where it is first called, behind a step that jumps over it;
      // every call runs it and returns to the step after the call.
      const auto [it, first_call] = functions_.try_emplace(p.function.id);
      if (first_call) {
        const unsigned first = *tiles_.begin();
        const uint32_t jump = static_cast<uint32_t>(steps_[first].size());
        emit_all(IPU_STEP_GOTO, 0, 0, 0);
        const unsigned supersteps = exe_.supersteps;
        it->second.first_step = jump + 1;
        // Its steps are named inside the function: "Call 'layer' > Copy 'x' -> 'y'".
        const std::string prefix = label_prefix_;
        label_prefix_ += step_label_ + " > ";
        lower(*graph_.function(p.function).body);
        label_prefix_ = prefix;
        emit_all(IPU_STEP_RETURN, 0, 0, 0);
        it->second.supersteps = exe_.supersteps - supersteps;
        const uint32_t after = static_cast<uint32_t>(steps_[first].size());
        for (unsigned t : tiles_) steps_[t][jump].a = after;
      } else {
        exe_.supersteps += it->second.supersteps;
      }
      emit_all(IPU_STEP_CALL, it->second.first_step, 0, 0);
      break;
    }
  }
}

void Compilation::remote_copy(const Program& p, const std::string& part, bool joint) {
  const bool write = p.kind == Program::Kind::kCopyToRemote;
  const TensorInfo& t = info(write ? p.source : p.destination);
  const RemoteBufferInfo& b = graph_.remote_buffer(p.remote);
  const RemotePlacement& rp = exe_.remote_buffers.at(b.name);
  const hw::MachineConfig& m = graph_.target().machine;
  const size_t size = dtype_size(t.type);
  // Each tile issues its pieces one after another; a write's words leave through the tile's
  // send port a word a cycle, a read sends one request. The gateway times the rest, and the
  // sync after the phase waits for every transfer to complete.
  std::map<unsigned, std::vector<ExchangeAction>> acts;
  // A tile's first action is a streaming transfer's gap from the release, less the virtual
  // key's distance (ipu_program.h); each next one a gap after the last's key and its words.
  const uint32_t gap = action_gap(IPU_ACTION_SM_WRITE, ScheduleMargins::of(options_));
  std::map<unsigned, uint32_t> next;
  uint32_t end = 0;
  for (unsigned r = 0; r < replicas_; ++r)
    for (const Placement& pl : exe_.tensors.at(t.name)) {
      const unsigned tile = machine_tile(r, pl.tile), chip = tile / m.chip.tiles;
      const std::string where =
          fmt::format("{} of '{}' ({} of replica {})", write ? "CopyToRemote" : "CopyFromRemote",
                      t.name, graph_.describe_tile(pl.tile), r);
      if (chip / m.gateway.chips_per_gateway != exe_.replica_memory[r].gateway)
        throw CompileError(fmt::format(
            "{}: the tile's chip {} is not on gateway {}, which holds the replica's remote "
            "buffer '{}' (chips {}-{})",
            where, chip, exe_.replica_memory[r].gateway, b.name,
            exe_.replica_memory[r].gateway * m.gateway.chips_per_gateway,
            (exe_.replica_memory[r].gateway + 1) * m.gateway.chips_per_gateway - 1));
      // Whole words: pieces start on 32-bit boundaries (the graph checks) and an entry is whole
      // words (add_remote_buffer checks).
      const size_t first = pl.begin * size, bytes = (pl.end - pl.begin) * size;
      const uint64_t address =
          exe_.replica_memory[r].base + rp.offset + p.entry * rp.entry_bytes + first;
      const auto words = static_cast<uint32_t>(bytes / 4);
      const uint32_t offset =
          next.emplace(tile, static_cast<uint32_t>(gap + IPU_ACTION_FIRST_KEY)).first->second;
      acts[tile].push_back({offset,
                            write ? uint32_t{IPU_ACTION_SM_WRITE} : uint32_t{IPU_ACTION_SM_READ}, 0,
                            words, pl.address, 0, address});
      const uint32_t busy = write ? words : 1;
      const uint32_t issued = offset + busy + gap;
      next[tile] = issued;
      end = std::max(end, issued);
      ++exe_.remote_copies;
    }
  // A joint copy's chips reach the DIMMs at once: one phase, so that the gateway serves them
  // together in time order (apart, the first chip's reads would take the DIMMs before the next
  // chip's were known, and nothing holds them back to their chip's link rate).
  std::set<unsigned> chips;
  for (const auto& [tile, a] : acts) chips.insert(tile / m.chip.tiles);
  const uint32_t op = joint && chips.size() > 1 ? IPU_STEP_EXCHANGE_EXTERNAL : IPU_STEP_EXCHANGE;
  for (unsigned tile : tiles_) {
    auto& a = acts[tile];
    steps_[tile].push_back(
        {op, static_cast<uint32_t>(actions_[tile].size()), static_cast<uint32_t>(a.size()), end});
    actions_[tile].insert(actions_[tile].end(), a.begin(), a.end());
  }
  const std::string label =
      label_prefix_ + step_label_ + (part.empty() ? std::string() : ": " + part);
  label_new_steps(label);
  emit_all(IPU_STEP_SYNC, 0, 0, 0, label + " (complete)");  // the transfers are complete here
  exe_.supersteps += 2;
}

}  // namespace ipu::sdk

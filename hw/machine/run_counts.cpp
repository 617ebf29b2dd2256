// A finished run's counts, read from the machine's blocks (the reports above the hardware, in
// report/, print and write them).
#include "machine.h"

namespace ipu::hw {

ContextCounts context_counts(const Core& core, unsigned context) {
  const Context& c = core.context(context);
  ContextCounts n{c.instret, c.issues, c.runs, c.active_cycles};
  if (context == 0)
    n.active_cycles = core.cycles();
  else if (c.state == ContextState::kRunning && c.issue_cycle + 1 > c.started_at)
    n.active_cycles += c.issue_cycle + 1 - c.started_at;  // stopped by a fault or the limit
  return n;
}

RunReport count_run(const Machine& machine) {
  RunReport r;
  r.tiles_per_chip = machine.config().chip.tiles;
  for (unsigned id : machine.active_tiles()) {
    const Tile& t = machine.tile(id);
    TileCounts& counts = r.per_tile.emplace_back();
    counts.tile = id;
    counts.exited = t.finished() && t.outcome().reason == StopReason::kExited;
    counts.exit_status = counts.exited ? t.outcome().exit_status : 0;
    for (unsigned i = 0; i <= t.core().worker_contexts(); ++i)
      counts.contexts.push_back(context_counts(t.core(), i));
  }
  r.chips = machine.chips();
  r.tiles = static_cast<unsigned>(machine.active_tiles().size());
  r.cycles = machine.cycles();
  r.instructions = machine.instructions_retired();
  r.supersteps = machine.sync_network().barriers().size();
  for (const ExchangeRecord& e : machine.exchange().records()) {
    r.exchange_words += e.words;
    r.inter_chip_words += e.chip_words;
  }
  for (const auto& link : machine.links().links())
    r.ipulink_bytes += link->counters(0).bytes + link->counters(1).bytes;
  r.gateways = static_cast<unsigned>(machine.gateways().all().size());
  for (const auto& g : machine.gateways().all()) {
    r.streaming_bytes_written += g->bytes_written();
    r.streaming_bytes_read += g->bytes_read();
  }
  r.clock_hz = machine.config().chip.tile.clock_hz;
  return r;
}

}  // namespace ipu::hw

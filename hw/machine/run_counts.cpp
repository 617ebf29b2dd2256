// A finished run's counts, read from the machine's blocks (the reports above the hardware, in
// report/, print and write them).
#include "machine.h"

namespace ipu::hw {

ContextCounts context_counts(const iss::Core& core, unsigned context) {
  const iss::Context& c = core.context(context);
  ContextCounts n{c.instret, c.issues, c.runs, c.active_cycles};
  if (context == 0)
    n.active_cycles = core.cycles();
  else if (c.state == iss::ContextState::kRunning && c.issue_cycle + 1 > c.started_at)
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
    counts.exited = t.finished() && t.outcome().reason == iss::StopReason::kExited;
    counts.exit_status = counts.exited ? t.outcome().exit_status : 0;
    for (unsigned i = 0; i <= t.core().worker_contexts(); ++i)
      counts.contexts.push_back(context_counts(t.core(), i));
  }
  r.chips = machine.chips();
  r.tiles = static_cast<unsigned>(machine.active_tiles().size());
  r.cycles = machine.cycles();
  r.instructions = machine.instructions_retired();
  r.supersteps = machine.sync_network().barrier_count();
  r.exchange_words = machine.exchange().words();
  r.inter_chip_words = machine.exchange().chip_words();
  r.streaming_phase_cycles = machine.exchange().streaming_phase_cycles();
  r.cross_chip_phase_cycles = machine.exchange().cross_chip_phase_cycles();
  for (const auto& link : machine.links().links())
    r.ipulink_bytes += link->counters(0).bytes + link->counters(1).bytes;
  r.gateways = static_cast<unsigned>(machine.gateways().all().size());
  for (const auto& g : machine.gateways().all()) {
    r.streaming_bytes_written += g->bytes_written();
    r.streaming_bytes_read += g->bytes_read();
  }
  r.clock_hz = machine.config().chip.tile.clock_hz;

  // The energy model's counts, chip by chip.
  const unsigned per_chip = machine.config().chip.tiles;
  r.chip_actions.resize(machine.chips());
  for (unsigned id : machine.active_tiles()) {
    ChipActions& a = r.chip_actions.at(id / per_chip);
    const iss::ActionCounts n = machine.tile(id).core().actions();
    for (size_t k = 0; k < iss::kInsnClasses; ++k) a.instructions[k] += n.instructions[k];
    a.sram_read_bytes += n.sram_read_bytes;
    a.sram_written_bytes += n.sram_written_bytes;
    a.flops += n.flops;
    r.flops += n.flops;
  }
  for (unsigned chip = 0; chip < machine.chips(); ++chip) {
    ChipActions& a = r.chip_actions[chip];
    a.exchange_bytes = 4 * machine.exchange().words_to_chip(chip);
    a.exchange_column_bytes = 4 * machine.exchange().column_words_to_chip(chip);
    const PcieEndpoint& pcie = machine.chip(chip).pcie();
    a.pcie_bytes = pcie.bytes_moved(0) + pcie.bytes_moved(1);
  }
  for (unsigned chip = 0; chip < machine.chips(); ++chip) {
    r.chip_actions[chip].sync_arrivals = machine.sync_network().sync_arrivals(chip);
    r.chip_actions[chip].external_syncs = machine.sync_network().external_syncs(chip);
  }
  for (const auto& g : machine.gateways().all()) {
    GatewayActions& a = r.gateway_actions.emplace_back();
    for (unsigned d = 0; d < g->config().dimms; ++d) a.ddr_bytes += g->dimm(d).bytes;
    for (unsigned k = 0; k < g->chips(); ++k)
      a.chip_link_bytes += g->chip_link(k, true).bytes + g->chip_link(k, false).bytes;
    for (unsigned p = 0; p < g->config().host_ports; ++p)
      a.host_port_bytes += g->host_port(p, true).bytes + g->host_port(p, false).bytes;
  }
  r.ipulinks = static_cast<unsigned>(machine.links().links().size());
  return r;
}

}  // namespace ipu::hw

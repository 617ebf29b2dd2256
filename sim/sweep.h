// `ipu-sim sweep`: runs one image, or any program that takes ipu-sim's configuration options,
// --config-dump and --stats (the SDK examples), once per point of a grid of one or two
// configuration parameters, and tabulates each point's figures from its statistics
// (docs/sweeps.md):
//
//   ipu-sim sweep --vary exchange.base-latency=16,32,64 [--vary NAME=V,...] IMAGE [run options]
//   ipu-sim sweep --vary sync.internal-cycles=150,300 [--csv F] [--json F] -- COMMAND [ARGS...]
//
// Each point runs in a process of its own (SystemC elaborates once per process), --jobs at a
// time; the table lists the points in grid order whatever order they finish in.
#pragma once

namespace ipu::sim {

// argv[0] is "sweep". Returns the exit status: 0 when every point ran cleanly, 1 when one did
// not (its row says how it ended), 2 for bad usage.
int run_sweep(int argc, char** argv);

}  // namespace ipu::sim

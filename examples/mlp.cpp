// Trains a small MLP for some SGD steps on a virtual IPU (data-parallel over tiles) and checks
// every step's loss and the trained weights bit for bit against the same arithmetic on the host.
//
//   mlp [--preset mk2|bow] [--tiles N] [--steps S]
#include <fmt/format.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "examples/example_options.h"
#include "examples/mlp_app.h"

int main(int argc, char** argv) {
  return ipu::examples::run_example(
      "mlp",
      "[--preset mk2|bow] [--tiles N] [--steps S] [--rtl BLOCKS] [--rtl-trace FILE.fst] "
      "[--memory-hash]",
      argc, argv,
      {"mk2",
       {{"tiles", "16", "tiles the hidden units are spread over"},
        {"steps", "10", "training steps (each one batch)"}},
       {}},
      [](const ipu::examples::ExampleOptions& options) {
        const ipu::hw::MachineConfig machine = options.machine();
        const std::string& preset = machine.preset;
        const auto tiles = static_cast<unsigned>(options.count("tiles", 1, machine.chip.tiles));
        const auto steps = static_cast<unsigned>(options.count("steps", 1, 1000));
        const auto r = ipu::examples::run_mlp(machine, tiles, steps, 2026, options.device());
        fmt::print("== MLP training on a virtual IPU ({}) ==\n", preset);
        fmt::print(
            "model                8 -> 16 (ReLU) -> 4, squared error, SGD; {} samples over {} "
            "tiles\n",
            r.samples, r.tiles);
        for (unsigned s = 0; s < r.steps; ++s)
          fmt::print("step {:3}             loss {:.6f} (host {:.6f})\n", s,
                     r.losses[s] / r.samples, r.expected_losses[s] / r.samples);
        fmt::print(
            "result               losses and weights {} the host's bit for bit; loss {} from "
            "{:.6f} to "
            "{:.6f}\n",
            r.identical ? "equal" : "DIFFER FROM",
            r.losses.size() == 1                 ? "(one step: no second loss to compare) was"
            : r.losses.back() < r.losses.front() ? "fell"
                                                 : "did not fall",
            r.losses.front() / r.samples, r.losses.back() / r.samples);
        fmt::print("simulated            {} cycles, {} supersteps, {} exchange bytes\n",
                   r.report.run.cycles, r.report.run.supersteps, 4 * r.report.run.exchange_words);
        fmt::print("host wall time       {:.2f} s\n", r.report.run.host_seconds);
        ipu::tlm_rtl::print_rtl_stats(std::cout, r.report.rtl, r.report.rtl_trace_files);
        if (r.report.run.memory_hash)
          fmt::print("memory hash          {:016x}\n", *r.report.run.memory_hash);
        ipu::examples::print_profile(options, r.report.profile, machine);
        // One step has no second loss to compare (as train's).
        return r.identical && (r.losses.back() < r.losses.front() || r.losses.size() == 1) ? 0 : 1;
      });
}

// A model split into a pipeline, one stage per chip of a machine (examples/pipeline_app.h):
// GPipe's schedule, activations and gradients over the IPU-Links, optional recomputation;
// every loss and the trained weights are checked bit for bit against the host.
//
//   pipeline [--preset m2000|pod16|...] [--tiles N] [--width W] [--micro-batches M]
//            [--steps S] [--recompute]
#include <fmt/format.h>

#include <cstdlib>
#include <string>

#include "examples/example_options.h"
#include "examples/pipeline_app.h"

int main(int argc, char** argv) {
  return ipu::examples::run_example(
      "pipeline",
      "[--preset m2000|pod16|...] [--tiles N] [--width W] [--micro-batches M] [--steps S] "
      "[--recompute]",
      argc, argv,
      {"m2000",
       {{"tiles", "16", "tiles of each stage's chip"},
        {"width", "64", "the layers' width (a whole number of rows a tile)"},
        {"micro-batches", "4", "micro-batches a step (GPipe), their gradients summed"},
        {"steps", "6", "training steps"}},
       {{"recompute", "", "recompute each stage's forward pass in its backward pass"}}},
      [](const ipu::examples::ExampleOptions& options) {
        ipu::examples::PipelineConfig c;
        c.machine = options.machine();
        c.tiles = static_cast<unsigned>(options.count("tiles", 1, 1472));
        c.width = static_cast<unsigned>(options.count("width", 1, 4096));
        c.micro_batches = static_cast<unsigned>(options.count("micro-batches", 1, 64));
        c.steps = static_cast<unsigned>(options.count("steps", 1, 10000));
        c.recompute = options.yes("recompute");
        c.device = options.device();
        const auto r = ipu::examples::run_pipeline(c);
        fmt::print("== a {}-stage pipeline on a virtual {} ==\n", r.stages, c.machine.preset);
        fmt::print(
            "model                {} dense layers of {} x {} (ReLU), one per chip, {} tiles each; "
            "squared error, SGD\n",
            r.stages, c.width, c.width, c.tiles);
        fmt::print(
            "schedule             GPipe: {} micro-batches of {} a step; {} forward and {} backward "
            "slots; bubble {:.0f}%\n",
            c.micro_batches, c.micro_batch, c.micro_batches + r.stages - 1,
            c.micro_batches + r.stages - 1,
            100.0 * (r.stages - 1) / (c.micro_batches + r.stages - 1));
        fmt::print("recomputation        {}; {} bytes of activations kept per tile\n",
                   c.recompute ? "yes" : "no", r.stored_activation_bytes);
        fmt::print("\nstep   loss (device)   loss (host)     simulated\n");
        for (size_t s = 0; s < r.losses.size(); ++s)
          fmt::print("{:4}   {:<14.6f}  {:<14.6f}  {:8.1f} us\n", s + 1, r.losses[s],
                     r.expected_losses[s], r.cycles[s] / r.clock_hz * 1e6);
        fmt::print("\na step                {} cycles, {} supersteps, {} bytes over IPU-Links\n",
                   r.cycles.back(), r.supersteps, r.ipulink_bytes);
        fmt::print("host                 {:.2f} s\n", r.host_seconds);
        if (r.memory_hash) fmt::print("memory hash          {:016x}\n", *r.memory_hash);
        // One step has no second loss to compare: it did what was asked when it equals the
        // host's run (as train's).
        const bool one_step = r.losses.size() == 1;
        const bool fell = r.losses.back() < r.losses.front();
        fmt::print("result               losses and weights {} the host's bit for bit; {}\n",
                   r.identical ? "equal" : "DIFFER FROM",
                   one_step ? "one step (no second loss to compare)"
                   : fell   ? "loss fell"
                            : "loss did not fall");
        ipu::examples::print_profile(options, r.profile, c.machine);
        return r.identical && (fell || one_step) ? 0 : 1;
      });
}

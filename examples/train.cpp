// The main job: data-parallel training on a virtual IPU-Machine (examples/train_app.h). Prints
// each step's loss and simulated time, the step's parts (compute, collectives over the
// IPU-Links, streaming memory, host I/O), achieved TFLOP/s, IPU-Link utilisation and host time,
// and checks every loss and the trained weights bit for bit against the host.
//
//   train [--preset m2000|bow2000|pod16|...] [--tiles N] [--steps S] [--seed N]
//         [--save IMAGE --save-streams PREFIX]
//
// --save and --save-streams keep the image and what the host gave and got, so that
//   ipu-sim run IMAGE --program init --program step:S --stream x=PREFIX.x --stream t=PREFIX.t
//     --stream loss=OUT --write-tensor master_shard=PREFIX.master_shard
//     --write-tensor seeds=PREFIX.seeds --write-tensor adam_powers=PREFIX.adam_powers
// (with the preset and tiles `ipu-sim info IMAGE` prints) replays the training, its losses
// (OUT) equal to PREFIX.loss.
#include <fmt/format.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "examples/example_options.h"
#include "examples/saved_files.h"
#include "examples/train_app.h"
#include "sdk/image/elf_writer.h"

int main(int argc, char** argv) {
  return ipu::examples::run_example(
      "train",
      "[--preset m2000|bow2000|pod16|...] [--tiles N] [--steps S] [--seed N] [--rtl BLOCKS] "
      "[--rtl-trace FILE.fst] [--memory-hash] [--save IMAGE --save-streams PREFIX]",
      argc, argv,
      {"m2000",
       {{"tiles", "0", "tiles of each replica's chip (0: every tile)"},
        {"steps", "8", "training steps (each one batch a replica)"},
        {"seed", "2026", "seed of the weights, the data and the stochastic rounding"},
        {"save", "", "write the program's image to this file (for ipu-sim run)"},
        {"save-streams", "",
         "with --save: write each stream's data for every step (PREFIX.x, PREFIX.t, "
         "PREFIX.loss) and the tensors written before init (PREFIX.master_shard, PREFIX.seeds, "
         "PREFIX.adam_powers), for ipu-sim run IMAGE --program init --program step:STEPS"}},
       {}},
      [](const ipu::examples::ExampleOptions& options) {
        ipu::examples::TrainConfig c;
        c.machine = options.machine();
        c.tiles = static_cast<unsigned>(options.count("tiles", 0, 1472));
        c.steps = static_cast<unsigned>(options.count("steps", 1, 10000));
        c.seed = static_cast<uint32_t>(options.count("seed", 0, 0xffffffffu));
        c.device = options.device();
        const std::string save = options.text("save"), prefix = options.text("save-streams");
        if (!prefix.empty() && save.empty())
          throw ipu::examples::OptionError("--save-streams needs --save (the image they are for)");
        c.save = !save.empty();
        // Checked before the training runs, not found when it is over.
        std::vector<std::pair<std::string, std::string>> outputs;
        if (c.save) outputs.emplace_back("--save", save);
        if (!prefix.empty())
          for (const char* suffix :
               {".x", ".t", ".loss", ".master_shard", ".seeds", ".adam_powers"})
            outputs.emplace_back("--save-streams", prefix + suffix);
        ipu::examples::require_writable(outputs);
        const auto r = ipu::examples::run_training(c);
        if (r.saved) {
          ipu::sdk::write_elf(save, r.saved->image);
          if (!prefix.empty()) {
            using ipu::examples::write_binary;
            write_binary(prefix + ".x", r.saved->x);
            write_binary(prefix + ".t", r.saved->t);
            write_binary(prefix + ".loss", r.saved->loss);
            write_binary(prefix + ".master_shard", r.saved->master_shard);
            write_binary(prefix + ".seeds", r.saved->seeds);
            write_binary(prefix + ".adam_powers", r.saved->adam_powers);
          }
        }
        ipu::examples::record_model_flops(options.device().stats,
                                          r.flops_per_step * r.steps.size());

        const double clock = r.clock_hz;
        fmt::print("== data-parallel training on a virtual {} ==\n", c.machine.preset);
        fmt::print("replicas             {} (one chip each, {} tiles used per chip)\n", r.replicas,
                   r.tiles);
        fmt::print(
            "model                {} -> {} (ReLU) -> {}, {} parameters; squared error; global "
            "batch "
            "{}\n",
            r.inputs, r.hidden, r.outputs, r.parameters, r.batch);
        fmt::print(
            "numerics             f16 weights and activations (stochastic rounding), f32 master "
            "weights,\n                     Adam with its moments in streaming memory, 1/{} per "
            "replica\n",
            r.replicas);
        fmt::print("\nstep   loss (device)   loss (host)     simulated    host time\n");
        for (size_t s = 0; s < r.steps.size(); ++s) {
          const auto& st = r.steps[s];
          fmt::print("{:4}   {:<14.6f}  {:<14.6f}  {:8.1f} us  {:7.2f} s\n", s + 1,
                     st.loss / static_cast<float>(r.batch),
                     st.expected_loss / static_cast<float>(r.batch), st.cycles / clock * 1e6,
                     st.host_seconds);
        }
        const auto& last = r.steps.back();
        const uint64_t parts = r.collective_cycles + r.streaming_cycles + r.host_io_cycles;
        const uint64_t compute = last.cycles > parts ? last.cycles - parts : 0;
        const double step_seconds = last.cycles / clock;
        const auto us = [&](uint64_t cycles) { return cycles / clock * 1e6; };
        fmt::print("\na step (the last)     {:.1f} us, {} cycles at {:.3f} GHz\n", us(last.cycles),
                   last.cycles, clock / 1e9);
        fmt::print("  compute + on-chip   {:.1f} us\n", us(compute));
        fmt::print(
            "  collectives         {:.1f} us (reduce-scatter and all-gather over IPU-Links)\n",
            us(r.collective_cycles));
        fmt::print("  streaming memory    {:.1f} us ({} bytes of Adam moments in and out)\n",
                   us(r.streaming_cycles), r.adam_streaming_bytes);
        fmt::print(
            "  host I/O            {:.1f} us (batch in, loss out: over RoCE into streaming memory, "
            "then to the tiles)\n",
            us(r.host_io_cycles));
        fmt::print(
            "achieved             {:.4f} TFLOP/s ({:.3g} flops a step: forward and backward); "
            "the tiles executed {:.3g} a step ({:.2f}x: the loss, Adam and the collectives' "
            "additions on top)\n",
            r.flops_per_step / step_seconds / 1e12, r.flops_per_step,
            static_cast<double>(last.flops), static_cast<double>(last.flops) / r.flops_per_step);
        fmt::print(
            "energy               {:.4g} J a step ({:.3g} J a sample); {:.1f} W per chip, "
            "{:.1f} W in all; {:.3g} TFLOP/s per W (docs/energy.md)\n",
            last.joules, last.joules / r.batch, last.watts_per_chip, last.joules / step_seconds,
            r.flops_per_step / last.joules / 1e12);
        fmt::print(
            "IPU-Links            {} bytes a step; {:.2f}% of {} links x 2 directions x {:.0f} "
            "GB/s\n",
            last.ipulink_bytes,
            100.0 * last.ipulink_bytes /
                (step_seconds * r.ipulinks * 2 * r.ipulink_bytes_per_second),
            r.ipulinks, r.ipulink_bytes_per_second / 1e9);
        double host = 0;
        for (const auto& st : r.steps) host += st.host_seconds;
        fmt::print(
            "host                 {:.2f} s for {} steps ({:.2f} s a step); image load {:.3f} ms\n",
            host, r.steps.size(), host / r.steps.size(), r.load_seconds * 1e3);
        fmt::print("simulator            {} instructions and {} supersteps a step; {:.1f} MIPS\n",
                   last.instructions, last.supersteps, last.instructions / last.host_seconds / 1e6);
        if (r.memory_hash) fmt::print("memory hash          {:016x}\n", *r.memory_hash);
        // One step has no second loss to compare with: it did what was asked when it equals the
        // host's run.
        const bool one_step = r.steps.size() == 1;
        const bool fell = r.steps.back().loss < r.steps.front().loss;
        fmt::print("result               losses and weights {} the host's bit for bit; {}\n",
                   r.identical ? "equal" : "DIFFER FROM",
                   one_step ? "one step (no second loss to compare)"
                   : fell   ? "loss fell"
                            : "loss did not fall");
        ipu::examples::print_profile(options, r.profile, c.machine);
        return r.identical && (fell || one_step) ? 0 : 1;
      });
}

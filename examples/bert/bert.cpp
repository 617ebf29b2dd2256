// Packed BERT pre-training on a virtual IPU (examples/bert/bert_app.h, docs/bert.md): packed
// rows of synthetic sequences with the Wikipedia lengths, LAMB with f32 masters and the f16
// weights rounded stochastically; every loss and the trained weights are checked bit for bit
// against the host.
//
//   bert [--preset mk2|bow|...] [--tiles N] [--model tiny|large] [--hidden H] [--layers L]
//        [--heads A] [--ffn F] [--seq S] [--vocab V] [--rows R] [--accumulate N] [--steps N]
//        [--dataset-rows N] [--no-packing] [--histogram FILE] [--layers-per-chip N,N,...]
//        [--time-split] [--available-memory-proportion P] [--heads-memory-proportion P]
//        [--gradient-sums f32|f16]
//
// --layers-per-chip: the pipeline, one stage a chip (e.g. --preset m2000 --layers 4
// --layers-per-chip 1,1,1,1); the embeddings and the heads are on the first chip. The machine's
// chips are split into replicas of that many chips, data-parallel (--preset m2000
// --layers-per-chip 1,1: two replicas of two chips; --preset m2000: four of one).
// --dataset-rows: the rows of the dataset, read again epoch after epoch (the default, 4, is
// one step's: the tiny demo learns it within a few steps); 0 for new rows every micro-batch.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "examples/bert/bert_app.h"
#include "examples/example_options.h"

int main(int argc, char** argv) {
  using ipu::examples::bert::BertShape;
  return ipu::examples::run_example(
      "bert",
      "[--preset mk2|bow|...] [--tiles N] [--model tiny|large] [--hidden H] [--layers L] "
      "[--heads A] [--ffn F] [--seq S] [--vocab V] [--rows R] [--accumulate N] [--steps N] "
      "[--dataset-rows N] [--no-packing] [--histogram FILE] [--layers-per-chip N,N,...] "
      "[--time-split] [--available-memory-proportion P] [--heads-memory-proportion P] "
      "[--gradient-sums f32|f16]",
      argc, argv,
      {"mk2",
       {{"tiles", "0", "tiles of each chip (0: every tile)"},
        {"model", "tiny", "the sizes' preset: tiny, or large (BERT-Large)"},
        {"hidden", "", "the hidden size (the model's, unless given)"},
        {"layers", "", "encoder layers"},
        {"heads", "", "attention heads (they divide the hidden size)"},
        {"ffn", "", "the feed-forward layer's width"},
        {"seq", "", "tokens a row"},
        {"vocab", "", "the vocabulary"},
        {"rows", "", "rows a micro-batch"},
        {"available-memory-proportion", "0.6",
         "the share of a tile's memory a product's plan may take (poplar's "
         "availableMemoryProportion; less leaves room for a large model's tensors): one, or one "
         "a chip of a replica (e.g. 0.2,0.3,0.3,0.3; the first chip's also for the embeddings "
         "and heads)"},
        {"heads-memory-proportion", "0",
         "the heads' products' share (0: the first chip's); the tied decoder's weight gradient "
         "needs more than the layers beside it"},
        {"accumulate", "2", "micro-batches a step, their gradients summed"},
        {"gradient-sums", "f32",
         "the f16 weights' gradient sums: f32, or f16 as Graphcore's BERT keeps them (half the "
         "bytes; each gradient added with stochastic rounding, reduced over the replicas in f16)"},
        {"steps", "6", "training steps"},
        {"dataset-rows", "4",
         "rows of the dataset, read again epoch after epoch (0: new rows every micro-batch)"},
        {"histogram", IPU_BERT_DATA_DIR "/wikipedia_512.csv",
         "the sequence-length histogram the synthetic sequences follow (scaled to --seq)"},
        {"layers-per-chip", "",
         "the pipeline: layers on each chip, one stage a chip (e.g. 1,1); the machine's chips "
         "split into replicas of that many"}},
       {{"no-packing", "", "one sequence a row, padded, instead of packing by SPFHP"},
        {"replicated-optimizer", "",
         "with replicas, every replica keeps and updates all of LAMB's state (the gradients "
         "all-reduced), instead of a shard each in streaming memory"},
        {"time-split", "",
         "print where a step's time goes: after the training, each part of a step run alone "
         "and the pipeline's time composed from them (their programs take tile memory too)"}}},
      [](const ipu::examples::ExampleOptions& options) {
        ipu::examples::bert::BertConfig c;
        c.machine = options.machine();
        c.tiles = static_cast<unsigned>(options.count("tiles", 0, c.machine.chip.tiles));
        const std::string model = options.text("model");
        if (model == "large")
          c.shape = BertShape::large();
        else if (model != "tiny")
          throw ipu::examples::OptionError(
              fmt::format("option --model: '{}' is not a model (tiny or large)", model));
        const auto size = [&](const char* name, size_t& field, unsigned long max) {
          if (!options.text(name).empty()) field = options.count(name, 1, max);
        };
        size("hidden", c.shape.hidden, 4096);
        size("layers", c.shape.layers, 48);
        size("heads", c.shape.heads, 64);
        size("ffn", c.shape.ffn, 16384);
        size("seq", c.shape.seq, 2048);
        size("vocab", c.shape.vocab, 65536);
        size("rows", c.shape.rows, 64);
        c.accumulate = static_cast<unsigned>(options.count("accumulate", 1, 1024));
        try {
          c.available_memory_proportion = ipu::examples::bert::parse_memory_proportions(
              options.text("available-memory-proportion"));
        } catch (const std::invalid_argument& e) {
          throw ipu::examples::OptionError(std::string("option --available-memory-proportion: ") +
                                           e.what());
        }
        if (options.text("heads-memory-proportion") != "0")
          c.heads_memory_proportion = options.share("heads-memory-proportion", 0.0, 1.0);
        c.steps = static_cast<unsigned>(options.count("steps", 1, 10000));
        c.packing = !options.yes("no-packing");
        c.shard_optimizer = !options.yes("replicated-optimizer");
        try {
          c.f16_gradient_sums =
              ipu::examples::bert::parse_gradient_sums(options.text("gradient-sums"));
        } catch (const std::invalid_argument& e) {
          throw ipu::examples::OptionError(std::string("option --gradient-sums: ") + e.what());
        }
        c.measure_parts = options.yes("time-split");
        c.dataset_rows = static_cast<unsigned>(options.count("dataset-rows", 0, 1u << 20));
        c.histogram = options.text("histogram");
        try {
          c.layers_per_chip =
              ipu::examples::bert::parse_layers_per_chip(options.text("layers-per-chip"));
        } catch (const std::invalid_argument& e) {
          throw ipu::examples::OptionError(std::string("option --layers-per-chip: ") + e.what());
        }
        c.device = options.device();
        const auto r = ipu::examples::bert::run_bert(c);
        const BertShape& s = r.shape;
        fmt::print("== packed BERT pre-training on a virtual {} ==\n", c.machine.preset);
        // "1 layer", "2 layers": a count and its noun, as a reader says them.
        const auto counted = [](size_t n, const char* one, const char* many) {
          return fmt::format("{} {}", n, n == 1 ? one : many);
        };
        fmt::print(
            "model                {}, hidden {}, {}, FFN {}, vocabulary {}; {} "
            "parameters; {} operations a micro-batch\n",
            counted(s.layers, "layer", "layers"), s.hidden, counted(s.heads, "head", "heads"),
            s.ffn, s.vocab, r.parameters, r.operations);
        fmt::print(
            "data                 rows of {} tokens, {}; {:.1f}% of the row tokens are real\n",
            s.seq,
            c.packing ? fmt::format("packed by SPFHP, at most {} sequences a row", s.max_per_row)
                      : std::string("one sequence a row (--no-packing)"),
            100.0 * r.packing_efficiency);
        fmt::print(
            "schedule             {} of {} a step, gradients summed in {}; "
            "LAMB; {}{}\n",
            counted(c.accumulate, "micro-batch", "micro-batches"), counted(s.rows, "row", "rows"),
            c.f16_gradient_sums ? "f16 (the f16 weights', stochastically rounded)" : "f32",
            r.replicas == 1 ? std::string()
            : r.sharded_parameters == 0
                ? fmt::format("{} replicas, their gradients summed over the IPU-Links "
                              "(AllReduce); each ",
                              r.replicas)
                : fmt::format("{} replicas, LAMB's state of {} of the {} parameters sharded "
                              "over them in streaming memory (gradients reduce-scattered, "
                              "weights all-gathered over the IPU-Links); each ",
                              r.replicas, r.sharded_parameters, r.parameters),
            r.stages == 1 ? fmt::format("one chip, {} tiles", r.tiles)
                          : fmt::format("pipelined over {} chips of {} tiles (layers {}), {} slots "
                                        "a step, each stage's forward recomputed in its backward",
                                        r.stages, r.tiles / r.stages,
                                        options.text("layers-per-chip"), r.slots));
        fmt::print(
            "\nstep   MLM loss   NSP loss   (host: MLM, NSP)        simulated   sequences/s\n");
        uint64_t cycles = 0, sequences = 0;
        for (size_t i = 0; i < r.steps.size(); ++i) {
          const auto& st = r.steps[i];
          const double seconds = static_cast<double>(st.cycles) / r.clock_hz;
          cycles += st.cycles;
          sequences += st.sequences;
          fmt::print("{:4}   {:8.4f}   {:8.4f}   ({:.4f}, {:.4f})   {:10.1f} us   {:11.0f}\n",
                     i + 1, st.mlm_loss, st.nsp_loss, st.expected_mlm_loss, st.expected_nsp_loss,
                     seconds * 1e6, static_cast<double>(st.sequences) / seconds);
        }
        const double seconds = static_cast<double>(cycles) / r.clock_hz;
        const double flops = r.flops_per_micro_batch * c.accumulate * r.replicas *
                             static_cast<double>(r.steps.size());
        ipu::examples::record_model_flops(c.device.stats, flops);
        fmt::print(
            "\ntraining             {} sequences in {:.1f} us: {:.0f} sequences/s, {:.3f} "
            "TFLOP/s in the products\n",
            sequences, seconds * 1e6, static_cast<double>(sequences) / seconds,
            flops / seconds / 1e12);
        const auto& last = r.steps.back();
        const auto us = [&](uint64_t n) { return static_cast<double>(n) / r.clock_hz * 1e6; };
        const double last_seconds = static_cast<double>(last.cycles) / r.clock_hz;
        const double model_flops = r.flops_per_micro_batch * c.accumulate * r.replicas;
        fmt::print(
            "flops                {:.4g} a step executed by the tiles ({:.3f} TFLOP/s), {:.2f}x "
            "the products' {:.4g} (the softmax, layer norms, losses and LAMB come on top, and the "
            "recomputed forward passes when pipelined)\n",
            static_cast<double>(last.flops), static_cast<double>(last.flops) / last_seconds / 1e12,
            static_cast<double>(last.flops) / model_flops, model_flops);
        const bool sharded = r.sharded_parameters != 0;
        fmt::print(
            "a step's time        pipeline {:.1f} us, {} {:.1f} us, LAMB {:.1f} us{}; host I/O "
            "{:.1f} us of them (the last step)\n",
            us(last.pipeline_cycles), sharded ? "reduce-scatter" : "AllReduce",
            us(last.allreduce_cycles), us(last.update_cycles),
            sharded ? " (with its state's streaming and the weights' all-gather)" : "",
            us(last.host_io_cycles));
        if (r.parts) {
          // The split: the composed pipeline's parts, then the reduce and the update measured.
          const ipu::examples::bert::PipelineTime& t = r.composed;
          const uint64_t lamb_rest =
              last.update_cycles - std::min(last.update_cycles, last.update_streaming_cycles +
                                                                    last.update_cross_chip_cycles);
          const uint64_t step = t.cycles + last.allreduce_cycles + last.update_cycles;
          const auto row = [&](const char* name, uint64_t n, const std::string& what) {
            fmt::print("  {:<22} {:9.1f} us {:5.1f}%   {}\n", name, us(n),
                       100.0 * static_cast<double>(n) / static_cast<double>(step), what);
          };
          fmt::print(
              "where it goes        each part run alone, the pipeline's {} slots composed: "
              "{:.1f} us against the {:.1f} us simulated ({:+.1f}%)\n",
              t.slots, us(t.cycles), us(last.pipeline_cycles),
              100.0 * (static_cast<double>(t.cycles) / last.pipeline_cycles - 1.0));
          row("compute", t.compute,
              r.stages > 1 ? "the chips' mean work: forward, recomputed forward, backward, heads"
                           : "forward, heads, backward");
          if (r.stages > 1) {
            row("bubble", t.bubble,
                "waiting for the busiest chip: the pipeline's fill and drain, uneven stages");
            row("inter-stage copies", t.sends, "activations and gradients over the IPU-Links");
          }
          row("host I/O", t.host_io, "the micro-batches' inputs in, the losses out");
          if (r.replicas > 1)
            row(sharded ? "reduce-scatter" : "AllReduce", last.allreduce_cycles,
                "the gradient sums over the replicas");
          if (sharded) {
            row("streaming memory", last.update_streaming_cycles,
                "LAMB's masters and moments in and out");
            row("all-gather", last.update_cross_chip_cycles,
                "the new weights from every replica, and LAMB's norms over them");
          }
          row("LAMB", lamb_rest, sharded ? "the update of each shard" : "the update");
        }
        fmt::print(
            "energy               {:.4g} J a step ({:.3g} mJ a sequence); {:.1f} W per chip, "
            "{:.1f} W in all; {:.3g} TFLOP/s per W in the products (docs/energy.md)\n",
            last.joules, 1e3 * last.joules / static_cast<double>(last.sequences),
            last.chip_joules / last_seconds / c.machine.chips, last.joules / last_seconds,
            model_flops / last.joules / 1e12);
        if (r.stages > 1 || r.replicas > 1)
          fmt::print(
              "IPU-Links            {} bytes a step between the stages, {} in the update "
              "(the gradients' {}; LAMB's step scalars to the later chips)\n",
              r.steps.back().ipulink_bytes, r.steps.back().update_ipulink_bytes,
              sharded ? "reduce-scatter, the trust ratios' sums and the weights' all-gather"
                      : "AllReduce");
        if (sharded)
          fmt::print(
              "streaming memory     {} bytes a step: LAMB's sharded masters and moments, read "
              "and written back\n",
              last.update_streaming_bytes);
        fmt::print("tile memory          the fullest tile, {}, holds {} of {} bytes ({:.0f}%)\n",
                   r.fullest_tile, r.fullest_tile_bytes, r.tile_free_bytes,
                   100.0 * r.fullest_tile_bytes / r.tile_free_bytes);
        if (r.memory_hash) fmt::print("memory hash          {:016x}\n", *r.memory_hash);
        fmt::print("host                 {:.1f} s ({:.1f} s compiling)\n", r.host_seconds,
                   r.compile_seconds);
        const bool fell = r.steps.back().mlm_loss < r.steps.front().mlm_loss;
        fmt::print(
            "result               losses and weights {} the host's bit for bit; MLM loss {}\n",
            r.identical ? "equal" : "DIFFER FROM",
            r.steps.size() < 2 ? "(one step)"
            : fell             ? "fell"
                               : "did not fall");
        ipu::examples::print_profile(options, r.profile, c.machine);
        return r.identical ? 0 : 1;
      });
}

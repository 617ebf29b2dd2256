// The main job: a matrix product spread over every tile of an IPU, inputs streamed from the
// host, the result streamed back and checked bit for bit against a host reference computed in
// the same order of operations. Prints the run's report.
//
//   matmul [--preset mk2|bow] [--tiles N|all] [--n COLUMNS] [--k DEPTH] [--save IMAGE]
//          [--save-streams PREFIX] [--memory-report] [--rtl BLOCKS] [--rtl-trace FILE.fst]
//          [--memory-hash]
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "examples/example_options.h"
#include "examples/matmul_app.h"
#include "examples/saved_files.h"
#include "sdk/image/elf_writer.h"

namespace {}  // namespace

int main(int argc, char** argv) {
  return ipu::examples::run_example(
      "matmul",
      "[--preset mk2|bow] [--tiles N|all] [--n COLUMNS] [--k DEPTH (multiple of 16)] [--save "
      "IMAGE] [--save-streams PREFIX] [--memory-report] [--rtl BLOCKS] [--rtl-trace FILE.fst] "
      "[--memory-hash]",
      argc, argv,
      {"mk2",
       {{"tiles", "all", "tiles the product is spread over (all: every tile of the chip)"},
        {"n", "384", "columns of B and C (A and C have 16 rows a tile)"},
        {"k", "64", "the depth: columns of A, rows of B (a multiple of 16)"},
        {"save", "", "write the program's image to this file (for ipu-sim run)"},
        {"save-streams", "",
         "write the host streams' data to PREFIX.a_in, PREFIX.b_in and PREFIX.c_out (the "
         "expected result), for ipu-sim run --stream"}},
       {{"memory-report", "", "print the compiler's tile memory report"}}},
      [](const ipu::examples::ExampleOptions& options) {
        const ipu::hw::MachineConfig machine = options.machine();
        const std::string& preset = machine.preset;
        const ipu::hw::ChipConfig& chip = machine.chip;
        if (machine.chips != 1)
          throw ipu::examples::OptionError("the matmul runs on one chip: --preset mk2 or bow");
        const unsigned tiles = options.text("tiles") == "all"
                                   ? chip.tiles
                                   : static_cast<unsigned>(options.count("tiles", 1, chip.tiles));
        const size_t n = options.count("n", 1, 1u << 16), k = options.count("k", 16, 1u << 16);
        if (k % 16 != 0)
          throw ipu::examples::OptionError("--k " + std::to_string(k) + " is not a multiple of 16");
        const std::string save = options.text("save"), prefix = options.text("save-streams");
        std::vector<std::pair<std::string, std::string>> outputs;
        if (!save.empty()) outputs.emplace_back("--save", save);
        if (!prefix.empty())
          for (const char* suffix : {".a_in", ".b_in", ".c_out"})
            outputs.emplace_back("--save-streams", prefix + suffix);
        ipu::examples::require_writable(outputs);
        const bool memory_report = options.yes("memory-report");
        const auto r = ipu::examples::run_matmul(machine, tiles, n, k, 2026, options.device());
        if (!save.empty()) ipu::sdk::write_elf(save, r.executable.image);
        // The streams' data, for `ipu-sim run IMAGE --stream a_in=PREFIX.a_in ...`.
        if (!prefix.empty()) {
          ipu::examples::write_binary(prefix + ".a_in", r.a_in);
          ipu::examples::write_binary(prefix + ".b_in", r.b_in);
          ipu::examples::write_binary(prefix + ".c_out", r.c_out);
        }
        if (memory_report)
          fmt::print("== tile memory (compiler) ==\n{}", r.executable.memory_report);
        const double clock = chip.tile.clock_hz;
        const double flops = 2.0 * static_cast<double>(r.m) * r.n * r.k;
        ipu::examples::record_model_flops(options.device().stats, flops);
        const double seconds = static_cast<double>(r.report.run.cycles) / clock;
        const double peak = 128.0 * r.tiles * clock;  // f16 AMP peak of the tiles used
        const double compute_seconds = static_cast<double>(r.compute_cycles) / clock;
        fmt::print("== matmul on a virtual IPU ({}) ==\n", preset);
        fmt::print(
            "problem              C ({} x {}) = A ({} x {}) . B ({} x {}), f16 in, f32 out\n", r.m,
            r.n, r.m, r.k, r.k, r.n);
        fmt::print("result               {} of {} values equal the host reference bit for bit\n",
                   r.c.size() - r.mismatches, r.c.size());
        fmt::print("tiles                {}\n", r.report.run.tiles);
        fmt::print("supersteps           {}\n", r.report.run.supersteps);
        fmt::print("simulated            {} cycles, {:.2f} us at {:.3f} GHz\n", r.report.run.cycles,
                   seconds * 1e6, clock / 1e9);
        fmt::print(
            "matmul compute       {} cycles: {:.2f} TFLOP/s ({:.1f}% of the {:.2f} TFLOP/s f16 "
            "peak of "
            "{} tiles)\n",
            r.compute_cycles, flops / compute_seconds / 1e12, 100 * flops / compute_seconds / peak,
            peak / 1e12, r.tiles);
        fmt::print("whole program        {:.2f} TFLOP/s including host transfers and exchange\n",
                   flops / seconds / 1e12);
        fmt::print("exchange             {} bytes\n", 4 * r.report.run.exchange_words);
        fmt::print("host <-> device      {} bytes in, {} bytes out, {:.2f} us on the host link\n",
                   r.report.host_to_device_bytes, r.report.device_to_host_bytes,
                   static_cast<double>(r.report.host_transfer_cycles) / clock * 1e6);
        fmt::print(
            "image load           {} bytes over PCIe in {:.2f} us (before the tiles start)\n",
            r.report.image_bytes, r.report.load_seconds * 1e6);
        fmt::print("host wall time       {:.2f} s\n", r.report.run.host_seconds);
        fmt::print("simulator speed      {:.1f} MIPS ({} instructions)\n",
                   static_cast<double>(r.report.run.instructions) / r.report.run.host_seconds / 1e6,
                   r.report.run.instructions);
        ipu::tlm_rtl::print_rtl_stats(std::cout, r.report.rtl, r.report.rtl_trace_files);
        if (r.report.run.memory_hash)
          fmt::print("memory hash          {:016x}\n", *r.report.run.memory_hash);
        ipu::examples::print_profile(options, r.report.profile, machine);
        return r.mismatches == 0 ? 0 : 1;
      });
}

// Writes a small SDK image for ipu-sim's tensor files (tests/cli/sdk_image_tensors.sh): on 4
// tiles of an M2000 replicated twice (2 chips each), y += 2 x over 64 f32 elements ("axpy"), and
// the same twice ("axpy_twice"). No streams: the data goes in and out as tensors.
//   save_axpy_image IMAGE
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "sdk/compiler/compiler.h"
#include "sdk/graph/codelet_library.h"
#include "sdk/image/elf_writer.h"

// sc_main: the SDK's libraries bring in SystemC, whose main() calls it.
extern "C" int sc_main(int argc, char** argv) {
  if (argc != 2) {
    std::fputs("usage: save_axpy_image IMAGE\n", stderr);
    return 2;
  }
  try {
    using namespace ipu::sdk;
    Graph g(Target::preset("m2000", 4, 2));
    add_codelet_library(g);
    const Tensor x = g.add_variable(DType::kF32, {64}, "x");
    const Tensor y = g.add_variable(DType::kF32, {64}, "y");
    g.map_evenly(x, 0, 4, 1);
    g.map_evenly(y, 0, 4, 1);
    const float two = 2.0f;
    uint32_t k;
    std::memcpy(&k, &two, 4);
    const ComputeSet cs = g.add_compute_set("axpy");
    for (unsigned t = 0; t < 4; ++t)
      g.add_vertex(cs, "scale_add_f32", t,
                   {{"a", g.region(x, 16 * t, 16 * t + 16)},
                    {"out", g.region(y, 16 * t, 16 * t + 16)},
                    {"n", 16u},
                    {"k", k}});
    const Executable exe =
        compile(g, {{"axpy", Execute(cs)}, {"axpy_twice", Repeat(2, Execute(cs))}});
    write_elf(argv[1], exe.image);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "save_axpy_image: %s\n", e.what());
    return 1;
  }
  return 0;
}

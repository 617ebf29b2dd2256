// y = 2.5 x + y on 4 tiles of a virtual Mk2 with the installed SDK: an ordinary main(), the
// app's own codelet (saxpy.c) and one from the SDK's library (sum_f32), checked against the
// host. Exit status 0 only when every value matches.
#include <sdk/compiler/compiler.h>
#include <sdk/graph/codelet_library.h>
#include <sdk/runtime/device.h>
#include <sdk/version.h>

#include <cstdio>
#include <vector>

int main() {
  using namespace ipu::sdk;
  constexpr size_t n = 400;
  constexpr unsigned tiles = 4;
  Graph g(Target::preset("mk2", tiles));
  add_codelet_library(g);
  g.add_codelet("saxpy", SAXPY_CODELET,
                {{"x", FieldKind::kInput, DType::kF32},
                 {"y", FieldKind::kInOut, DType::kF32},
                 {"n", FieldKind::kScalar, DType::kU32}});
  const Tensor x = g.add_variable(DType::kF32, {n}, "x"), y = g.add_variable(DType::kF32, {n}, "y");
  const Tensor sums = g.add_variable(DType::kF32, {tiles}, "sums");
  g.map_evenly(x, 0, tiles);
  g.map_evenly(y, 0, tiles);
  g.map_evenly(sums, 0, tiles);
  g.add_host_stream("x_in", DType::kF32, n, StreamDirection::kHostToDevice);
  g.add_host_stream("y_in", DType::kF32, n, StreamDirection::kHostToDevice);
  g.add_host_stream("y_out", DType::kF32, n, StreamDirection::kDeviceToHost);
  const ComputeSet axpy = g.add_compute_set("saxpy"), sum = g.add_compute_set("sum");
  for (const Interval& m : g.tensor(y).mapping) {
    const auto count = static_cast<uint32_t>(m.end - m.begin);
    g.add_vertex(
        axpy, "saxpy", m.tile,
        {{"x", g.region(x, m.begin, m.end)}, {"y", g.region(y, m.begin, m.end)}, {"n", count}});
    g.add_vertex(sum, "sum_f32", m.tile,
                 {{"a", g.region(y, m.begin, m.end)},
                  {"out", g.region(sums, m.tile, m.tile + 1)},
                  {"n", count}});
  }
  const Executable exe = compile(g, Sequence({HostWrite("x_in", x), HostWrite("y_in", y),
                                              Execute(axpy), Execute(sum), HostRead(y, "y_out")}));

  std::vector<float> hx(n), hy(n), out(n, -1.0f);
  for (size_t i = 0; i < n; ++i) hx[i] = 0.25f * static_cast<float>(i), hy[i] = 3.0f;
  Device device(exe);
  device.connect_stream("x_in", hx.data(), n * 4);
  device.connect_stream("y_in", hy.data(), n * 4);
  device.connect_stream("y_out", out.data(), n * 4);
  const DeviceReport& report = device.run();
  std::vector<float> device_sums(tiles);
  device.read_tensor("sums", device_sums.data(), tiles * 4);

  int wrong = 0;
  for (size_t i = 0; i < n; ++i) wrong += out[i] != 2.5f * hx[i] + hy[i];
  for (unsigned t = 0; t < tiles; ++t) {
    float s = 0;  // sum_f32 adds left to right, as here
    for (size_t i = t * n / tiles; i < (t + 1) * n / tiles; ++i) s += 2.5f * hx[i] + hy[i];
    wrong += device_sums[t] != s;
  }
  std::printf("virtual IPU SDK %s: saxpy on %u tiles in %llu cycles, %d wrong\n", version(),
              report.run.tiles, static_cast<unsigned long long>(report.run.cycles), wrong);
  return wrong == 0 ? 0 : 1;
}

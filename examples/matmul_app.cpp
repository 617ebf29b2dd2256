#include "matmul_app.h"

#include <cmath>
#include <cstring>
#include <random>

#include "hw/machine/machine.h"
#include "sdk/compiler/compiler.h"

namespace ipu::examples {
namespace {

uint16_t to_f16_exact(float x) {  // x is a small multiple of 1/64: exact in f16
  if (x == 0) return 0;
  int e;
  const float m = std::frexp(std::fabs(x), &e);
  const auto mant = static_cast<uint32_t>(std::ldexp(m, 11));
  return static_cast<uint16_t>((x < 0 ? 0x8000 : 0) | ((e + 14) << 10) | (mant & 0x3ff));
}

}  // namespace

MatmulResult run_matmul(const hw::MachineConfig& machine, unsigned tiles, size_t n, size_t k,
                        uint32_t seed, const sdk::DeviceOptions& device_options) {
  using namespace sdk;
  MatmulResult out;
  out.tiles = tiles;
  out.m = 16 * size_t{tiles};
  out.n = n;
  out.k = k;
  const size_t m = out.m;

  Graph g(Target::of(machine));
  g.add_codelet("matmul_f16_amp", std::string(IPU_CODELET_DIR) + "/matmul.c",
                {{"a", FieldKind::kInput, DType::kF16},
                 {"b", FieldKind::kInput, DType::kF16},
                 {"ct", FieldKind::kOutput, DType::kF32},
                 {"k", FieldKind::kScalar, DType::kU32},
                 {"columns", FieldKind::kScalar, DType::kU32}});
  const Tensor a = g.add_variable(DType::kF16, {m, k}, "a");  // per tile: AMP weight order
  const Tensor b = g.add_variable(DType::kF16, {k, n}, "b");  // on tile 0, pass-major
  const Tensor b_all = g.add_variable(DType::kF16, {tiles, k * n}, "b_all");  // a copy per tile
  const Tensor ct = g.add_variable(DType::kF32, {m, n}, "ct");  // per tile: columns x 16
  g.map_evenly(a, 0, tiles, 16 * k);
  g.set_tile_mapping(b, 0);
  g.map_evenly(b_all, 0, tiles, k * n);
  g.map_evenly(ct, 0, tiles, 16 * n);
  g.add_host_stream("a_in", DType::kF16, m * k, StreamDirection::kHostToDevice);
  g.add_host_stream("b_in", DType::kF16, k * n, StreamDirection::kHostToDevice);
  g.add_host_stream("c_out", DType::kF32, m * n, StreamDirection::kDeviceToHost);

  // Six vertices per tile, one per worker, each a share of the columns. A vertex's share of B is
  // laid out pass-major on its own (see the host layout below), so it streams contiguously.
  const ComputeSet cs = g.add_compute_set("matmul");
  for (unsigned t = 0; t < tiles; ++t) {
    size_t b_offset = 0;
    for (unsigned w = 0; w < 6; ++w) {
      const size_t c0 = n * w / 6, c1 = n * (w + 1) / 6, cols = c1 - c0;
      if (cols == 0) continue;
      const size_t b_base = t * k * n + b_offset;
      g.add_vertex(cs, "matmul_f16_amp", t,
                   {{"a", g.region(a, 16 * k * t, 16 * k * (t + 1))},
                    {"b", g.region(b_all, b_base, b_base + k * cols)},
                    {"ct", g.region(ct, 16 * n * t + 16 * c0, 16 * n * t + 16 * c1)},
                    {"k", static_cast<uint32_t>(k)},
                    {"columns", static_cast<uint32_t>(cols)}});
      b_offset += k * cols;
    }
  }
  out.executable = compile(g, Sequence({HostWrite("a_in", a), HostWrite("b_in", b),
                                        Broadcast(b, b_all), Execute(cs), HostRead(ct, "c_out")}));

  // Host data: small multiples of 1/64 so that f16 holds them exactly.
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> value(-128, 127);
  std::vector<float> av(m * k), bv(k * n);
  for (float& x : av) x = value(rng) / 64.0f;
  for (float& x : bv) x = value(rng) / 64.0f;
  std::vector<uint16_t> a_host(m * k), b_host(k * n);
  // A in AMP weight order per tile: pass, phase, row, 4 values.
  for (unsigned t = 0; t < tiles; ++t)
    for (size_t pass = 0; pass < k / 16; ++pass)
      for (size_t phase = 0; phase < 4; ++phase)
        for (size_t r = 0; r < 16; ++r)
          for (size_t j = 0; j < 4; ++j)
            a_host[16 * k * t + ((pass * 4 + phase) * 16 + r) * 4 + j] =
                to_f16_exact(av[(16 * t + r) * k + pass * 16 + phase * 4 + j]);
  // B layout: per vertex (column share), per pass of 16 k-values, per column, 16 values.
  size_t at = 0;
  for (unsigned w = 0; w < 6; ++w) {
    const size_t c0 = n * w / 6, c1 = n * (w + 1) / 6;
    for (size_t pass = 0; pass < k / 16; ++pass)
      for (size_t c = c0; c < c1; ++c)
        for (size_t kk = 0; kk < 16; ++kk)
          b_host[at++] = to_f16_exact(bv[(pass * 16 + kk) * n + c]);
  }
  std::vector<float> ct_host(m * n);

  Device device(out.executable, device_options);
  device.connect_stream("a_in", a_host.data(), a_host.size() * 2);
  device.connect_stream("b_in", b_host.data(), b_host.size() * 2);
  device.connect_stream("c_out", ct_host.data(), ct_host.size() * 4);
  out.report = device.run();
  // The matmul's compute: each tile's compute segment that ends at the final host sync.
  const auto& barriers = device.machine().chip(0).sync_network().barriers();
  if (!barriers.empty()) {
    const auto& last = barriers.back();
    for (size_t i = 0; i < last.tiles.size(); ++i)
      for (const auto& seg : device.machine().chip(0).tile(last.tiles[i]).timeline())
        if (seg.kind == hw::TileSegment::kCompute && seg.end == last.arrivals[i])
          out.compute_cycles = std::max(out.compute_cycles, seg.end - seg.begin);
  }

  // C from the tiles' C^T blocks, and the host reference in the AMP's order.
  out.c.resize(m * n);
  out.expected.resize(m * n);
  for (unsigned t = 0; t < tiles; ++t)
    for (size_t c = 0; c < n; ++c)
      for (size_t r = 0; r < 16; ++r)
        out.c[(16 * t + r) * n + c] = ct_host[16 * n * t + 16 * c + r];
  for (size_t r = 0; r < m; ++r)
    for (size_t c = 0; c < n; ++c) {
      float total = 0;
      for (size_t pass = 0; pass < k / 16; ++pass) {
        float acc = 0;
        for (size_t kk = pass * 16; kk < pass * 16 + 16; ++kk)
          acc = std::fma(av[r * k + kk], bv[kk * n + c], acc);
        total = pass == 0 ? acc : total + acc;
      }
      out.expected[r * n + c] = total;
      if (std::memcmp(&total, &out.c[r * n + c], 4) != 0) ++out.mismatches;
    }
  out.a_in = std::move(a_host);
  out.b_in = std::move(b_host);
  out.c_out = std::move(ct_host);
  return out;
}

}  // namespace ipu::examples

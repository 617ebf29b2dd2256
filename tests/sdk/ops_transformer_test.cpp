// The encoder layer (sdk/ops/transformer.h), forward and backward, on the tiles against an
// independent host model written here in double precision straight from the equations (no
// operator library code): every output and gradient within 0.5 % in the L2 norm, the f16
// roundings of the operands being the difference. A wrong transpose, head split or residual
// gives errors of order 1. Also its refusals.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "iss/fpu.h"
#include "sdk/compiler/compiler.h"
#include "sdk/ops/op_support.h"
#include "sdk/ops/transformer.h"
#include "sdk/runtime/device.h"

namespace ipu::test {
namespace {

using namespace ipu::sdk;
using ::testing::HasSubstr;
using Matrix = std::vector<double>;  // row-major

// kF = 128: the feed-forward block's 32 x 128 in row blocks on the 64 tiles (two slices of 64).
constexpr size_t kH = 32, kHeads = 2, kF = 128, kS = 16, kB = 2, kT = kS * kB, kD = kH / kHeads;

// C [m x n] = A [m x k] B [k x n]; with ta, A is given [k x m]; with tb, B is given [n x k].
Matrix mul(const Matrix& a, const Matrix& b, size_t m, size_t k, size_t n, bool ta = false,
           bool tb = false) {
  Matrix c(m * n, 0.0);
  for (size_t i = 0; i < m; ++i)
    for (size_t j = 0; j < n; ++j) {
      double s = 0;
      for (size_t l = 0; l < k; ++l)
        s += (ta ? a[l * m + i] : a[i * k + l]) * (tb ? b[j * k + l] : b[l * n + j]);
      c[i * n + j] = s;
    }
  return c;
}

double gelu(double x) {
  const double c = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
}
double gelu_grad(double x) {
  const double c = std::sqrt(2.0 / M_PI), t = std::tanh(c * (x + 0.044715 * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * x * x);
}

struct Norm {
  Matrix y, xhat;
  std::vector<double> inv;
};
Norm layer_norm(const Matrix& x, const Matrix& gamma, const Matrix& beta, size_t rows, size_t c) {
  Norm n{Matrix(x.size()), Matrix(x.size()), std::vector<double>(rows)};
  for (size_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (size_t j = 0; j < c; ++j) mean += x[r * c + j];
    mean /= static_cast<double>(c);
    for (size_t j = 0; j < c; ++j) var += (x[r * c + j] - mean) * (x[r * c + j] - mean);
    n.inv[r] = 1.0 / std::sqrt(var / static_cast<double>(c) + 1e-12);
    for (size_t j = 0; j < c; ++j) {
      n.xhat[r * c + j] = (x[r * c + j] - mean) * n.inv[r];
      n.y[r * c + j] = n.xhat[r * c + j] * gamma[j] + beta[j];
    }
  }
  return n;
}
// dx; dgamma and dbeta added to.
Matrix layer_norm_grad(const Norm& n, const Matrix& dy, const Matrix& gamma, size_t rows, size_t c,
                       Matrix& dgamma, Matrix& dbeta) {
  Matrix dx(dy.size());
  for (size_t r = 0; r < rows; ++r) {
    double a = 0, b = 0;
    for (size_t j = 0; j < c; ++j) {
      const double g = dy[r * c + j] * gamma[j];
      a += g, b += g * n.xhat[r * c + j];
      dgamma[j] += dy[r * c + j] * n.xhat[r * c + j];
      dbeta[j] += dy[r * c + j];
    }
    a /= static_cast<double>(c), b /= static_cast<double>(c);
    for (size_t j = 0; j < c; ++j)
      dx[r * c + j] = n.inv[r] * (dy[r * c + j] * gamma[j] - a - n.xhat[r * c + j] * b);
  }
  return dx;
}

Matrix add(Matrix a, const Matrix& b) {
  for (size_t i = 0; i < a.size(); ++i) a[i] += b[i % b.size()];
  return a;
}
Matrix column_sums(const Matrix& x, size_t rows, size_t c) {
  Matrix s(c, 0.0);
  for (size_t r = 0; r < rows; ++r)
    for (size_t j = 0; j < c; ++j) s[j] += x[r * c + j];
  return s;
}

struct Weights {
  Matrix qkv_t, out, out_bias, ffn_in, ffn_in_bias, ffn_out, ffn_out_bias, g1, b1, g2, b2;
};
struct Grads {
  Matrix dx, qkv_t, out, out_bias, ffn_in, ffn_in_bias, ffn_out, ffn_out_bias, g1, b1, g2, b2;
};

// The layer's forward and backward passes from their equations; mask [B x S x S], added to
// each query's scores.
Matrix reference(const Weights& w, const Matrix& x, const Matrix& mask, const Matrix& dy,
                 Grads& d) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(kD));
  Matrix attention(kT * kH);
  std::vector<Matrix> xs, qs, ks, vs, ps, ctxs;
  for (size_t b = 0; b < kB; ++b) {
    const Matrix xb(x.begin() + b * kS * kH, x.begin() + (b + 1) * kS * kH);
    const Matrix qkv = mul(xb, w.qkv_t, kS, kH, 3 * kH, false, true);  // [S x 3H]
    Matrix q(kS * kH), k(kS * kH), v(kS * kH);
    for (size_t t = 0; t < kS; ++t)
      for (size_t j = 0; j < kH; ++j) {
        q[t * kH + j] = qkv[t * 3 * kH + j];
        k[t * kH + j] = qkv[t * 3 * kH + kH + j];
        v[t * kH + j] = qkv[t * 3 * kH + 2 * kH + j];
      }
    Matrix p(kHeads * kS * kS), ctx(kS * kH, 0.0);
    for (size_t h = 0; h < kHeads; ++h)
      for (size_t i = 0; i < kS; ++i) {
        double* row = &p[(h * kS + i) * kS];
        double top = -1e300;
        for (size_t j = 0; j < kS; ++j) {
          double s = 0;
          for (size_t e = 0; e < kD; ++e) s += q[i * kH + h * kD + e] * k[j * kH + h * kD + e];
          row[j] = s * scale + mask[(b * kS + i) * kS + j];
          top = std::max(top, row[j]);
        }
        double sum = 0;
        for (size_t j = 0; j < kS; ++j) sum += row[j] = std::exp(row[j] - top);
        for (size_t j = 0; j < kS; ++j) row[j] /= sum;
        for (size_t j = 0; j < kS; ++j)
          for (size_t e = 0; e < kD; ++e)
            ctx[i * kH + h * kD + e] += row[j] * v[j * kH + h * kD + e];
      }
    const Matrix proj = mul(ctx, w.out, kS, kH, kH);
    std::copy(proj.begin(), proj.end(), attention.begin() + b * kS * kH);
    xs.push_back(xb), qs.push_back(q), ks.push_back(k), vs.push_back(v), ps.push_back(p);
    ctxs.push_back(ctx);
  }
  const Matrix r1 = add(add(attention, w.out_bias), x);
  const Norm n1 = layer_norm(r1, w.g1, w.b1, kT, kH);
  const Matrix hidden = add(mul(n1.y, w.ffn_in, kT, kH, kF), w.ffn_in_bias);
  Matrix act(hidden.size());
  for (size_t i = 0; i < act.size(); ++i) act[i] = gelu(hidden[i]);
  const Matrix r2 = add(add(mul(act, w.ffn_out, kT, kF, kH), w.ffn_out_bias), n1.y);
  const Norm n2 = layer_norm(r2, w.g2, w.b2, kT, kH);

  d.g1.assign(kH, 0), d.b1.assign(kH, 0), d.g2.assign(kH, 0), d.b2.assign(kH, 0);
  const Matrix dr2 = layer_norm_grad(n2, dy, w.g2, kT, kH, d.g2, d.b2);
  d.ffn_out_bias = column_sums(dr2, kT, kH);
  d.ffn_out = mul(act, dr2, kF, kT, kH, true);
  Matrix dhidden = mul(dr2, w.ffn_out, kT, kH, kF, false, true);
  for (size_t i = 0; i < dhidden.size(); ++i) dhidden[i] *= gelu_grad(hidden[i]);
  d.ffn_in_bias = column_sums(dhidden, kT, kF);
  d.ffn_in = mul(n1.y, dhidden, kH, kT, kF, true);
  const Matrix dn1 = add(mul(dhidden, w.ffn_in, kT, kF, kH, false, true), dr2);
  const Matrix dr1 = layer_norm_grad(n1, dn1, w.g1, kT, kH, d.g1, d.b1);
  d.out_bias = column_sums(dr1, kT, kH);
  d.out.assign(kH * kH, 0), d.qkv_t.assign(3 * kH * kH, 0);
  d.dx = dr1;
  for (size_t b = 0; b < kB; ++b) {
    const Matrix da(dr1.begin() + b * kS * kH, dr1.begin() + (b + 1) * kS * kH);
    d.out = add(d.out, mul(ctxs[b], da, kH, kS, kH, true));
    const Matrix dctx = mul(da, w.out, kS, kH, kH, false, true);
    Matrix dq(kS * kH, 0.0), dk(kS * kH, 0.0), dv(kS * kH, 0.0);
    for (size_t h = 0; h < kHeads; ++h)
      for (size_t i = 0; i < kS; ++i) {
        const double* p = &ps[b][(h * kS + i) * kS];
        std::vector<double> dp(kS);
        double dot = 0;
        for (size_t j = 0; j < kS; ++j) {
          dp[j] = 0;
          for (size_t e = 0; e < kD; ++e) {
            dp[j] += dctx[i * kH + h * kD + e] * vs[b][j * kH + h * kD + e];
            dv[j * kH + h * kD + e] += p[j] * dctx[i * kH + h * kD + e];
          }
          dot += dp[j] * p[j];
        }
        for (size_t j = 0; j < kS; ++j) {
          const double ds = p[j] * (dp[j] - dot) * scale;
          for (size_t e = 0; e < kD; ++e) {
            dq[i * kH + h * kD + e] += ds * ks[b][j * kH + h * kD + e];
            dk[j * kH + h * kD + e] += ds * qs[b][i * kH + h * kD + e];
          }
        }
      }
    Matrix dqkv(kS * 3 * kH);  // [S x 3H]
    for (size_t t = 0; t < kS; ++t)
      for (size_t j = 0; j < kH; ++j) {
        dqkv[t * 3 * kH + j] = dq[t * kH + j];
        dqkv[t * 3 * kH + kH + j] = dk[t * kH + j];
        dqkv[t * 3 * kH + 2 * kH + j] = dv[t * kH + j];
      }
    d.qkv_t = add(d.qkv_t, mul(dqkv, xs[b], 3 * kH, kS, kH, true));
    const Matrix dxb = mul(dqkv, w.qkv_t, kS, 3 * kH, kH);
    for (size_t i = 0; i < dxb.size(); ++i) d.dx[b * kS * kH + i] += dxb[i];
  }
  return n2.y;
}

double relative_error(const std::vector<float>& got, const Matrix& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return std::sqrt(num / den);
}

TEST(OpsTransformer, EncoderLayerForwardAndBackwardMatchTheEquations) {
  Graph g(Target::preset("mk2", 64));
  ops::EncoderShape shape;
  shape.hidden = kH, shape.heads = kHeads, shape.ffn = kF, shape.seq = kS, shape.sequences = kB;
  const ops::EncoderWeights w = ops::add_encoder_weights(g, shape);
  const Tensor x = g.add_variable(DType::kF32, {kT, kH}, "x");
  const Tensor mask = g.add_variable(DType::kF32, {kB, kS}, "mask");
  const Tensor dy = g.add_variable(DType::kF32, {kT, kH}, "dy");
  g.map_evenly(x, 0, 16, kH);
  g.set_tile_mapping(mask, 5);
  g.map_evenly(dy, 20, 8, kH);
  std::vector<ops::LayerStep> steps;
  ops::EncoderOptions options;
  options.packed = true;
  const ops::EncoderForward f = ops::encoder_forward(g, steps, shape, w, x, mask, options);
  const size_t forward_steps = steps.size();
  const ops::EncoderGrads d = ops::encoder_backward(g, steps, shape, w, f, dy, options);
  EXPECT_EQ(ops::row_cuts(g.tensor(f.hidden)).starts, (std::vector<size_t>{0, 64}));
  // Every product's flops: forward 2 T H (3H + H + 2F) + 4 S^2 H a sequence; backward twice that.
  const double forward_flops = 2.0 * kT * kH * (3 * kH + kH + 2 * kF) + kB * 4.0 * kS * kS * kH;
  std::vector<ops::LayerStep> fwd(steps.begin(), steps.begin() + forward_steps);
  EXPECT_EQ(ops::flops_of(fwd), forward_flops);
  EXPECT_EQ(ops::flops_of(steps), 3 * forward_flops);
  const Executable exe = compile(g, ops::sequence_of(steps));
  Device device(exe);

  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  Weights hw;
  ops::reference::EncoderValues bits_of;  // the same weights for the host's run of the layer
  const auto half = [&](const Tensor t, double range, Matrix& host, std::vector<uint16_t>& bits) {
    const size_t n = g.tensor(t).elements;
    std::vector<float> v(n);
    for (float& e : v) e = static_cast<float>(range) * uniform(rng);
    bits = ops::reference::cast_to_f16(v);
    host.resize(n);
    for (size_t i = 0; i < n; ++i) host[i] = iss::fpu::f16_value(bits[i]);
    device.write_tensor(g.tensor(t).name, bits.data(), n * 2);
  };
  const auto single = [&](const Tensor t, double offset, double range, Matrix& host,
                          std::vector<float>& values) {
    const size_t n = g.tensor(t).elements;
    std::vector<float> v(n);
    for (float& e : v) e = static_cast<float>(offset + range * uniform(rng));
    host.assign(v.begin(), v.end());
    values = v;
    device.write_tensor(g.tensor(t).name, v.data(), n * 4);
  };
  half(w.qkv_t, 0.3, hw.qkv_t, bits_of.qkv_t);
  half(w.out, 0.2, hw.out, bits_of.out);
  half(w.ffn_in, 0.2, hw.ffn_in, bits_of.ffn_in);
  half(w.ffn_out, 0.15, hw.ffn_out, bits_of.ffn_out);
  single(w.out_bias, 0, 0.1, hw.out_bias, bits_of.out_bias);
  single(w.ffn_in_bias, 0, 0.1, hw.ffn_in_bias, bits_of.ffn_in_bias);
  single(w.ffn_out_bias, 0, 0.1, hw.ffn_out_bias, bits_of.ffn_out_bias);
  single(w.gamma1, 1, 0.1, hw.g1, bits_of.gamma1);
  single(w.beta1, 0, 0.1, hw.b1, bits_of.beta1);
  single(w.gamma2, 1, 0.1, hw.g2, bits_of.gamma2);
  single(w.beta2, 0, 0.1, hw.b2, bits_of.beta2);
  Matrix hx, hdy;
  std::vector<float> x_values, dy_values;
  single(x, 0, 1, hx, x_values);
  single(dy, 0, 1, hdy, dy_values);
  // Packed rows: the first holds two sequences (tokens 0-9 and 10-15), the second one sequence
  // and 5 tokens of padding (id 0). A token attends to its own sequence's tokens only.
  std::vector<float> ids(kB * kS, 1.0f);
  for (size_t j = 10; j < kS; ++j) ids[j] = 2.0f;
  for (size_t j = kS - 5; j < kS; ++j) ids[kS + j] = 0.0f;
  device.write_tensor("mask", ids.data(), ids.size() * 4);
  Matrix hmask(kB * kS * kS);
  for (size_t b = 0; b < kB; ++b)
    for (size_t i = 0; i < kS; ++i)
      for (size_t j = 0; j < kS; ++j)
        hmask[(b * kS + i) * kS + j] = ids[b * kS + i] == ids[b * kS + j] ? 0.0 : -10000.0;
  device.run();

  // The host's run of the same operations: every result equal bit for bit.
  const ops::reference::EncoderForwardValues hf =
      ops::reference::encoder_forward(steps, shape, bits_of, x_values, ids, options);
  const ops::reference::EncoderGradValues hd =
      ops::reference::encoder_backward(steps, shape, bits_of, hf, dy_values, options);
  Grads want;
  const Matrix y = reference(hw, hx, hmask, hdy, want);
  const auto read = [&](Tensor t) {
    std::vector<float> out(g.tensor(t).elements);
    device.read_tensor(g.tensor(t).name, out.data(), out.size() * 4);
    return out;
  };
  const struct {
    const char* what;
    Tensor t;
    const Matrix& want;
    const std::vector<float>& host;
  } checks[] = {
      {"y", f.y, y, hf.y},
      {"dx", d.dx, want.dx, hd.dx},
      {"qkv_t", d.qkv_t, want.qkv_t, hd.qkv_t},
      {"out", d.out, want.out, hd.out},
      {"out_bias", d.out_bias, want.out_bias, hd.out_bias},
      {"ffn_in", d.ffn_in, want.ffn_in, hd.ffn_in},
      {"ffn_in_bias", d.ffn_in_bias, want.ffn_in_bias, hd.ffn_in_bias},
      {"ffn_out", d.ffn_out, want.ffn_out, hd.ffn_out},
      {"ffn_out_bias", d.ffn_out_bias, want.ffn_out_bias, hd.ffn_out_bias},
      {"gamma1", d.gamma1, want.g1, hd.gamma1},
      {"beta1", d.beta1, want.b1, hd.beta1},
      {"gamma2", d.gamma2, want.g2, hd.gamma2},
      {"beta2", d.beta2, want.b2, hd.beta2},
  };
  for (const auto& c : checks) {
    const std::vector<float> got = read(c.t);
    ASSERT_EQ(got.size(), c.want.size()) << c.what;
    ASSERT_EQ(c.host.size(), got.size()) << c.what;
    EXPECT_EQ(std::memcmp(got.data(), c.host.data(), got.size() * 4), 0)
        << c.what << ": the tiles' and the host's runs differ";
    const double error = relative_error(got, c.want);
    EXPECT_LT(error, 0.005) << c.what;  // measured: 3e-5 to 4.8e-4
    RecordProperty(c.what, std::to_string(error));
  }
}

// A layer given a range of tiles (a pipeline stage's chip) keeps every tensor it makes there:
// its weights, activations, products' staging and partial sums, forward and backward; and a
// transpose of its output stays on the output's chip.
TEST(OpsTransformer, ALayerStaysOnItsTiles) {
  Graph g(Target::preset("m2000", 32));  // 4 chips of 32 tiles; the layer on chip 2
  ops::EncoderShape shape;
  shape.hidden = kH, shape.heads = kHeads, shape.ffn = kF, shape.seq = kS, shape.sequences = kB;
  ops::EncoderOptions options;
  options.first_tile = 64;
  options.tiles = 32;
  options.packed = true;
  const ops::EncoderWeights w = ops::add_encoder_weights(g, shape, options);
  const Tensor x = g.add_variable(DType::kF32, {kT, kH}, "x");
  const Tensor mask = g.add_variable(DType::kF32, {kB, kS}, "mask");
  const Tensor dy = g.add_variable(DType::kF32, {kT, kH}, "dy");
  g.map_evenly(x, 64, 16, kH);
  g.set_tile_mapping(mask, 70);
  g.map_evenly(dy, 80, 8, kH);
  std::vector<ops::LayerStep> steps;
  const ops::EncoderForward f = ops::encoder_forward(g, steps, shape, w, x, mask, options);
  ops::encoder_backward(g, steps, shape, w, f, dy, options);
  Program transposed = Sequence({});  // and an operation that makes a new tensor from its input
  ops::transpose(g, transposed, f.y, "layer.y_t");
  size_t checked = 0;
  for (const TensorInfo& t : g.tensors()) {
    if (t.is_view()) continue;
    ++checked;
    for (const Interval& m : t.mapping)
      EXPECT_TRUE(m.tile >= 64 && m.tile < 96) << t.name << " has elements on tile " << m.tile;
  }
  EXPECT_GT(checked, 200u);
  compile(g, ops::sequence_of(steps));  // and it compiles
  options.first_tile = 100;             // tiles 100 to 139 of a graph of 128: refused
  options.tiles = 40;
  EXPECT_THROW(ops::add_encoder_weights(g, shape, options), GraphError);
}

TEST(OpsTransformerErrors, ShapesTheLayerCannotTakeAreRefused) {
  Graph g(Target::preset("mk2", 16));
  ops::EncoderShape shape;
  shape.hidden = 30, shape.heads = 4, shape.ffn = 8, shape.seq = 4, shape.sequences = 1;
  EXPECT_THROW(
      {
        try {
          ops::add_encoder_weights(g, shape);
        } catch (const GraphError& e) {
          EXPECT_THAT(e.what(), HasSubstr("the heads must divide the hidden size"));
          throw;
        }
      },
      GraphError);
  shape.hidden = 32;
  const ops::EncoderWeights w = ops::add_encoder_weights(g, shape);
  const Tensor x = g.add_variable(DType::kF32, {4, 31}, "x");
  const Tensor mask = g.add_variable(DType::kF32, {1, 4}, "mask");
  g.map_evenly(x, 0, 4);
  g.set_tile_mapping(mask, 0);
  std::vector<ops::LayerStep> steps;
  try {
    ops::encoder_forward(g, steps, shape, w, x, mask);
    ADD_FAILURE() << "a [4 x 31] input was taken";
  } catch (const GraphError& e) {
    EXPECT_THAT(e.what(),
                HasSubstr("layer: input 'x' must be a mapped f32 tensor of shape {4, 32}"));
  }
}

}  // namespace
}  // namespace ipu::test

// The host references of the elementwise, row and training operations: the same f32
// operations in the same order as the codelets (sdk/ops/elementwise.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "firmware/codelets/ops_math.h"
#include "iss/fpu.h"
#include "sdk/ops/elementwise.h"
#include "sdk/ops/op_support.h"
#include "sdk/ops/pieces.h"

// ops_math.h's e^x on the host: the arithmetic of the tile's ipu.f32exp.
extern "C" float ipu_ops_host_expf(float x) {
  namespace fpu = ipu::iss::fpu;
  uint32_t flags = 0;
  return fpu::float_of(fpu::exp(fpu::bits_of(x), flags));
}

namespace ipu::sdk::ops {

namespace reference {

std::vector<float> binary(BinaryOp op, const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<float> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const float x = a[i], y = b[i % b.size()];
    switch (op) {
      case BinaryOp::kAdd: out[i] = x + y; break;
      case BinaryOp::kSub: out[i] = x - y; break;
      case BinaryOp::kMul: out[i] = x * y; break;
      case BinaryOp::kMulGeluGrad: out[i] = x * ipu_ops_gelu_grad(y); break;
      case BinaryOp::kMulTanhGrad: out[i] = x * (1.0f - y * y); break;
    }
  }
  return out;
}

std::vector<float> unary(UnaryOp op, const std::vector<float>& a, float k) {
  std::vector<float> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const float x = a[i];
    switch (op) {
      case UnaryOp::kRelu: out[i] = x > 0.0f ? x : 0.0f; break;
      case UnaryOp::kGelu: out[i] = ipu_ops_gelu(x); break;
      case UnaryOp::kScale: out[i] = k * x; break;
      case UnaryOp::kExp: out[i] = ipu_ops_expf(x); break;
      case UnaryOp::kTanh: out[i] = ipu_ops_tanhf(x); break;
    }
  }
  return out;
}

std::vector<float> widen_f16(const std::vector<uint16_t>& a) {
  std::vector<float> out(a.size());
  uint32_t flags = 0;  // the tiles' widening (ipu.f16v2tof32) raises none we keep
  for (size_t i = 0; i < a.size(); ++i) {
    const uint32_t bits = iss::fpu::f16_to_f32(a[i], flags);
    std::memcpy(&out[i], &bits, 4);
  }
  return out;
}

std::vector<uint16_t> cast_to_f16(const std::vector<float>& a) {
  std::vector<uint16_t> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const uint32_t u = bits_of(a[i]);
    const uint32_t sign = (u >> 16) & 0x8000u, magnitude = u & 0x7fffffffu;
    if (magnitude > 0x7f800000u) {  // NaN: the canonical one
      out[i] = 0x7e00;
      continue;
    }
    // Scale to units of the f16 result's last place, then round to nearest even.
    const double x = std::fabs(static_cast<double>(a[i]));
    int e;
    std::frexp(x, &e);                          // x = m 2^e, m in [0.5, 1)
    const int quantum = std::max(e - 11, -24);  // f16: 11 significant bits, subnormal from 2^-24
    const double scaled = std::ldexp(x, -quantum);
    double q = std::nearbyint(scaled);  // the host's default rounding: nearest even
    const double rounded = std::ldexp(q, quantum);
    uint16_t h;
    if (rounded >= 65520.0 || magnitude == 0x7f800000u) {
      h = 0x7c00;  // overflow to infinity
    } else if (rounded == 0) {
      h = 0;
    } else {
      int re;
      const double m = std::frexp(rounded, &re);
      if (re - 1 < -14) {  // subnormal: units of 2^-24
        h = static_cast<uint16_t>(std::ldexp(rounded, 24));
      } else {
        h = static_cast<uint16_t>(((re - 1 + 15) << 10) |
                                  (static_cast<uint32_t>(std::ldexp(m, 11)) & 0x3ff));
      }
    }
    out[i] = static_cast<uint16_t>(sign | h);
  }
  return out;
}

std::vector<uint16_t> cast_to_f16_stochastic(const std::vector<float>& a,
                                             const std::vector<std::pair<size_t, size_t>>& ranges,
                                             uint64_t seed, std::optional<uint32_t> step) {
  std::vector<uint16_t> out(a.size());
  for (const auto& [lo, hi] : ranges) {
    auto [s0, s1] = dropout_state(seed, lo);
    if (step) ipu_ops_salt_state(&s0, &s1, *step);
    uint64_t bits = 0;
    for (size_t i = lo; i < hi; ++i) {
      if ((i - lo) % 2 == 0) bits = ipu_ops_prng_next(&s0, &s1);  // one draw a pair
      const auto random = static_cast<uint32_t>((i - lo) % 2 == 0 ? bits : bits >> 32);
      const uint32_t u = bits_of(a[i]);
      const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
      if ((u & 0x7fffffffu) > 0x7f800000u) {
        out[i] = 0x7e00;
        continue;
      }
      if ((u & 0x7fffffffu) == 0x7f800000u) {
        out[i] = static_cast<uint16_t>(sign | 0x7c00);
        continue;
      }
      // |x| between two multiples of the f16 unit at its magnitude (2^-24 at the least): up
      // when the discarded fraction, as 32 bits truncated, plus the random word reaches 2^32.
      const double x = std::fabs(static_cast<double>(a[i]));
      int e;
      std::frexp(x, &e);
      const int quantum = std::max(e - 11, -24);
      const double scaled = std::ldexp(x, -quantum);
      double units = std::floor(scaled);
      const auto fraction = static_cast<uint64_t>(std::ldexp(scaled - units, 32));
      if (fraction + random >= (uint64_t{1} << 32)) units += 1;
      const double rounded = std::ldexp(units, quantum);
      uint16_t h;
      if (rounded >= 65536.0) {
        h = 0x7c00;
      } else if (rounded == 0) {
        h = 0;
      } else {
        int re;
        const double mant = std::frexp(rounded, &re);
        h = re - 1 < -14
                ? static_cast<uint16_t>(std::ldexp(rounded, 24))
                : static_cast<uint16_t>(((re - 1 + 15) << 10) |
                                        (static_cast<uint32_t>(std::ldexp(mant, 11)) & 0x3ff));
      }
      out[i] = static_cast<uint16_t>(sign | h);
    }
  }
  return out;
}

std::vector<uint16_t> accumulate_f16(const std::vector<uint16_t>& sum,
                                     const std::vector<float>& grad,
                                     const std::vector<std::pair<size_t, size_t>>& ranges,
                                     bool stochastic, uint64_t seed, uint32_t draw) {
  const std::vector<float> added = binary(BinaryOp::kAdd, widen_f16(sum), grad);
  return stochastic ? cast_to_f16_stochastic(added, ranges, seed, draw) : cast_to_f16(added);
}

std::vector<float> reduce_rows(ReduceOp op, const std::vector<float>& x, size_t columns) {
  std::vector<float> out(x.size() / columns);
  for (size_t r = 0; r < out.size(); ++r) {
    const float* row = &x[r * columns];
    float acc = op == ReduceOp::kSumSquares ? row[0] * row[0] : row[0];
    for (size_t c = 1; c < columns; ++c) {
      if (op == ReduceOp::kMax)
        acc = row[c] > acc ? row[c] : acc;
      else if (op == ReduceOp::kSumSquares)
        acc += row[c] * row[c];
      else
        acc += row[c];
    }
    out[r] = op == ReduceOp::kMean ? acc / static_cast<float>(columns) : acc;
  }
  return out;
}

namespace {
// One row's softmax of row (x scale, unless 1) + mask (no mask: row alone).
void softmax_row(const float* row, const float* mask, size_t columns, float scale, float* o) {
  const auto score = [&](size_t c) {
    const float s = scale != 1.0f ? row[c] * scale : row[c];
    return mask ? s + mask[c] : s;
  };
  float m = score(0);
  for (size_t c = 0; c < columns; ++c) {
    o[c] = score(c);
    m = o[c] > m ? o[c] : m;
  }
  float sum = 0.0f;
  for (size_t c = 0; c < columns; ++c) {
    o[c] = ipu_ops_expf(o[c] - m);
    sum += o[c];
  }
  for (size_t c = 0; c < columns; ++c) o[c] = o[c] / sum;
}
}  // namespace

std::vector<float> softmax_rows(const std::vector<float>& x, const std::vector<float>* mask,
                                size_t columns, float scale) {
  std::vector<float> out(x.size());
  for (size_t r = 0; r < x.size() / columns; ++r)
    softmax_row(&x[r * columns], mask ? mask->data() : nullptr, columns, scale, &out[r * columns]);
  return out;
}

std::vector<float> softmax_rows_packed(const std::vector<float>& x,
                                       const std::vector<float>& sequence_ids, size_t columns,
                                       float scale) {
  std::vector<float> out(x.size()), mask(columns);
  for (size_t r = 0; r < x.size() / columns; ++r) {
    const float query = sequence_ids[r % columns];
    for (size_t c = 0; c < columns; ++c) mask[c] = sequence_ids[c] == query ? 0.0f : kMaskedOut;
    softmax_row(&x[r * columns], mask.data(), columns, scale, &out[r * columns]);
  }
  return out;
}

std::vector<float> layer_norm(const std::vector<float>& x, const std::vector<float>& gamma,
                              const std::vector<float>& beta, float eps, size_t columns,
                              std::vector<float>* mean_out, std::vector<float>* inv_out) {
  std::vector<float> y(x.size());
  for (size_t r = 0; r < x.size() / columns; ++r) {
    const float* row = &x[r * columns];
    const auto n = static_cast<uint32_t>(columns);
    float part[IPU_OPS_ROW_SLICES];  // sums in six column slices (ops_math.h)
    for (uint32_t s = 0; s < IPU_OPS_ROW_SLICES; ++s) {
      float sum = 0.0f;
      for (uint32_t c = ipu_ops_slice_begin(n, s); c < ipu_ops_slice_begin(n, s + 1); ++c)
        sum += row[c];
      part[s] = sum;
    }
    const float mean = ipu_ops_slices_total(part, 1) / static_cast<float>(columns);
    for (uint32_t s = 0; s < IPU_OPS_ROW_SLICES; ++s) {
      float squares = 0.0f;
      for (uint32_t c = ipu_ops_slice_begin(n, s); c < ipu_ops_slice_begin(n, s + 1); ++c) {
        const float d = row[c] - mean;
        squares += d * d;
      }
      part[s] = squares;
    }
    const float inv =
        ipu_ops_rsqrtf(ipu_ops_slices_total(part, 1) / static_cast<float>(columns) + eps);
    for (size_t c = 0; c < columns; ++c)
      y[r * columns + c] = ((row[c] - mean) * inv) * gamma[c] + beta[c];
    if (mean_out) mean_out->push_back(mean);
    if (inv_out) inv_out->push_back(inv);
  }
  return y;
}

std::vector<float> softmax_grad_rows(const std::vector<float>& y, const std::vector<float>& dy,
                                     size_t columns, float scale) {
  std::vector<float> dx(y.size());
  for (size_t r = 0; r < y.size() / columns; ++r) {
    float s = 0.0f;
    for (size_t c = 0; c < columns; ++c) s += dy[r * columns + c] * y[r * columns + c];
    for (size_t c = 0; c < columns; ++c) {
      const float d = y[r * columns + c] * (dy[r * columns + c] - s);
      dx[r * columns + c] = scale != 1.0f ? d * scale : d;
    }
  }
  return dx;
}

std::vector<float> layer_norm_grad(const std::vector<float>& x, const std::vector<float>& dy,
                                   const std::vector<float>& gamma, const std::vector<float>& mean,
                                   const std::vector<float>& inv_std, size_t columns,
                                   const std::vector<size_t>& partial_rows,
                                   std::vector<float>* dgamma, std::vector<float>* dbeta) {
  std::vector<float> dx(x.size());
  std::vector<float> dg(partial_rows.size() * columns), db(partial_rows.size() * columns);
  std::vector<float> part_g(columns), part_b(columns);
  size_t row = 0;
  for (size_t part = 0; part < partial_rows.size(); ++part) {
    std::fill(part_g.begin(), part_g.end(), 0.0f);
    std::fill(part_b.begin(), part_b.end(), 0.0f);
    for (size_t i = 0; i < partial_rows[part]; ++i, ++row) {
      const float* xr = &x[row * columns];
      const float* d = &dy[row * columns];
      const auto n = static_cast<uint32_t>(columns);
      float slice_g[IPU_OPS_ROW_SLICES], slice_gx[IPU_OPS_ROW_SLICES];  // six column slices
      for (uint32_t s = 0; s < IPU_OPS_ROW_SLICES; ++s) {
        float sum_g = 0.0f, sum_gx = 0.0f;
        for (uint32_t c = ipu_ops_slice_begin(n, s); c < ipu_ops_slice_begin(n, s + 1); ++c) {
          const float xhat = (xr[c] - mean[row]) * inv_std[row], g = d[c] * gamma[c];
          sum_g += g;
          sum_gx += g * xhat;
          part_g[c] += d[c] * xhat;
          part_b[c] += d[c];
        }
        slice_g[s] = sum_g;
        slice_gx[s] = sum_gx;
      }
      const float a = ipu_ops_slices_total(slice_g, 1) / static_cast<float>(columns),
                  b = ipu_ops_slices_total(slice_gx, 1) / static_cast<float>(columns);
      for (size_t c = 0; c < columns; ++c) {
        const float xhat = (xr[c] - mean[row]) * inv_std[row], g = d[c] * gamma[c];
        dx[row * columns + c] = inv_std[row] * ((g - a) - xhat * b);
      }
    }
    std::copy(part_g.begin(), part_g.end(), dg.begin() + static_cast<ptrdiff_t>(part * columns));
    std::copy(part_b.begin(), part_b.end(), db.begin() + static_cast<ptrdiff_t>(part * columns));
  }
  if (dgamma) *dgamma = sum_partials(std::move(dg), columns);
  if (dbeta) *dbeta = sum_partials(std::move(db), columns);
  return dx;
}

std::vector<float> dropout(const std::vector<float>& x,
                           const std::vector<std::pair<size_t, size_t>>& ranges, float rate,
                           uint64_t seed) {
  std::vector<float> out(x.size());
  const auto keep = static_cast<uint32_t>(
      std::min(4294967295.0, std::floor((1.0 - static_cast<double>(rate)) * 4294967296.0)));
  const float scale = 1.0f / (1.0f - rate);
  for (const auto& [lo, hi] : ranges) {
    auto [s0, s1] = dropout_state(seed, lo);
    for (size_t i = lo; i < hi; ++i) {
      const auto r = static_cast<uint32_t>(ipu_ops_prng_next(&s0, &s1));
      out[i] = r < keep ? x[i] * scale : 0.0f;
    }
  }
  return out;
}

std::vector<float> cross_entropy(const std::vector<float>& logits,
                                 const std::vector<uint32_t>& labels, size_t columns,
                                 float grad_scale, std::vector<float>* loss,
                                 const std::vector<size_t>& slices) {
  std::vector<float> dx(logits.size());
  const auto end_of = [&](size_t i) { return i + 1 < slices.size() ? slices[i + 1] : columns; };
  const auto max_of = [](const float* x, size_t n) {
    float m = x[0];
    for (size_t c = 1; c < n; ++c) m = x[c] > m ? x[c] : m;
    return m;
  };
  for (size_t r = 0; r < labels.size(); ++r) {
    const float* x = &logits[r * columns];
    float* d = &dx[r * columns];
    const uint32_t label = labels[r];
    std::vector<float> maxes;
    for (size_t i = 0; i < slices.size(); ++i)
      maxes.push_back(max_of(x + slices[i], end_of(i) - slices[i]));
    const float m = max_of(maxes.data(), maxes.size());
    float s = 0.0f, xl = 0.0f;
    for (size_t i = 0; i < slices.size(); ++i) {
      float part = 0.0f;
      for (size_t c = slices[i]; c < end_of(i); ++c) {
        d[c] = ipu_ops_expf(x[c] - m);
        part += d[c];
      }
      s += part;
      xl += label >= slices[i] && label < end_of(i) ? x[label] : 0.0f;
    }
    if (label == kIgnoredLabel) {
      if (loss) loss->push_back(0.0f);
      std::fill(d, d + columns, 0.0f);
      continue;
    }
    if (loss) loss->push_back(label < columns ? (m + ipu_ops_logf(s)) - xl : std::nanf(""));
    for (size_t c = 0; c < columns; ++c)
      d[c] = (d[c] / s - (c == label ? 1.0f : 0.0f)) * grad_scale;
  }
  return dx;
}

std::vector<float> embedding_lookup(const std::vector<float>& table_t, size_t entries,
                                    const std::vector<uint32_t>& indices) {
  const size_t features = table_t.size() / entries;
  std::vector<float> out(features * indices.size());
  for (size_t h = 0; h < features; ++h)
    for (size_t r = 0; r < indices.size(); ++r)
      out[h * indices.size() + r] =
          indices[r] < entries ? table_t[h * entries + indices[r]] : std::nanf("");
  return out;
}

std::vector<float> embedding_grad(const std::vector<float>& dout_t,
                                  const std::vector<uint32_t>& indices, size_t entries) {
  const size_t features = dout_t.size() / indices.size();
  std::vector<float> grad(features * entries, 0.0f);
  for (size_t h = 0; h < features; ++h)
    for (size_t r = 0; r < indices.size(); ++r)
      if (indices[r] < entries) grad[h * entries + indices[r]] += dout_t[h * indices.size() + r];
  return grad;
}

std::vector<float> lamb_direction(const std::vector<float>& w, const std::vector<float>& g,
                                  std::vector<float>& m, std::vector<float>& v,
                                  std::vector<float>& u, const float corrections[2],
                                  const AdamOptions& o,
                                  const std::vector<std::pair<size_t, size_t>>& ranges) {
  const float c1 = corrections[0], c2 = corrections[1];
  const float one_b1 = 1.0f - o.beta1, one_b2 = 1.0f - o.beta2;
  u.assign(w.size(), 0.0f);
  std::vector<float> sums;
  for (const auto& [lo, hi] : ranges) {
    float sum_w = 0.0f, sum_u = 0.0f;
    for (size_t i = lo; i < hi; ++i) {
      m[i] = o.beta1 * m[i] + one_b1 * g[i];
      v[i] = o.beta2 * v[i] + one_b2 * (g[i] * g[i]);
      u[i] = (m[i] * c1) / (std::sqrt(v[i] * c2) + o.epsilon) + o.weight_decay * w[i];
      sum_w += w[i] * w[i];
      sum_u += u[i] * u[i];
    }
    sums.push_back(sum_w);
    sums.push_back(sum_u);
  }
  return sum_partials(std::move(sums), 2);
}

void lamb_apply(std::vector<float>& w, const std::vector<float>& u,
                const std::vector<float>& totals, const AdamOptions& o) {
  const float sw = totals.at(0), su = totals.at(1);
  const float ratio = sw > 0.0f && su > 0.0f ? std::sqrt(sw) / std::sqrt(su) : 1.0f;
  const float step = o.learning_rate * ratio;
  for (size_t i = 0; i < w.size(); ++i) w[i] = w[i] - step * u[i];
}

void adam(std::vector<float>& w, const std::vector<float>& g, std::vector<float>& m,
          std::vector<float>& v, const float corrections[2], const AdamOptions& o,
          const std::vector<std::pair<size_t, size_t>>& ranges) {
  if (o.lamb) {
    std::vector<float> u;
    lamb_apply(w, u, lamb_direction(w, g, m, v, u, corrections, o, ranges), o);
    return;
  }
  const float c1 = corrections[0], c2 = corrections[1];
  const float one_b1 = 1.0f - o.beta1, one_b2 = 1.0f - o.beta2;
  for (size_t i = 0; i < w.size(); ++i) {
    m[i] = o.beta1 * m[i] + one_b1 * g[i];
    v[i] = o.beta2 * v[i] + one_b2 * (g[i] * g[i]);
    const float u = (m[i] * c1) / (std::sqrt(v[i] * c2) + o.epsilon) + o.weight_decay * w[i];
    w[i] = w[i] - o.learning_rate * u;
  }
}

}  // namespace reference

}  // namespace ipu::sdk::ops

/* Codelets of the pipelined example (examples/pipeline_app.cpp): a stack of dense layers, one
 * per chip, each layer's rows spread over its chip's tiles. Plain C without ipu.h, so the
 * example's host reference compiles this same file (both without fused multiply-adds).
 *
 * Activations are feature-major: x is width x mb (mb samples of a micro-batch); a tile holds
 * r rows of its layer's weights (r x width) and the same r rows of z, y and dy. */
#include <stdint.h>

#define PIPE_MAX_ROWS 16
#define PIPE_MAX_MB 16

static float relu(float z) { return z > 0.0f ? z : 0.0f; }

/* z = w x, y = relu(z) (or y = z on the last layer).
 *   fields: x (in width x mb), w (in r x width), z (out r x mb), y (out r x mb), r, width, mb,
 *           relu */
struct pipe_forward_fields {
  const float *x, *w;
  float *z, *y;
  uint32_t r, width, mb, relu;
};
void pipe_forward(const struct pipe_forward_fields *v) {
  for (uint32_t i = 0; i < v->r; ++i)
    for (uint32_t s = 0; s < v->mb; ++s) {
      float sum = 0.0f;
      for (uint32_t k = 0; k < v->width; ++k) sum += v->w[i * v->width + k] * v->x[k * v->mb + s];
      if (v->z) v->z[i * v->mb + s] = sum;
      v->y[i * v->mb + s] = v->relu ? relu(sum) : sum;
    }
}

/* The forward without keeping z (recomputation: the backward computes it again). */
struct pipe_forward_nosave_fields {
  const float *x, *w;
  float *y;
  uint32_t r, width, mb, relu;
};
void pipe_forward_nosave(const struct pipe_forward_nosave_fields *v) {
  const struct pipe_forward_fields f = {v->x, v->w, 0, v->y, v->r, v->width, v->mb, v->relu};
  pipe_forward(&f);
}

/* Squared error of this tile's rows: e = y - t, loss (+)= sum e^2 (reset on the first
 * micro-batch), dy = 2e.  fields: y, t (in r x mb), dy (out r x mb), loss (in/out 1), n, first */
struct pipe_loss_fields {
  const float *y, *t;
  float *dy, *loss;
  uint32_t n, first;
};
void pipe_loss(const struct pipe_loss_fields *v) {
  float loss = v->first ? 0.0f : v->loss[0];
  for (uint32_t i = 0; i < v->n; ++i) {
    const float e = v->y[i] - v->t[i];
    loss += e * e;
    v->dy[i] = 2.0f * e;
  }
  v->loss[0] = loss;
}

/* Backward of this tile's rows for one micro-batch: dz = dy where z > 0 (all of dy on the last
 * layer), gw (+)= dz x^T (reset on the first micro-batch), dx_partial = w^T dz (this tile's
 * share of the previous layer's dy; skipped when dx is null). z comes from the forward, or is
 * recomputed from x and w when the z field is null.
 *   fields: x (in width x mb), w (in r x width), z (in r x mb, or null), dy (in r x mb),
 *           gw (in/out r x width), dx (out width x mb, or null), r, width, mb, relu, first */
struct pipe_backward_fields {
  const float *x, *w, *z, *dy;
  float *gw, *dx;
  uint32_t r, width, mb, relu, first;
};
void pipe_backward(const struct pipe_backward_fields *v) {
  const uint32_t r = v->r, width = v->width, mb = v->mb;
  float dz[PIPE_MAX_ROWS * PIPE_MAX_MB];
  for (uint32_t i = 0; i < r; ++i)
    for (uint32_t s = 0; s < mb; ++s) {
      float z;
      if (v->z) {
        z = v->z[i * mb + s];
      } else {
        z = 0.0f;
        for (uint32_t k = 0; k < width; ++k) z += v->w[i * width + k] * v->x[k * mb + s];
      }
      dz[i * mb + s] = !v->relu || z > 0.0f ? v->dy[i * mb + s] : 0.0f;
    }
  for (uint32_t i = 0; i < r; ++i)
    for (uint32_t k = 0; k < width; ++k) {
      float sum = v->first ? 0.0f : v->gw[i * width + k];
      for (uint32_t s = 0; s < mb; ++s) sum += dz[i * mb + s] * v->x[k * mb + s];
      v->gw[i * width + k] = sum;
    }
  if (!v->dx) return;
  for (uint32_t k = 0; k < width; ++k)
    for (uint32_t s = 0; s < mb; ++s) {
      float sum = 0.0f;
      for (uint32_t i = 0; i < r; ++i) sum += v->w[i * width + k] * dz[i * mb + s];
      v->dx[k * mb + s] = sum;
    }
}

/* The same without z (recomputed) and/or without dx (the first layer), for vertices that bind
 * only the fields they use. */
struct pipe_backward_nodx_fields {
  const float *x, *w, *z, *dy;
  float *gw;
  uint32_t r, width, mb, relu, first;
};
void pipe_backward_nodx(const struct pipe_backward_nodx_fields *v) {
  const struct pipe_backward_fields f = {v->x,     v->w, v->z,  v->dy,   v->gw,  0,
                                         v->r,     v->width, v->mb, v->relu, v->first};
  pipe_backward(&f);
}
struct pipe_backward_rc_fields {
  const float *x, *w, *dy;
  float *gw, *dx;
  uint32_t r, width, mb, relu, first;
};
void pipe_backward_rc(const struct pipe_backward_rc_fields *v) {
  const struct pipe_backward_fields f = {v->x,     v->w, 0,     v->dy,   v->gw,  v->dx,
                                         v->r,     v->width, v->mb, v->relu, v->first};
  pipe_backward(&f);
}
struct pipe_backward_rc_nodx_fields {
  const float *x, *w, *dy;
  float *gw;
  uint32_t r, width, mb, relu, first;
};
void pipe_backward_rc_nodx(const struct pipe_backward_rc_nodx_fields *v) {
  const struct pipe_backward_fields f = {v->x,     v->w, 0,     v->dy,   v->gw,  0,
                                         v->r,     v->width, v->mb, v->relu, v->first};
  pipe_backward(&f);
}

/* out[i] = sum over p of in[p * n + i], in order: the previous layer's dy rows from every
 * tile's partial.  fields: in, out, parts, n */
struct pipe_sum_fields {
  const float *in;
  float *out;
  uint32_t parts, n;
};
void pipe_sum(const struct pipe_sum_fields *v) {
  for (uint32_t i = 0; i < v->n; ++i) {
    float s = 0.0f;
    for (uint32_t p = 0; p < v->parts; ++p) s += v->in[p * v->n + i];
    v->out[i] = s;
  }
}

/* w -= k gw.  fields: w (in/out), gw (in), n, k (f32 bits) */
struct pipe_sgd_fields {
  float *w;
  const float *gw;
  uint32_t n, k;
};
void pipe_sgd(const struct pipe_sgd_fields *v) {
  union {
    uint32_t u;
    float f;
  } k = {v->k};
  for (uint32_t i = 0; i < v->n; ++i) v->w[i] -= k.f * v->gw[i];
}

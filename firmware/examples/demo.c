/* The demo that `ipu-sim demo` runs on one tile: CRC-32 and an f32 dot product on the
 * supervisor, then the same dot product split over the six workers. Each result is checked
 * against a value known independently of the simulator; the exit status is the number of
 * mismatches. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ipu.h"

#define N 1536

static float x[N], y[N];
static float partial[IPU_WORKER_CONTEXTS];

static uint32_t crc32(const uint8_t *data, size_t size) {
  uint32_t crc = 0xffffffffu;
  for (size_t i = 0; i < size; ++i) {
    crc ^= data[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
  }
  return ~crc;
}

static float dot(const float *a, const float *b, int n) {
  float s = 0;
  for (int i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

struct slice {
  int worker;
  int begin, end;
};
static struct slice slices[IPU_WORKER_CONTEXTS];

static void dot_worker(void *arg) {
  const struct slice *s = arg;
  partial[s->worker] = dot(x + s->begin, y + s->begin, s->end - s->begin);
  printf("worker %u: partial dot over [%d, %d) = %.1f\n", ipu_context_id(), s->begin, s->end,
         (double)partial[s->worker]);
}

int main(void) {
  int errors = 0;
  printf("hello from tile 0, context %u\n", ipu_context_id());

  /* CRC-32 check value of "123456789" (the published check value of CRC-32/ISO-HDLC). */
  const uint32_t crc = crc32((const uint8_t *)"123456789", 9);
  printf("crc32(\"123456789\") = 0x%08lx (expected 0xcbf43926)\n", (unsigned long)crc);
  errors += crc != 0xcbf43926u;

  /* x[i] = i % 7, y[i] = 2: small integers, so every partial sum is exact in f32 and the
   * result is known in closed form: 2 * sum(i % 7) over i < 1536 = 2 * (219 * 21 + 0+1+2) = 9204. */
  for (int i = 0; i < N; ++i) {
    x[i] = (float)(i % 7);
    y[i] = 2.0f;
  }
  const uint64_t t0 = ipu_cycles();
  const float serial = dot(x, y, N);
  const uint64_t t1 = ipu_cycles();
  printf("supervisor dot = %.1f in %lu cycles\n", (double)serial, (unsigned long)(t1 - t0));
  errors += serial != 9204.0f;

  for (int w = 0; w < IPU_WORKER_CONTEXTS; ++w) {
    slices[w] = (struct slice){w, w * N / IPU_WORKER_CONTEXTS, (w + 1) * N / IPU_WORKER_CONTEXTS};
    ipu_run(dot_worker, &slices[w]);
  }
  ipu_join();
  const uint64_t t2 = ipu_cycles();
  float total = 0;
  for (int w = 0; w < IPU_WORKER_CONTEXTS; ++w) total += partial[w];
  printf("six workers dot = %.1f in %lu cycles\n", (double)total, (unsigned long)(t2 - t1));
  errors += total != 9204.0f;

  printf("%s\n", errors == 0 ? "demo passed" : "demo FAILED");
  return errors;
}

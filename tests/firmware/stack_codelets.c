/* Codelets whose stacks the compiler must size from their code (tests/sdk/stack_usage_test.cpp). */
#include <stdint.h>

/* Sums a[0..n) through a 1,000-word array on its stack: a frame of about 4 KB, more than a
 * small stack holds, which every worker runs at once. */
void deep_frame(const void *state) {
  const uint32_t *const *fields = (const uint32_t *const *)state;
  const float *a = (const float *)fields[0];
  float *out = (float *)fields[1];
  const uint32_t n = (uint32_t)(uintptr_t)fields[2];
  volatile float scratch[1000];
  for (uint32_t i = 0; i < 1000; ++i) scratch[i] = i < n ? a[i] : 0.0f;
  float sum = 0.0f;
  for (uint32_t i = 0; i < 1000; ++i) sum += scratch[i];
  *out = sum;
}

/* The same through a variable-length array: its frame is known only at run time. */
void vla_frame(const void *state) {
  const uint32_t *const *fields = (const uint32_t *const *)state;
  const float *a = (const float *)fields[0];
  float *out = (float *)fields[1];
  const uint32_t n = (uint32_t)(uintptr_t)fields[2];
  volatile float scratch[n];
  for (uint32_t i = 0; i < n; ++i) scratch[i] = a[i];
  float sum = 0.0f;
  for (uint32_t i = 0; i < n; ++i) sum += scratch[i];
  *out = sum;
}

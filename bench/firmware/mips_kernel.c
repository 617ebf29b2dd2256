/* Compute-bound kernel for the tile speed benchmark: CRC-32 over a 16 KiB buffer, then an f32
 * dot product, repeated. Runs on the supervisor alone; the result is checked so the work
 * cannot be optimised away and a wrong simulator shows up as a non-zero exit. */
#include <stdint.h>
#include <stdio.h>

#define BYTES 16384
#define N 4096
#ifndef ROUNDS
#define ROUNDS 320
#endif

static uint8_t buffer[BYTES];
static float x[N], y[N];

static uint32_t crc32(const uint8_t *data, int size) {
  uint32_t crc = 0xffffffffu;
  for (int i = 0; i < size; ++i) {
    crc ^= data[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
  }
  return ~crc;
}

int main(void) {
  for (int i = 0; i < BYTES; ++i) buffer[i] = (uint8_t)(i * 7 + 3);
  for (int i = 0; i < N; ++i) {
    x[i] = (float)(i % 13);
    y[i] = 0.5f;
  }
  uint32_t crc = 0;
  float dot = 0;
  for (int r = 0; r < ROUNDS; ++r) {
    buffer[r] ^= (uint8_t)r;
    crc ^= crc32(buffer, BYTES);
    float s = 0;
    for (int i = 0; i < N; ++i) s += x[i] * y[i];
    dot += s;
  }
  /* sum(i % 13) over i < 4096 = 315 * 78 + (0 + 1 + ... + 0) = 24570 + 0; x 0.5 per round.
   * 4096 = 315 * 13 + 1, so the extra element is 0: the dot is 12285 per round, exact. */
  printf("crc 0x%08lx dot %.1f\n", (unsigned long)crc, (double)dot);
  return dot == 12285.0f * ROUNDS ? 0 : 1;
}

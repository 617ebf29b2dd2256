/* Matrix products on the AMP, split over the six workers, for tile_program_test to check bit
 * for bit against a host reference. The test fills the inputs before the run and reads the
 * results after it.
 *   f16: C (16 x 48) = A (16 x 32) . B (32 x 48), f16 inputs, f32 results;
 *   f32: C (8 x 24)  = A (8 x 16)  . B (16 x 24).
 * B and C are stored transposed (one column per row) so that each column streams through the
 * AMP contiguously. K is two passes of 4 weight phases: the second pass accumulates into the
 * output. */
#include <stdint.h>

#include "ipu.h"

#define M16 16
#define K16 32
#define N16 48
#define M32 8
#define K32 16
#define N32 24

/* Inputs written by the host before the run: in .data, which crt0 leaves alone (it zeroes .bss). */
#define HOST_FILLED __attribute__((section(".data.host"), aligned(8)))
uint16_t a_f16[M16][K16] HOST_FILLED;
uint16_t bt_f16[N16][K16] HOST_FILLED;
float ct_f16[N16][M16];
float a_f32[M32][K32] HOST_FILLED;
float bt_f32[N32][K32] HOST_FILLED;
float ct_f32[N32][M32];

struct job {
  int f32;
  int first_column, columns;
};
static struct job jobs[IPU_WORKER_CONTEXTS];

static void matmul(void *arg) {
  const struct job *job = arg;
  const int rows = job->f32 ? M32 : M16;
  const int k = job->f32 ? K32 : K16;
  const int per_phase = job->f32 ? 2 : 4;  /* inputs per phase */
  const int per_pass = 4 * per_phase;
  for (int pass = 0; pass < k / per_pass; ++pass) {
    const int k0 = pass * per_pass;
    void *out = job->f32 ? (void *)ct_f32[job->first_column] : (void *)ct_f16[job->first_column];
    /* The mode comes first: ipu.ampw reads weights in the configured format. */
    ipu_amp_configure(job->f32 ? IPU_AMP_F32 : IPU_AMP_F16, 4, pass > 0, 0, out);
    /* Pack this pass's four weight phases: W_phase[row][j] = A[row][k0 + phase * per_phase + j]. */
    for (int phase = 0; phase < 4; ++phase) {
      union {
        uint16_t h[M16 * 4];
        float f[M32 * 2];
        uint64_t align;
      } w;
      for (int r = 0; r < rows; ++r)
        for (int j = 0; j < per_phase; ++j) {
          if (job->f32) w.f[r * per_phase + j] = a_f32[r][k0 + phase * per_phase + j];
          else w.h[r * per_phase + j] = a_f16[r][k0 + phase * per_phase + j];
        }
      ipu_amp_load_weights(&w, phase);
    }
    for (int c = job->first_column; c < job->first_column + job->columns; ++c) {
      const void *column = job->f32 ? (const void *)&bt_f32[c][k0] : (const void *)&bt_f16[c][k0];
      IPU_CSR_WRITE(0x7c8, (uintptr_t)column);
      ipu_amp();
      ipu_amp();
      ipu_amp();
      ipu_amp(); /* fourth phase: the column's results are written */
    }
  }
}

static void run_all(int f32, int n) {
  for (int w = 0; w < IPU_WORKER_CONTEXTS; ++w) {
    jobs[w] = (struct job){f32, w * n / IPU_WORKER_CONTEXTS, n / IPU_WORKER_CONTEXTS};
    ipu_run(matmul, &jobs[w]);
  }
  ipu_join();
}

int main(void) {
  run_all(0, N16);
  run_all(1, N32);
  return 0;
}

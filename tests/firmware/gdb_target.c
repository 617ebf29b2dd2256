/* The program tests/cli/gdb_session.sh debugs with gdb-multiarch: every tile scales a vector by
 * its tile number + 1 (scale calls square), tile 3 then runs one job on each of its six workers,
 * and every tile publishes its total in `checksum` (a watchpoint's target). Tile 0 prints the
 * sum of the workers' results, so a debugger that changed anything would show. */
#include <stdio.h>

#include "ipu.h"

#define N 8

int values[N];
volatile int checksum;
int worker_results[IPU_WORKER_CONTEXTS];

int square(int x) { return x * x; }

int scale(int factor) {
  int total = 0;
  for (int i = 0; i < N; ++i) {
    values[i] = square(i) * factor;
    total += values[i];
  }
  return total;
}

void worker_job(void *arg) { /* arg: worker_results, one result for each worker context */
  int *out = (int *)arg + (ipu_context_id() - 1);
  const int job = (int)(out - worker_results);
  *out = square(job + 1) + (int)ipu_context_id();
}

int main(void) {
  const unsigned me = ipu_tile_id();
  const int total = scale((int)me + 1);
  ipu_sync(0);
  int jobs = 0;
  if (me == 3) {
    ipu_runall(worker_job, worker_results);
    ipu_join();
    for (int w = 0; w < IPU_WORKER_CONTEXTS; ++w) jobs += worker_results[w];
  }
  checksum = total;
  ipu_sync(0);
  printf("tile %u: total %d, jobs %d\n", me, total, jobs);
  return 0;
}

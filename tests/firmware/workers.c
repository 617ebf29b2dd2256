/* Worker start/join: twelve jobs over six worker contexts (ipu.run stalls while all are busy),
 * each with its own argument, stack and errno; results checked by the supervisor. */
#include <errno.h>
#include <stdio.h>

#include "ipu.h"

#define JOBS 12

struct job {
  int n;
  long long sum;
  unsigned context;
  int own_errno;
};
static struct job jobs[JOBS];

static void sum_squares(void *arg) {
  struct job *j = arg;
  long long s = 0;
  for (int i = 1; i <= j->n; ++i) s += (long long)i * i;
  j->sum = s;
  j->context = ipu_context_id();
  errno = 100 + j->n;  /* thread-local: must not leak into other workers */
  volatile int spin = 0;
  for (int i = 0; i < 50 * j->n; ++i) spin += i;
  j->own_errno = errno;
}

int main(void) {
  int errors = 0;
  for (int i = 0; i < JOBS; ++i) {
    jobs[i].n = 10 * (i + 1);
    const unsigned id = ipu_run(sum_squares, &jobs[i]);
    if (id < 1 || id > IPU_WORKER_CONTEXTS) ++errors;
  }
  ipu_join();
  for (int i = 0; i < JOBS; ++i) {
    const long long n = jobs[i].n;
    const long long expected = n * (n + 1) * (2 * n + 1) / 6;
    if (jobs[i].sum != expected || jobs[i].own_errno != 100 + jobs[i].n || jobs[i].context == 0) {
      printf("job %d: sum %lld (expected %lld) errno %d on context %u\n", i, jobs[i].sum, expected,
             jobs[i].own_errno, jobs[i].context);
      ++errors;
    }
  }
  printf("%d jobs checked, %d errors\n", JOBS, errors);
  return errors;
}

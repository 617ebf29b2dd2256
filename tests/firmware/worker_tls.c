/* Thread-local storage: each worker context has its own block, set up once by crt0 from the
 * .tdata template (.tbss zero), and keeps it across runs as a thread keeps its own; the
 * supervisor uses the template in place. Worker w ends with counted = 100 + 11 w, runs = 2. */
#include <stdio.h>

#include "ipu.h"

static __thread int counted = 100; /* .tdata */
static __thread int runs;          /* .tbss */

static void count(void *arg) {
  counted += (int)ipu_context_id() * (int)(uintptr_t)arg;
  ++runs;
}

static void report(void *arg) {
  (void)arg;
  printf("worker %u: %d %d\n", ipu_context_id(), counted, runs);
}

int main(void) {
  ipu_runall(count, (void *)1);
  ipu_runall(count, (void *)10); /* waits for the first round's workers */
  ipu_runall(report, 0);
  ipu_join();
  printf("supervisor: %d %d\n", counted, runs);
  return 0;
}

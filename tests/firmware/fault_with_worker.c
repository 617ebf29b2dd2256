/* A fault while a worker runs: worker 1 spins until the end, the supervisor waits 3000 cycles
 * and then dereferences null. The worker's active cycles must count up to the fault (they
 * counted nothing for a worker that never exited). */
#include "ipu.h"

static void spin(void *arg) {
  volatile uint32_t *counter = arg;
  for (;;) ++*counter;
}

static volatile uint32_t counter;

int main(void) {
  ipu_run(spin, (void *)&counter);
  ipu_wait_cycles(3000);
  volatile int *p = 0;
  return *p;
}

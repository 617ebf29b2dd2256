/* Console and exit status: lines from the supervisor and from workers, exit status 42. */
#include <stdio.h>

#include "ipu.h"

static void greet(void *arg) {
  printf("worker %u says %s\n", ipu_context_id(), (const char *)arg);
}

int main(void) {
  printf("hello, tile\n");
  printf("pi is about %.4f\n", 3.14159265);
  fputs("partial line without newline...", stdout);
  printf("finished\n");
  ipu_run(greet, "hi");
  ipu_join();
  printf("no newline at the end");
  return 42;
}

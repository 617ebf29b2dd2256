/* Recursion past the end of a stack: each level of deep() keeps 256 bytes of locals, so the
 * 8 KiB stack of worker 1 (or the 16 KiB of the supervisor, with SUPERVISOR) runs out after
 * about 30 (or 60) levels. Before stack guards the worker silently overwrote worker 2's stack;
 * now the first store through sp below the stack's end faults in deep(). */
#include "ipu.h"

static int __attribute__((noinline)) deep(int n) {
  volatile char buf[256];
  buf[n & 255] = (char)n;
  if (n == 0) return buf[0];
  return deep(n - 1) + buf[n & 255];
}

static int result;

static void recurse(void *arg) { result = deep((int)(intptr_t)arg); }

int main(void) {
#ifdef SUPERVISOR
  recurse((void *)1000);
#else
  ipu_run(recurse, (void *)1000);
  ipu_join();
#endif
  return result;
}

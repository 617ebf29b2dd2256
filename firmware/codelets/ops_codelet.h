/* What the operator library's codelet files share (ops_elementwise.c, ops_training.c). */
#ifndef IPU_OPS_CODELET_H
#define IPU_OPS_CODELET_H

#include <stdint.h>
#include <string.h>

/* GCC turns a loop of zero stores into a call of memset, which picolibc (built for size) runs
 * a byte at a time: the codelets that clear a buffer clear it a word at a time instead. */
#define NO_MEMSET __attribute__((optimize("no-tree-loop-distribute-patterns")))

/* The f32 a 32-bit scalar field carries. */
static inline float f32_of(uint32_t bits) {
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

#endif

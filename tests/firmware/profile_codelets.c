/* Codelets with integer work only, for the SDK profile's tests: every instruction a worker
 * issues takes one of its turns, so a run of n instructions lasts 6(n - 1) + 1 tile cycles. */
#include <stdint.h>

/* count_up: out[0] = 1 + 2 + ... + n.  fields: out, n */
struct count_up_fields {
  uint32_t* out;
  uint32_t n;
};
void count_up(const struct count_up_fields* v) {
  uint32_t sum = 0;
  for (uint32_t i = 1; i <= v->n; ++i) {
    sum += i;
    __asm__ volatile("" : "+r"(sum)); /* one add per step: no closed form */
  }
  v->out[0] = sum;
}

/* add_one: out[0] += 1.  fields: out */
struct add_one_fields {
  uint32_t* out;
};
void add_one(const struct add_one_fields* v) { v->out[0] += 1; }

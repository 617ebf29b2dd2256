/* A firmware trap handler gets the traps when mtvec is set: each fault records mcause, mtval
 * and mepc and resumes after the faulting instruction. The exit status counts mismatches. */
#include <stdint.h>
#include <stdio.h>

static volatile uint32_t seen_cause, seen_tval, seen_epc, traps;

void __attribute__((interrupt("machine"), aligned(4))) handler(void) {
  uint32_t cause, tval, epc;
  __asm__ volatile("csrr %0, mcause" : "=r"(cause));
  __asm__ volatile("csrr %0, mtval" : "=r"(tval));
  __asm__ volatile("csrr %0, mepc" : "=r"(epc));
  seen_cause = cause;
  seen_tval = tval;
  seen_epc = epc;
  ++traps;
  __asm__ volatile("csrw mepc, %0" : : "r"(epc + 4));
}

static int check(const char *what, uint32_t cause, uint32_t tval, uint32_t epc) {
  const int bad = seen_cause != cause || seen_tval != tval || seen_epc != epc;
  printf("%s: mcause %lu mtval 0x%08lx %s\n", what, (unsigned long)seen_cause,
         (unsigned long)seen_tval, bad ? "MISMATCH" : "ok");
  return bad;
}

int main(void) {
  int errors = 0;
  uint32_t pc;
  __asm__ volatile("csrw mtvec, %0" : : "r"(handler));

  __asm__ volatile("la %0, 1f\n1: .word 0x00000000" : "=r"(pc));
  errors += check("illegal", 2, 0x00000000, pc);

  __asm__ volatile("la %0, 1f\n1: lw t0, 0(zero)" : "=r"(pc) : : "t0");
  errors += check("null load", 5, 0, pc);

  uint32_t odd = 0x4c001;
  __asm__ volatile("la %0, 1f\n1: sw zero, 0(%1)" : "=&r"(pc) : "r"(odd) : "memory");
  errors += check("misaligned store", 6, odd, pc);

  __asm__ volatile("la %0, 1f\n1: ebreak" : "=r"(pc));
  errors += check("ebreak", 3, pc, pc);

  __asm__ volatile("la %0, 1f\n li a7, 1234\n1: ecall" : "=r"(pc) : : "a7");
  errors += check("ecall", 11, 0, pc);

  printf("%lu traps handled\n", (unsigned long)traps);
  return errors + (traps != 5);
}

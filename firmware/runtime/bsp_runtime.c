/* The supervisor of an SDK-compiled program: executes the tile's control program
 * (ipu_program.h) that the compiler placed at __heap_start. Vertices run on the six workers;
 * exchange actions happen at the cycle offsets the compiler scheduled from each phase's base
 * (the supervisor's first issue after its sync, the same cycle on every tile), issued by
 * exchange_actions.S. A phase that reaches its end late stops the tile with status 70 and a
 * console line, rather than breaking the schedule silently. */
#include <stddef.h>
#include <stdio.h>

#include "ipu.h"
#include "ipu_program.h"

extern uint32_t __heap_start[]; /* word-aligned: the program's header is read a word at a time */

_Static_assert(offsetof(struct ipu_tile_program, supervisor_stack_bytes) ==
                   IPU_PROGRAM_SUPERVISOR_STACK_OFFSET &&
               offsetof(struct ipu_tile_program, worker_stack_bytes) ==
                   IPU_PROGRAM_WORKER_STACK_OFFSET,
               "crt0.S reads the stacks' sizes at these offsets");

#define EXIT_BAD_PROGRAM 71
#define EXIT_LATE 70

/* A phase's end is an offset from the cycle counter's low word at its base. An offset is a
 * difference from it under 2^31, so 32-bit arithmetic, modulo the word, is exact. */
static inline uint32_t cycles_low(void) { return IPU_CSR_READ(mcycle); }

/* A control program the runtime cannot follow (a damaged or hand-edited image): the tile stops
 * with status 71 and says what it found and at which step. */
static void __attribute__((noinline, noreturn)) bad_program(const char *what, uint32_t value,
                                                             uint32_t step) {
  printf("bad control program on tile %u: %s %lu at step %lu\n", ipu_tile_id(), what,
         (unsigned long)value, (unsigned long)step);
  ipu_exit(EXIT_BAD_PROGRAM);
}

static void __attribute__((noinline, noreturn)) late(const char *what, uint32_t by) {
  printf("exchange %s late by %lu cycles on tile %u\n", what, (unsigned long)by, ipu_tile_id());
  ipu_exit(EXIT_LATE);
}

/* Waits until `offset` cycles into the phase whose base, read right after the sync, less
 * WAIT_EARLY, is `early_base`: the wait ends WAIT_EARLY cycles before the offset, the issue
 * slots from the counter's read to what follows. Reached more than WAIT_EARLY late, it stops
 * the tile. */
#define WAIT_EARLY 6
static inline __attribute__((always_inline)) void wait_until(uint32_t early_base, uint32_t offset,
                                                            const char *what) {
  const int32_t ahead = (int32_t)(early_base + offset - cycles_low());
  if (__builtin_expect(ahead < 0, 0)) {
    if (ahead < -WAIT_EARLY) late(what, (uint32_t)(-WAIT_EARLY - ahead));
  } else {
    ipu_wait_cycles((unsigned)ahead);
  }
}

/* exchange_actions.S: syncs with `group`, issues each action from `first` to the IPU_ACTION_END
 * word at its offset from the phase's base and returns the base's low word. */
uint32_t ipu_exchange_actions(uint32_t group, const uint32_t *first);

/* Syncs with `group`, runs the phase's actions and ends the phase at `end` (0: the chip sits
 * the phase out). The end is checked against the counter, so that a phase whose actions ran
 * late stops the tile rather than cutting off words still arriving. */
static void run_exchange(uint32_t group, const uint32_t *a, uint32_t count, uint32_t end) {
  uint32_t base;
  if (count != 0) {
    base = ipu_exchange_actions(group, a);
  } else {
    ipu_sync(group);
    base = cycles_low();
  }
  if (count != 0 || end != 0) wait_until(base - WAIT_EARLY, end, "end");
  ipu_listen(0xffffffffu);
  ipu_exchange_end();
}

int main(void) {
  volatile struct ipu_tile_program *p = (volatile struct ipu_tile_program *)__heap_start;
  if (p->magic != IPU_PROGRAM_MAGIC) bad_program("magic", p->magic, 0);
  const struct ipu_step *steps = (const struct ipu_step *)(uintptr_t)p->steps;
  const uint32_t *actions = (const uint32_t *)(uintptr_t)p->actions; /* words: ipu_program.h */
  const struct ipu_vertex *vertices = (const struct ipu_vertex *)(uintptr_t)p->vertices;
  const uint32_t *programs = (const uint32_t *)(uintptr_t)p->programs;
  static uint32_t remaining[32]; /* repeat counters, by nesting depth */
  unsigned depth = 0;
  static uint32_t returns[8]; /* the steps after the calls in progress */
  static uint32_t stream_uses[IPU_STREAM_SLOT_COUNTERS];
  unsigned calls = 0;
  const uint32_t step_count = p->step_count;
  for (uint32_t pc = 0; pc < step_count;) {
    const struct ipu_step *s = &steps[pc];
    switch (s->op) {
      case IPU_STEP_END: return 0;
      case IPU_STEP_EXECUTE: {
        /* The bounds in registers: a run's asm clobbers memory, and reloading them after each
         * vertex cost three issue slots a vertex. */
        const struct ipu_vertex *v = &vertices[s->a];
        const struct ipu_vertex *const last = v + s->b;
        for (; v != last; ++v) {
          const uint32_t codelet = v->codelet;
          void *const state = (void *)(uintptr_t)v->state;
          if (codelet & IPU_VERTEX_ALL_WORKERS)
            ipu_runall((void (*)(void *))(uintptr_t)(codelet & ~IPU_VERTEX_ALL_WORKERS), state);
          else
            ipu_run((void (*)(void *))(uintptr_t)codelet, state);
        }
        ipu_join();
        ++pc;
        break;
      }
      case IPU_STEP_SYNC:
        ipu_sync(s->a);
        ipu_exchange_end();
        ++pc;
        break;
      case IPU_STEP_EXCHANGE:
      case IPU_STEP_EXCHANGE_EXTERNAL:
        run_exchange(s->op == IPU_STEP_EXCHANGE ? 0 : IPU_SYNC_EXTERNAL, &actions[s->a], s->b, s->c);
        ++pc;
        break;
      case IPU_STEP_HOST_SYNC:
        ipu_sync(0x80000000u | s->a); /* the host moves stream data while the tiles wait */
        ipu_exchange_end();
        ++pc;
        break;
      case IPU_STEP_DISPATCH: {
        ipu_sync(0x80000000u | IPU_HOST_COMMAND); /* the host writes p->command meanwhile */
        ipu_exchange_end();
        const uint32_t command = p->command;
        p->command = IPU_COMMAND_EXIT;
        if (command == IPU_COMMAND_EXIT) return 0;
        if (command >= p->program_count) bad_program("program", command, pc);
        depth = 0;
        calls = 0;
        pc = programs[command];
        break;
      }
      case IPU_STEP_GOTO: pc = s->a; break;
      case IPU_STEP_CALL:
        if (calls == 8) bad_program("call depth", calls + 1, pc);
        returns[calls++] = pc + 1;
        pc = s->a;
        break;
      case IPU_STEP_RETURN:
        if (calls == 0) bad_program("return without a call, depth", calls, pc);
        pc = returns[--calls];
        break;
      case IPU_STEP_STREAM_SLOT:
        if (s->a >= IPU_STREAM_SLOT_COUNTERS) bad_program("stream slot", s->a, pc);
        pc = (stream_uses[s->a]++ & 1) != 0 ? s->b : pc + 1;
        break;
      case IPU_STEP_REPEAT:
        if (depth == 32) bad_program("repeat depth", depth + 1, pc);
        remaining[depth++] = s->a;
        if (s->a == 0) {
          --depth;
          pc = s->b;
        } else {
          ++pc;
        }
        break;
      case IPU_STEP_REPEAT_END:
        if (depth == 0) bad_program("repeat end without a repeat, depth", depth, pc);
        if (--remaining[depth - 1] == 0) {
          --depth;
          ++pc;
        } else {
          pc = s->a + 1;
        }
        break;
      default: bad_program("step kind", s->op, pc);
    }
  }
  return 0;
}

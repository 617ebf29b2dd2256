/* The supervisor of an SDK-compiled program: executes the tile's control program
 * (ipu_program.h) that the compiler placed at __heap_start. Vertices run on the six workers;
 * exchange actions happen at the cycle offsets the compiler scheduled, measured from the cycle
 * read right after each sync (the same on every tile). An action that is already late stops
 * the tile with status 70 and a console line, rather than breaking the schedule silently. */
#include <stdio.h>

#include "ipu.h"
#include "ipu_program.h"

extern uint8_t __heap_start[];

#define EXIT_BAD_PROGRAM 71
#define EXIT_LATE 70

static uint64_t exchange_base;

static void wait_until(uint32_t offset, const char *what) {
  const uint64_t target = exchange_base + offset;
  const uint64_t now = ipu_cycles();
  if (now > target) {
    printf("exchange %s late by %lu cycles on tile %u\n", what, (unsigned long)(now - target), ipu_tile_id());
    ipu_exit(EXIT_LATE);
  }
  if (target > now + 4) ipu_wait_cycles((unsigned)(target - now - 4));
}

/* Out of line, so that the exchange's own actions keep the cost the compiler's schedule
 * assumes. */
static void __attribute__((noinline)) remote_transfer(const struct ipu_action *a) {
  const uint64_t address = (uint64_t)a->dests << 32 | a->tile;
  if (a->kind == IPU_ACTION_SM_WRITE) {
    wait_until(a->offset, "remote write");
    ipu_sm_write(address, (const void *)(uintptr_t)a->address, a->words);
  } else if (a->kind == IPU_ACTION_SM_READ) {
    wait_until(a->offset, "remote read");
    ipu_sm_read(address, (void *)(uintptr_t)a->address, a->words);
  } else {
    ipu_exit(EXIT_BAD_PROGRAM);
  }
}

static void run_exchange(const struct ipu_action *a, uint32_t count, uint32_t end) {
  for (uint32_t i = 0; i < count; ++i, ++a) {
    switch (a->kind) {
      case IPU_ACTION_RECEIVE:
        wait_until(a->offset, "receive");
        ipu_listen(a->tile);
        ipu_receive_into((void *)(uintptr_t)a->address, a->words);
        break;
      case IPU_ACTION_SEND:
        wait_until(a->offset, "send");
        ipu_send((const void *)(uintptr_t)a->address, a->words, (const ipu_destinations *)(uintptr_t)a->dests);
        break;
      case IPU_ACTION_COPY: {
        /* Word by word: picolibc's memcpy moves bytes, four times slower than the compiler's
         * cost model assumes. */
        uint32_t *to = (uint32_t *)(uintptr_t)a->dests;
        const uint32_t *from = (const uint32_t *)(uintptr_t)a->address;
        const uint32_t *const end = from + a->words; /* 5 instructions a word: 30 cycles */
        while (from != end) *to++ = *from++;
        break;
      }
      default:
        remote_transfer(a);
    }
  }
  if (count != 0 || end != 0) wait_until(end, "end"); /* end 0: the chip sits the phase out */
  ipu_listen(0xffffffffu);
  ipu_exchange_end();
}

int main(void) {
  volatile struct ipu_tile_program *p = (volatile struct ipu_tile_program *)__heap_start;
  if (p->magic != IPU_PROGRAM_MAGIC) return EXIT_BAD_PROGRAM;
  const struct ipu_step *steps = (const struct ipu_step *)(uintptr_t)p->steps;
  const struct ipu_action *actions = (const struct ipu_action *)(uintptr_t)p->actions;
  const struct ipu_vertex *vertices = (const struct ipu_vertex *)(uintptr_t)p->vertices;
  const uint32_t *programs = (const uint32_t *)(uintptr_t)p->programs;
  static uint32_t remaining[32]; /* repeat counters, by nesting depth */
  unsigned depth = 0;
  static uint32_t returns[8]; /* the steps after the calls in progress */
  static uint32_t stream_uses[IPU_STREAM_SLOT_COUNTERS];
  unsigned calls = 0;
  for (uint32_t pc = 0; pc < p->step_count;) {
    const struct ipu_step *s = &steps[pc];
    switch (s->op) {
      case IPU_STEP_END: return 0;
      case IPU_STEP_EXECUTE:
        for (uint32_t v = s->a; v < s->a + s->b; ++v) {
          if (vertices[v].codelet == 0) { /* a six-worker vertex follows: on contexts 1 to 6 */
            ipu_join();
            continue;
          }
          ipu_run((void (*)(void *))(uintptr_t)vertices[v].codelet, (void *)(uintptr_t)vertices[v].state);
        }
        ipu_join();
        ++pc;
        break;
      case IPU_STEP_SYNC:
        ipu_sync(s->a);
        exchange_base = ipu_cycles();
        ipu_exchange_end();
        ++pc;
        break;
      case IPU_STEP_EXCHANGE:
      case IPU_STEP_EXCHANGE_EXTERNAL:
        ipu_sync(s->op == IPU_STEP_EXCHANGE ? 0 : IPU_SYNC_EXTERNAL);
        exchange_base = ipu_cycles();
        run_exchange(&actions[s->a], s->b, s->c);
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
        if (command >= p->program_count) return EXIT_BAD_PROGRAM;
        depth = 0;
        calls = 0;
        pc = programs[command];
        break;
      }
      case IPU_STEP_GOTO: pc = s->a; break;
      case IPU_STEP_CALL:
        if (calls == 8) return EXIT_BAD_PROGRAM;
        returns[calls++] = pc + 1;
        pc = s->a;
        break;
      case IPU_STEP_RETURN:
        if (calls == 0) return EXIT_BAD_PROGRAM;
        pc = returns[--calls];
        break;
      case IPU_STEP_STREAM_SLOT:
        if (s->a >= IPU_STREAM_SLOT_COUNTERS) return EXIT_BAD_PROGRAM;
        pc = (stream_uses[s->a]++ & 1) != 0 ? s->b : pc + 1;
        break;
      case IPU_STEP_REPEAT:
        if (depth == 32) return EXIT_BAD_PROGRAM;
        remaining[depth++] = s->a;
        if (s->a == 0) {
          --depth;
          pc = s->b;
        } else {
          ++pc;
        }
        break;
      case IPU_STEP_REPEAT_END:
        if (--remaining[depth - 1] == 0) {
          --depth;
          ++pc;
        } else {
          pc = s->a + 1;
        }
        break;
      default: return EXIT_BAD_PROGRAM;
    }
  }
  return 0;
}

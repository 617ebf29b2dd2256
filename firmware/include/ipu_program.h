/* ipu_program.h: the per-tile control program the SDK compiler writes and the firmware runtime
 * (firmware/runtime/bsp_runtime.c) executes. Shared by C (firmware) and C++ (sdk/compiler), so
 * it uses fixed-width fields only. All addresses are tile addresses.
 *
 * The compiler places an ipu_tile_program at the tile's data base (the firmware's
 * __heap_start) and the arrays it points to after it. Every tile executes the same sequence
 * of steps (the BSP structure is global); a step with nothing to do on a tile still syncs.
 * Tile references in actions and destination lists are the tile's own chip's tile numbers, or
 * IPU_REMOTE_TILE(chip, tile) for a tile of another chip. */
#ifndef IPU_PROGRAM_H
#define IPU_PROGRAM_H

#define IPU_PROGRAM_MAGIC 0x47525049 /* "IPRG" */
/* Where in ipu_tile_program crt0.S (assembly, which sees only these lines) finds the stacks'
 * sizes. */
#define IPU_PROGRAM_SUPERVISOR_STACK_OFFSET 32
#define IPU_PROGRAM_WORKER_STACK_OFFSET 36

/* The kinds of exchange action (ipu_action below). */
#define IPU_ACTION_RECEIVE 0  /* listen to tile `with`, receive `words` words into the address */
#define IPU_ACTION_SEND 1     /* send `words` words from the address to the list at `with` */
#define IPU_ACTION_SM_WRITE 2 /* `words` words at the address to streaming memory */
#define IPU_ACTION_SM_READ 3  /* `words` words of streaming memory to the address */
#define IPU_ACTION_WORDS_BITS 20 /* words: up to 2^20 - 1 (a tile holds under 2^18) */
/* An action's first word, its wait word, holds its kind with its wait (under 2^28 cycles): a
 * receive's is the wait, a send's ~wait (negative, IPU_ACTION_SEND_LEAST or more), a
 * streaming-memory write's ~(wait | 1 << 28) and a read's ~(wait | 2 << 28). After a phase's
 * last action on a tile comes the word IPU_ACTION_END. */
#define IPU_ACTION_WAIT_BITS 28
#define IPU_ACTION_WAIT_MASK ((1 << IPU_ACTION_WAIT_BITS) - 1)
#define IPU_ACTION_SEND_LEAST (-(1 << IPU_ACTION_WAIT_BITS))
#define IPU_ACTION_END 0x80000000

/* The exchange runtime's timing (firmware/runtime/exchange_actions.S), in tile cycles. An
 * action's key instruction (ipu.recv, ipu.send, ipu.smwrite or ipu.smread) issues at the
 * phase's base plus the action's offset; the base is the supervisor's first issue after the
 * phase's sync, the same cycle on every tile (the sync's release + 6). The supervisor issues
 * once every 6 cycles: from the previous action's key (for the first action, from the base)
 * the runtime reaches this action's ipu.waitc a lead later, by this action's kind, and the key
 * issues max(6, wait) plus a tail after the ipu.waitc (a receive's ipu.recvsrc comes between).
 * So two actions' keys are at least lead + 6 + tail apart, the later one's. */
#define IPU_SUPERVISOR_ISSUE_CYCLES 6 /* one issue of the supervisor, and ipu.waitc's least */
#define IPU_ACTION_LEAD_RECEIVE 42
#define IPU_ACTION_LEAD_SEND 60
#define IPU_ACTION_LEAD_STREAMING 108
#define IPU_ACTION_TAIL_RECEIVE 6
#define IPU_ACTION_FIRST_KEY 0 /* the virtual key before a phase's first action: the base */
/* From a tile's last key in a phase to the runtime's reading the counter for the phase's end
 * (bsp_runtime.c's run_exchange), which must come no later than the end. */
#define IPU_ACTION_END_LEAD 66

#ifndef __ASSEMBLER__
#include <stdint.h>

enum ipu_step_op {
  IPU_STEP_END = 0,
  IPU_STEP_EXECUTE = 1,           /* a = first vertex, b = vertex count: run them on the workers */
  IPU_STEP_SYNC = 2,              /* a = sync group */
  IPU_STEP_EXCHANGE = 3,          /* a = first action's word, b = action count, c = end offset */
  IPU_STEP_REPEAT = 4,            /* a = count, b = index of the step after the loop's end */
  IPU_STEP_REPEAT_END = 5,        /* a = index of the matching IPU_STEP_REPEAT */
  IPU_STEP_HOST_SYNC = 6,         /* a = host transfer id: the host moves stream data during it */
  IPU_STEP_EXCHANGE_EXTERNAL = 7, /* IPU_STEP_EXCHANGE after an external sync: words may cross
                                     chips */
  IPU_STEP_DISPATCH = 8,          /* host sync IPU_HOST_COMMAND, then run program `command` */
  IPU_STEP_GOTO = 9,              /* a = the next step's index */
  IPU_STEP_CALL = 10,             /* a = a function's first step: run it, then the next step */
  IPU_STEP_RETURN = 11,           /* back to the step after the latest call */
  IPU_STEP_STREAM_SLOT = 12,      /* a = a stream's use counter, b = a step: every other time
                                     (the counter's odd counts) go to step b, else to the next;
                                     the counter counts on (from 0 at load, across runs) */
};

/* Use counters of IPU_STEP_STREAM_SLOT: a host stream read through two buffers in streaming
 * memory (the host fills one while the tiles read the other) takes one. */
#define IPU_STREAM_SLOT_COUNTERS 32

/* The host transfer id of the dispatch step's host sync: during it the host writes the index of
 * the program to run next into every tile's ipu_tile_program.command (IPU_COMMAND_EXIT: stop).
 * The tile resets the word to IPU_COMMAND_EXIT once read, so with no host to answer (ipu-sim)
 * the image's initial command, program 0, runs once. */
#define IPU_HOST_COMMAND 0x7fffffffu
#define IPU_COMMAND_EXIT 0xffffffffu

struct ipu_step {
  uint32_t op, a, b, c;
};

/* One exchange action, its key instruction issued `offset` cycles after the phase's base
 * (above), which the table holds as the wait before the key. 16 bytes, so that a tile's
 * tables, thousands of actions in a large program, take two thirds of what six words took: the
 * kind rides in the wait word (above), and a streaming-memory address's bits 32 and up above
 * the word count. A tile's actions are one array of words: each phase's actions, then its
 * IPU_ACTION_END word (IPU_STEP_EXCHANGE's a is the word of its first action). */
struct ipu_action {
  uint32_t wait;    /* the wait word: ipu.waitc's cycles before the key, and the kind */
  uint32_t address; /* on the tile, word-aligned */
  uint32_t words;   /* | streaming memory address bits 32.. << IPU_ACTION_WORDS_BITS */
  uint32_t with;    /* receive: the sending tile; send: its destination list; SM: address bits
                       0..31 */
};

/* A vertex whose codelet word has this bit runs on all six workers at once (ipu.runall), each
 * finding its share from its context number; functions are 4-byte aligned, so the bit is free. */
#define IPU_VERTEX_ALL_WORKERS 1u

struct ipu_vertex {
  uint32_t codelet; /* function address: void codelet(const void *state), | IPU_VERTEX_ALL_WORKERS */
  uint32_t state;   /* address of the vertex's fields, one 32-bit word each */
};

struct ipu_tile_program {
  uint32_t magic;
  uint32_t steps, actions, vertices; /* addresses of the arrays */
  uint32_t step_count;
  uint32_t programs;      /* address of program_count first-step indices */
  uint32_t program_count;
  uint32_t command;       /* written by the host at each dispatch (see IPU_HOST_COMMAND) */
  /* The stacks the compiler sized from the code (crt0 reads them at start-up, before anything
   * runs on them): the supervisor's, the workers' context table at its top included, and each
   * worker's. The linker script's sizes are for firmware without this header. */
  uint32_t supervisor_stack_bytes, worker_stack_bytes;
};
#endif /* __ASSEMBLER__ */

#endif /* IPU_PROGRAM_H */

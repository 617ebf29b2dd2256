// The tile's control and status registers as data: number, name, access and meaning. The core
// binds each one's behaviour in one table (core.cpp); the disassembler and docs read names here.
#pragma once

#include <cstdint>
#include <string_view>

namespace ipu::iss {

enum class CsrAccess : uint8_t { kReadOnly, kReadWrite };

// X(id, number, access, meaning)
#define IPU_CSR_LIST(X)                                                                           \
  X(fflags, 0x001, kReadWrite, "accrued FP exception flags NV DZ OF UF NX (per context)")         \
  X(frm, 0x002, kReadWrite, "dynamic FP rounding mode (per context)")                             \
  X(fcsr, 0x003, kReadWrite, "frm << 5 | fflags")                                                 \
  X(cycle, 0xc00, kReadOnly, "tile cycles, low word (user alias of mcycle)")                      \
  X(instret, 0xc02, kReadOnly, "instructions retired by this context, low word")                  \
  X(cycleh, 0xc80, kReadOnly, "tile cycles, high word")                                           \
  X(instreth, 0xc82, kReadOnly, "instructions retired by this context, high word")                \
  X(mstatus, 0x300, kReadWrite, "MIE, MPIE, FS writable; MPP reads as M")                         \
  X(misa, 0x301, kReadWrite, "RV32 I M F X; writes ignored")                                      \
  X(mie, 0x304, kReadWrite, "no interrupt sources: reads 0, writes ignored")                      \
  X(mtvec, 0x305, kReadWrite, "trap vector base (0: no handler, a trap stops the run)")           \
  X(mscratch, 0x340, kReadWrite, "scratch register for trap handlers")                            \
  X(mepc, 0x341, kReadWrite, "pc of the trapping instruction")                                    \
  X(mcause, 0x342, kReadWrite, "trap cause")                                                      \
  X(mtval, 0x343, kReadWrite, "faulting address or instruction word")                             \
  X(mip, 0x344, kReadWrite, "no interrupt sources: reads 0, writes ignored")                      \
  X(mcycle, 0xb00, kReadWrite, "tile cycles, low word (a write offsets this context's view)")     \
  X(minstret, 0xb02, kReadWrite, "instructions retired by this context, low word")                \
  X(mcycleh, 0xb80, kReadWrite, "tile cycles, high word")                                         \
  X(minstreth, 0xb82, kReadWrite, "instructions retired by this context, high word")              \
  X(mvendorid, 0xf11, kReadOnly, "0: non-commercial implementation")                              \
  X(marchid, 0xf12, kReadOnly, "0")                                                               \
  X(mimpid, 0xf13, kReadOnly, "0")                                                                \
  X(mhartid, 0xf14, kReadOnly, "context number: 0 supervisor, 1..6 workers")                      \
  X(ipu_console, 0x7c0, kReadWrite, "Xipu: write a byte to this context's console; reads 0")      \
  X(ipu_wentry, 0x7c1, kReadWrite, "Xipu: entry of workers started by ipu.run (0: rs1 itself)")   \
  X(ipu_fpctl, 0x7c2, kReadWrite,                                                                 \
    "Xipu: bit 0 = stochastic rounding of f16 results (per context)")                             \
  X(ipu_prng0, 0x7c3, kReadWrite, "Xipu: PRNG state s0 bits 31:0 (per context)")                  \
  X(ipu_prng1, 0x7c4, kReadWrite, "Xipu: PRNG state s0 bits 63:32")                               \
  X(ipu_prng2, 0x7c5, kReadWrite, "Xipu: PRNG state s1 bits 31:0")                                \
  X(ipu_prng3, 0x7c6, kReadWrite, "Xipu: PRNG state s1 bits 63:32")                               \
  X(ipu_ampcfg, 0x7c7, kReadWrite,                                                                \
    "Xipu: AMP mode (bit 0 f32), phases-1 (bits 2:1), accumulate output (bit 3)")                 \
  X(ipu_ampin, 0x7c8, kReadWrite, "Xipu: AMP input pointer (advances 8 bytes per ipu.amp)")       \
  X(ipu_ampout, 0x7c9, kReadWrite, "Xipu: AMP output pointer (advances per result block)")        \
  X(ipu_xdests, 0x7ca, kReadWrite,                                                                \
    "Xipu: address of the destination list {count, tile...} of ipu.send")                         \
  X(ipu_smaddr, 0x7cb, kReadWrite,                                                                \
    "Xipu: streaming-memory address of the next ipu.smwrite/smread, bits 31:0 (advances)")        \
  X(ipu_smaddrh, 0x7cc, kReadWrite, "Xipu: streaming-memory address bits 63:32")                  \
  X(ipu_stacklo, 0x7cd, kReadWrite,                                                               \
    "Xipu: lowest address of this context's stack: a store through sp below it faults (0: none)") \
  X(ipu_stackhi, 0x7ce, kReadWrite, "Xipu: end of this context's stack, for reports")             \
  X(ipu_xlat, 0x7cf, kReadWrite,                                                                  \
    "Xipu: write a tile (as ipu.send names it); read the exchange latency to it, in cycles")      \
  X(ipu_tileid, 0xfc0, kReadOnly, "Xipu: this tile's number")                                     \
  X(ipu_tiles, 0xfc1, kReadOnly, "Xipu: number of tiles on the chip")                             \
  X(ipu_chipid, 0xfc2, kReadOnly, "Xipu: this tile's chip in the machine (0 on one chip)")        \
  X(ipu_chips, 0xfc3, kReadOnly, "Xipu: number of chips in the machine")                          \
  X(ipu_ptiles, 0xfc4, kReadOnly,                                                                 \
    "Xipu: number of tiles of this chip the image gives a program (ipu_tiles counts all)")

enum class CsrId : uint8_t {
#define X(id, number, access, meaning) id,
  IPU_CSR_LIST(X)
#undef X
      kCount
};

struct CsrInfo {
  CsrId id;
  uint16_t number;
  std::string_view name;
  CsrAccess access;
  std::string_view meaning;
};

inline constexpr CsrInfo kCsrTable[] = {
#define X(id, number, access, meaning) {CsrId::id, number, #id, CsrAccess::access, meaning},
    IPU_CSR_LIST(X)
#undef X
};

// Name used by the assembler ("ipu_console" is spelled "ipu.console" nowhere: GNU as takes the
// number for custom CSRs); empty when the number is not implemented.
std::string_view csr_name(unsigned number);

// Index into kCsrTable, or -1 when the CSR is not implemented.
int csr_index(unsigned number);

}  // namespace ipu::iss

// The classes of instructions the energy model prices (hw/energy/), and each instruction's
// class and SRAM bytes by its mnemonic: plain data, so RunReport and the SDK's public headers can
// carry counts by class without the instruction tables.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ipu::iss {

// What a retired instruction did, as the energy model and the flop counts count it (hw/energy/,
// RunReport): its class, the SRAM bytes it read and wrote and its floating-point operations. The
// AMP's classes depend on its mode and phase, so ipu.amp and ipu.ampw count themselves in their
// bodies (class kCount here).
enum class InsnClass : uint8_t {
  kInteger,     // integer ALU, multiply and divide, PRNG, half-word shuffles
  kBranch,      // jumps and conditional branches
  kLoad,        // loads from SRAM (integer, f32, ipu.ld64, ipu.ld128, ipu.ld2x64st64)
  kStore,       // stores to SRAM
  kFpu,         // scalar f32 arithmetic (ipu.f32exp too), conversions, moves and compares
  kSimd,        // f16x4 and f32x2 vector arithmetic and conversions
  kAmpF16,      // ipu.amp in f16 mode: 64 multiply-accumulates
  kAmpF32,      // ipu.amp in f32 mode: 16 multiply-accumulates
  kAmpWeights,  // ipu.ampw: one phase of AMP weights loaded
  kControl,     // CSRs, traps, worker control, sync, exchange and streaming-memory requests
  kCount
};
inline constexpr size_t kInsnClasses = static_cast<size_t>(InsnClass::kCount);
std::string_view insn_class_name(InsnClass cls);  // "integer", "amp-f16", ...

// An ipu.amp's multiply-accumulates in each mode (docs/xipu-model.md), two flops each.
inline constexpr unsigned kAmpF16Macs = 64, kAmpF32Macs = 16;

struct InsnCost {
  InsnClass cls = InsnClass::kInteger;
  uint8_t read_bytes = 0, written_bytes = 0;  // SRAM bytes
  // Floating-point operations, as flop counts go: an add, subtract, multiply, divide, square
  // root or e^x is one a lane, a fused multiply-add two; a horizontal sum one an addition. Moves,
  // conversions, compares, minimum and maximum, sign and absolute value count none.
  uint8_t flops = 0;
};

// The flops of a floating-point instruction by its mnemonic (InsnCost::flops).
constexpr uint8_t insn_flops(std::string_view mnemonic) {
  auto is = [mnemonic](std::string_view a) { return mnemonic == a; };
  if (is("fadd.s") || is("fsub.s") || is("fmul.s") || is("fdiv.s") || is("fsqrt.s")) return 1;
  if (is("fmadd.s") || is("fmsub.s") || is("fnmadd.s") || is("fnmsub.s")) return 2;
  if (is("ipu.f32v2add") || is("ipu.f32v2sub") || is("ipu.f32v2mul")) return 2;
  if (is("ipu.f16v4add") || is("ipu.f16v4sub") || is("ipu.f16v4mul")) return 4;
  if (is("ipu.f32v2fma")) return 4;
  if (is("ipu.f16v4fma")) return 8;
  if (is("ipu.f32v2hsum")) return 2;  // acc + a0 + a1
  if (is("ipu.f16v4hsum")) return 4;  // acc + a0 + a1 + a2 + a3
  if (is("ipu.f32exp")) return 1;     // one function of one lane, as a square root counts
  return 0;
}

constexpr InsnCost insn_cost(std::string_view mnemonic) {
  using C = InsnClass;
  auto starts = [mnemonic](std::string_view prefix) {
    return mnemonic.substr(0, prefix.size()) == prefix;
  };
  auto is = [mnemonic](std::string_view a) { return mnemonic == a; };
  if (is("ipu.amp") || is("ipu.ampw")) return {C::kCount};
  if (starts("ipu.f32v") || starts("ipu.f16v")) return {C::kSimd, 0, 0, insn_flops(mnemonic)};
  // A scalar f32 function (e^x): the FPU's, priced as one of its instructions.
  if (is("ipu.f32exp")) return {C::kFpu, 0, 0, insn_flops(mnemonic)};
  if (is("ipu.ld2x64st64")) return {C::kLoad, 16, 8};
  if (is("ipu.ld64")) return {C::kLoad, 8};
  if (is("ipu.ld128")) return {C::kLoad, 16};
  if (is("ipu.st64")) return {C::kStore, 0, 8};
  if (starts("ipu.urand")) return {C::kInteger};
  if (starts("ipu.sort")) return {C::kInteger};
  if (starts("ipu.")) return {C::kControl};
  if (is("lb") || is("lbu")) return {C::kLoad, 1};
  if (is("lh") || is("lhu")) return {C::kLoad, 2};
  if (is("lw") || is("flw")) return {C::kLoad, 4};
  if (is("sb")) return {C::kStore, 0, 1};
  if (is("sh")) return {C::kStore, 0, 2};
  if (is("sw") || is("fsw")) return {C::kStore, 0, 4};
  if (is("jal") || is("jalr") || starts("b")) return {C::kBranch};
  if (starts("fence") || starts("csr") || is("ecall") || is("ebreak") || is("mret") || is("wfi"))
    return {C::kControl};
  if (starts("f")) return {C::kFpu, 0, 0, insn_flops(mnemonic)};
  return {C::kInteger};
}

}  // namespace ipu::iss

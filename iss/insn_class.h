// The classes of instructions the energy model prices (hw/energy/), and each instruction's
// class and SRAM bytes by its mnemonic: plain data, so RunReport and the SDK's public headers can
// carry counts by class without the instruction tables.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ipu::iss {

// What a retired instruction did, as the energy model counts it (hw/energy/): its class and
// the SRAM bytes it read and wrote. The AMP's classes depend on its mode and phase, so
// ipu.amp and ipu.ampw count themselves in their bodies (class kCount here).
enum class InsnClass : uint8_t {
  kInteger,     // integer ALU, multiply and divide, PRNG
  kBranch,      // jumps and conditional branches
  kLoad,        // loads from SRAM (integer, f32, ipu.ld2x64st64)
  kStore,       // stores to SRAM
  kFpu,         // scalar f32 arithmetic, conversions, moves and compares
  kSimd,        // f16x4 and f32x2 vector arithmetic and conversions
  kAmpF16,      // ipu.amp in f16 mode: 64 multiply-accumulates
  kAmpF32,      // ipu.amp in f32 mode: 16 multiply-accumulates
  kAmpWeights,  // ipu.ampw: one phase of AMP weights loaded
  kControl,     // CSRs, traps, worker control, sync, exchange and streaming-memory requests
  kCount
};
inline constexpr size_t kInsnClasses = static_cast<size_t>(InsnClass::kCount);
std::string_view insn_class_name(InsnClass cls);  // "integer", "amp-f16", ...

struct InsnCost {
  InsnClass cls = InsnClass::kInteger;
  uint8_t read_bytes = 0, written_bytes = 0;  // SRAM bytes
};

constexpr InsnCost insn_cost(std::string_view mnemonic) {
  using C = InsnClass;
  auto starts = [mnemonic](std::string_view prefix) {
    return mnemonic.substr(0, prefix.size()) == prefix;
  };
  auto is = [mnemonic](std::string_view a) { return mnemonic == a; };
  if (is("ipu.amp") || is("ipu.ampw")) return {C::kCount};
  if (starts("ipu.f32v") || starts("ipu.f16v")) return {C::kSimd};
  if (is("ipu.ld2x64st64")) return {C::kLoad, 16, 8};
  if (starts("ipu.urand")) return {C::kInteger};
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
  if (starts("f")) return {C::kFpu};
  return {C::kInteger};
}

}  // namespace ipu::iss

// C and assembly programs built with the RISC-V cross compiler during the build, run on the
// tile core: console output, exit status, trap handlers, workers, and hand-derived cycle counts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tests/support/core_harness.h"

namespace ipu::test {
namespace {

using iss::StopReason;
using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

std::string firmware(const char* name) {
  return std::string(IPU_TEST_FIRMWARE_DIR) + "/" + name + ".elf";
}

TEST(TileProgram, ConsoleLinesArePrefixedByContextAndExitStatusIsReturned) {
  CoreHarness h;
  h.load_elf(firmware("hello"));
  ASSERT_EQ(h.run(), StopReason::kExited) << h.core.fault().message;
  EXPECT_EQ(h.core.exit_status(), 42);
  EXPECT_THAT(h.console, ElementsAre("c0: hello, tile", "c0: pi is about 3.1416",
                                     "c0: partial line without newline...finished",
                                     "c1: worker 1 says hi", "c0: no newline at the end"));
}

TEST(TileProgram, EachWorkerKeepsItsOwnThreadLocalStorageAcrossRuns) {
  // tests/firmware/worker_tls.c: .tdata starts at 100, .tbss at 0; worker w adds w, then 10 w.
  CoreHarness h;
  h.load_elf(firmware("worker_tls"));
  ASSERT_EQ(h.run(), StopReason::kExited) << h.core.fault().message;
  EXPECT_EQ(h.core.exit_status(), 0);
  EXPECT_THAT(h.console, UnorderedElementsAre("c1: worker 1: 111 2", "c2: worker 2: 122 2",
                                              "c3: worker 3: 133 2", "c4: worker 4: 144 2",
                                              "c5: worker 5: 155 2", "c6: worker 6: 166 2",
                                              "c0: supervisor: 100 0"));
}

TEST(TileProgram, TohostStoreEndsTheRun) {
  CoreHarness h;
  h.load_elf(firmware("tohost"));
  ASSERT_EQ(h.run(), StopReason::kExited) << h.core.fault().message;
  EXPECT_EQ(h.core.exit_status(), 7);
}

TEST(TileProgram, FirmwareTrapHandlerGetsEveryTrap) {
  CoreHarness h;
  h.load_elf(firmware("trap_handler"));
  ASSERT_EQ(h.run(), StopReason::kExited) << h.core.fault().message;
  EXPECT_EQ(h.core.exit_status(), 0) << ::testing::PrintToString(h.console);
  EXPECT_EQ(h.console.back(), "c0: 5 traps handled");
}

TEST(TileProgram, TwelveJobsOnSixWorkers) {
  CoreHarness h;
  h.load_elf(firmware("workers"));
  ASSERT_EQ(h.run(), StopReason::kExited) << h.core.fault().message;
  EXPECT_EQ(h.core.exit_status(), 0) << ::testing::PrintToString(h.console);
  uint64_t runs = 0;
  for (unsigned w = 1; w <= 6; ++w) {
    EXPECT_GE(h.core.context(w).runs, 1u) << "worker " << w;
    runs += h.core.context(w).runs;
  }
  EXPECT_EQ(runs, 12u);
}

TEST(TileProgram, WorkerStartAndJoinCyclesMatchTheHandDerivation) {
  // See tests/firmware/worker_cycles.S for the derivation (N = 10).
  CoreHarness h;
  h.load_elf(firmware("worker_cycles"));
  ASSERT_EQ(h.run(), StopReason::kExited) << h.core.fault().message;
  EXPECT_EQ(h.core.exit_status(), 186);  // mcycle read after the join
  EXPECT_EQ(h.core.cycles(), 199u);
  const iss::Context& supervisor = h.core.context(0);
  EXPECT_EQ(supervisor.instret, 12u);  // auipc addi 6xrun join csrr li ecall
  EXPECT_EQ(supervisor.issues, 17u);   // plus five stalled join retries
  for (unsigned w = 1; w <= 6; ++w) {
    const iss::Context& c = h.core.context(w);
    EXPECT_EQ(c.instret, 22u) << "worker " << w;                // L = 2N + 2
    EXPECT_EQ(c.active_cycles, 6u * 21 + 1) << "worker " << w;  // first issue to wexit
    EXPECT_EQ(c.started_at, 18u + 7 * (w - 1)) << "worker " << w;
  }
}

TEST(TileProgram, StartingAllWorkersAtOnceMatchesTheHandDerivation) {
  // See tests/firmware/runall_cycles.S for the derivation (N = 10).
  CoreHarness h;
  h.load_elf(firmware("runall_cycles"));
  ASSERT_EQ(h.run(), StopReason::kExited) << h.core.fault().message;
  EXPECT_EQ(h.core.exit_status(), 151);  // mcycle read after the join
  EXPECT_EQ(h.core.cycles(), 164u);
  const iss::Context& supervisor = h.core.context(0);
  EXPECT_EQ(supervisor.instret, 7u);  // auipc addi runall join csrr li ecall
  for (unsigned w = 1; w <= 6; ++w) {
    const iss::Context& c = h.core.context(w);
    EXPECT_EQ(c.runs, 1u) << "worker " << w;
    EXPECT_EQ(c.instret, 22u) << "worker " << w;  // L = 2N + 2
    EXPECT_EQ(c.started_at, w == 1 ? 18u : 11u + w) << "worker " << w;
  }
}

TEST(TileProgram, SameImageSameCyclesEveryRun) {
  uint64_t cycles[2];
  std::vector<std::string> output[2];
  for (int i = 0; i < 2; ++i) {
    CoreHarness h;
    h.load_elf(firmware("workers"));
    ASSERT_EQ(h.run(), StopReason::kExited);
    cycles[i] = h.core.cycles();
    output[i] = h.console;
  }
  EXPECT_EQ(cycles[0], cycles[1]);
  EXPECT_EQ(output[0], output[1]);
}

TEST(TileProgram, RunCanBePausedAndResumedWithoutChangingTheResult) {
  CoreHarness whole, pieces;
  whole.load_elf(firmware("workers"));
  pieces.load_elf(firmware("workers"));
  ASSERT_EQ(whole.run(), StopReason::kExited);
  uint64_t until = 0;
  StopReason r = StopReason::kCycleLimit;
  while (r == StopReason::kCycleLimit) r = pieces.run(until += 997);
  ASSERT_EQ(r, StopReason::kExited);
  EXPECT_EQ(pieces.core.cycles(), whole.core.cycles());
  EXPECT_EQ(pieces.core.instructions_retired(), whole.core.instructions_retired());
  EXPECT_EQ(pieces.console, whole.console);
}

// f16 bit pattern of a float known to be exactly representable (test data are built that way).
uint16_t f16_bits_of_exact(float x) {
  if (x == 0) return std::signbit(x) ? 0x8000 : 0;
  int e;
  const float m = std::frexp(std::fabs(x), &e);  // x = m 2^e, m in [0.5, 1)
  const uint16_t sign = x < 0 ? 0x8000 : 0;
  const uint32_t mant = static_cast<uint32_t>(std::ldexp(m, 11));  // 11 significant bits
  return sign | static_cast<uint16_t>((e + 14) << 10) | static_cast<uint16_t>(mant & 0x3ff);
}

TEST(TileProgram, GeneratedXipuIntrinsicsWorkFromC) {
  CoreHarness h;
  h.load_elf(firmware("simd_intrinsics"));
  ASSERT_EQ(h.run(), StopReason::kExited) << h.core.fault().message;
  EXPECT_EQ(h.core.exit_status(), 0) << ::testing::PrintToString(h.console);
  EXPECT_EQ(h.console.back(), "c0: 0 errors");
}

TEST(TileProgram, AmpMatmulsMatchTheHostReferenceBitForBit) {
  CoreHarness h;
  const sdk::ElfImage image = sdk::read_elf(firmware("amp_matmul"));
  h.load_elf(firmware("amp_matmul"));
  auto at = [&](const char* symbol) { return image.symbols.at(symbol); };
  std::mt19937 rng(20261122);
  // f16 data: multiples of 1/64 in [-4, 4): exact in f16, with products and sums that do round
  // in f32 over 32 terms only rarely, so also random f32 data below.
  std::uniform_int_distribution<int> small(-256, 255);
  constexpr int M16 = 16, K16 = 32, N16 = 48, M32 = 8, K32 = 16, N32 = 24;
  std::vector<float> a16(M16 * K16), b16(N16 * K16), a32(M32 * K32), b32(N32 * K32);
  for (float& v : a16) v = small(rng) / 64.0f;
  for (float& v : b16) v = small(rng) / 64.0f;
  std::uniform_real_distribution<float> real(-3.0f, 3.0f);
  for (float& v : a32) v = real(rng);
  for (float& v : b32) v = real(rng);
  for (int i = 0; i < M16 * K16; ++i) {
    const uint16_t bits = f16_bits_of_exact(a16[i]);
    h.write_bytes(at("a_f16") + 2 * i, &bits, 2);
  }
  for (int i = 0; i < N16 * K16; ++i) {
    const uint16_t bits = f16_bits_of_exact(b16[i]);
    h.write_bytes(at("bt_f16") + 2 * i, &bits, 2);
  }
  h.write_bytes(at("a_f32"), a32.data(), a32.size() * 4);
  h.write_bytes(at("bt_f32"), b32.data(), b32.size() * 4);
  ASSERT_EQ(h.run(), StopReason::kExited) << h.core.fault().message;

  // Host reference in the AMP's order: per pass, acc = fma(a, b, acc) over k in order from 0;
  // the first pass writes acc, later passes add acc to the output.
  auto reference = [](const std::vector<float>& a, const std::vector<float>& bt, int m, int k,
                      int n, int per_pass) {
    std::vector<float> ct(n * m, 0.0f);
    for (int j = 0; j < n; ++j)
      for (int r = 0; r < m; ++r)
        for (int k0 = 0; k0 < k; k0 += per_pass) {
          float acc = 0.0f;
          for (int kk = k0; kk < k0 + per_pass; ++kk)
            acc = std::fma(a[r * k + kk], bt[j * k + kk], acc);
          ct[j * m + r] = k0 == 0 ? acc : ct[j * m + r] + acc;
        }
    return ct;
  };
  const std::vector<float> ct16 = reference(a16, b16, M16, K16, N16, 16);
  const std::vector<float> ct32 = reference(a32, b32, M32, K32, N32, 8);
  for (int i = 0; i < N16 * M16; ++i) {
    float got;
    const uint32_t word = h.read_word(at("ct_f16") + 4 * i);
    std::memcpy(&got, &word, 4);
    ASSERT_EQ(word,
              [&] {
                uint32_t u;
                std::memcpy(&u, &ct16[i], 4);
                return u;
              }())
        << "f16 C column " << i / M16 << " row " << i % M16 << ": " << got << " vs " << ct16[i];
  }
  for (int i = 0; i < N32 * M32; ++i) {
    const uint32_t word = h.read_word(at("ct_f32") + 4 * i);
    uint32_t expected;
    std::memcpy(&expected, &ct32[i], 4);
    ASSERT_EQ(word, expected) << "f32 C column " << i / M32 << " row " << i % M32;
  }
}

}  // namespace
}  // namespace ipu::test

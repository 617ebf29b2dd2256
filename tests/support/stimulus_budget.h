// How much random stimulus a randomized test draws. The Release half of CI runs the whole
// budget; under the sanitizers (ASan's checks cost 3-7x) a third of it, which still passes every
// path the stimulus reaches many times over and keeps that half's time for the suites only it
// checks.
#pragma once

#include <cstdint>

namespace ipu::test {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kUnderSanitizers = true;
#else
inline constexpr bool kUnderSanitizers = false;
#endif

constexpr uint64_t stimulus_budget(uint64_t release) {
  return kUnderSanitizers ? release / 3 : release;
}

}  // namespace ipu::test

// libFuzzer target: the tile's instruction-set simulator on arbitrary instruction words. The
// input is loaded at the bottom of a tile's SRAM and run from there by the supervisor (which may
// start workers) for at most 20,000 tile cycles; syncs release at once and exchange phases end
// with nothing received. Any stop the core reports (exit, fault, cycle limit, a schedule error)
// is fine; a crash, a sanitizer report or a hang is a finding.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "iss/core.h"
#include "iss/tile_config.h"

namespace {

// Sends go nowhere; the core only needs the cycle its send port frees.
class NullExchange : public ipu::iss::ExchangeSink {
 public:
  uint64_t send(uint64_t cycle, uint32_t, uint32_t, std::vector<uint32_t> words,
                std::vector<unsigned>) override {
    return cycle + words.size();
  }
  void select_source(uint64_t, uint32_t, int) override {}
  void receive_buffer(uint64_t, uint32_t, uint32_t, uint32_t) override {}
  uint64_t latency_to(unsigned) const override { return 17; }
  uint64_t stream(uint64_t cycle, bool, uint64_t, uint32_t, uint32_t count,
                  std::vector<uint32_t>) override {
    return cycle + count;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using ipu::iss::StopReason;
  static const ipu::iss::TileConfig config;
  static std::vector<uint8_t> sram(config.sram_bytes);
  std::memset(sram.data(), 0, sram.size());
  std::memcpy(sram.data(), data, std::min(size, sram.size()));
  NullExchange exchange;
  ipu::iss::Core core(config, sram.data());
  core.set_exchange(&exchange);
  core.set_streaming_memory(1 << 20);
  core.reset(config.sram_base);
  constexpr uint64_t kCycles = 20000;
  for (int stops = 0; stops < 1000; ++stops) {
    const StopReason why = core.run(kCycles);
    if (why == StopReason::kSync)
      core.resume_after_sync(core.blocked_at() + 1);
    else if (why == StopReason::kExchangeEnd)
      core.resume_after_exchange();
    else
      break;  // exited, faulted, or at the cycle limit
    if (core.cycles() >= kCycles) break;
  }
  return 0;
}

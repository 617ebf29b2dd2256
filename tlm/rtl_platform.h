// `ipu-sim --rtl prng,sr,amp,sync,xmux|all`: the chip computes with the verilated RTL of the
// selected blocks instead of their C++ models. RtlPlatform owns the selected blocks' TLM
// wrappers, reaches each through an initiator socket, and implements the models' interfaces
// on top of them, so that the chip's tiles, sync network and exchange use it unchanged.
#pragma once

#include <tlm_utils/simple_initiator_socket.h>

#include <iosfwd>
#include <memory>
#include <string>
#include <systemc>
#include <vector>

#include "hw/exchange/receive_mux.h"
#include "hw/ipu/chip_config.h"
#include "hw/sync/sync_network.h"
#include "iss/datapaths.h"
#include "tlm/rtl_selection.h"
#include "tlm/rtl_wrappers.h"

namespace ipu::hw {
class Machine;
class Platform;
struct RunReport;
}  // namespace ipu::hw

namespace ipu::tlm_rtl {

class RtlPlatform : public sc_core::sc_module,
                    public iss::PrngDatapath,
                    public iss::F32ToF16Datapath,
                    public iss::AmpDatapath,
                    public hw::BarrierDatapath,
                    public hw::ReceiveMuxIf {
 public:
  // `trace`: "" or an .fst path; each block writes <path without .fst>.<block>.fst. Throws
  // std::invalid_argument when the chip is outside what the RTL is built for.
  RtlPlatform(const sc_core::sc_module_name& name, const hw::ChipConfig& chip,
              const RtlSelection& blocks, const std::string& trace);

  // Points the machine's active tiles, sync network and exchange at the selected blocks. Once
  // per machine: a second call does nothing.
  void install(hw::Machine& machine);
  // The selected tile blocks, for a tile outside a chip (ipu-sim demo / run-elf).
  iss::TileDatapaths tile_datapaths();
  std::vector<RtlBlockStats> stats() const;
  std::vector<std::string> trace_files() const { return trace_files_; }
  // The first RtlMismatch a block raised ("" if none): the exception itself unwinds through
  // SystemC, which reports it as a generic error; the platform rethrows it with this text.
  const std::string& mismatch() const { return mismatch_; }

  uint64_t next(iss::Xoroshiro128aox& state) override;
  uint32_t convert(uint32_t a, unsigned rm, uint32_t& flags, uint32_t random) override;
  void run(std::vector<iss::AmpLaneRow>& rows) override;
  uint64_t release(const std::vector<unsigned>& members,
                   const std::vector<std::pair<unsigned, uint64_t>>& arrivals,
                   unsigned latency) override;
  void run(const hw::RxSchedule& schedule, hw::RxDecisions& decisions) override;

 private:
  using Socket = tlm_utils::simple_initiator_socket<RtlPlatform>;
  const hw::Machine* installed_ = nullptr;
  // transport() that records the first mismatch.
  template <class Transaction>
  void call(Socket& socket, Transaction& transaction, const char* block);
  // Creates the wrapper and the socket bound to it; opens its trace.
  template <class Block>
  void add(std::unique_ptr<Block>& block, std::unique_ptr<Socket>& socket, const char* name);

  RtlSelection blocks_;
  double clock_hz_;
  std::string trace_;
  std::vector<std::string> trace_files_;
  std::string mismatch_;
  std::unique_ptr<PrngRtl> prng_;
  std::unique_ptr<F32ToF16Rtl> sr_;
  std::unique_ptr<AmpLaneRtl> amp_;
  std::unique_ptr<SyncTreeRtl> sync_;
  std::unique_ptr<ExchangeRxRtl> xmux_;
  std::unique_ptr<Socket> to_prng_;
  std::unique_ptr<Socket> to_sr_;
  std::unique_ptr<Socket> to_amp_;
  std::unique_ptr<Socket> to_sync_;
  std::unique_ptr<Socket> to_xmux_;
  hw::RxSchedule renumbered_;  // a receiver's phase with its senders on the RTL's bus
};

// Runs the platform, with `rtl` (may be null) installed before: an RTL block that departs from
// its model ends the run with RtlMismatch naming it (SystemC alone reports a generic error).
hw::RunReport run_platform(hw::Platform& platform, RtlPlatform* rtl);

}  // namespace ipu::tlm_rtl

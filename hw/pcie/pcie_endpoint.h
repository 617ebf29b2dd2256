// The chip's PCIe Gen4 x16 endpoint: the host's only way into the IPU. MMIO registers (one
// table, below) and a DMA engine with two channels, host->device and device->host, that run at
// the same time: each moves `pcie.bytes-per-second` (32 GB/s; 64 GB/s both ways together) after
// `pcie.latency-ns` per transaction. A doorbell queues the transfer its channel's registers
// describe (up to kQueueDepth per channel): a transfer's latency runs from its doorbell, so a
// host that keeps the queue full overlaps each transfer's latency with the data of those ahead
// and fills the link. Each completed transfer raises its channel's bit in INT_CAUSE and the
// interrupt, and counts in CHn_DONE.
//
// Register map (32-bit):
//   0x00 CONTROL     rw  bit 0 enable (reset 1)
//   0x04 STATUS      ro  bit 0 channel 0 busy, bit 1 channel 1 busy, bit 2 error
//   0x08 INT_CAUSE   rw1c bit 0 channel 0 done, bit 1 channel 1 done, bit 2 error
//   0x0c INT_ENABLE  rw  interrupt = INT_CAUSE & INT_ENABLE
//   0x20 + 0x20*c: channel c (0: host->device, 1: device->host)
//     +0x00 HOST_ADDR_LO, +0x04 HOST_ADDR_HI, +0x08 TILE, +0x0c TILE_ADDR, +0x10 BYTES,
//     +0x14 DOORBELL (write 1: queue the transfer these registers describe; refused, with the
//           error bit, when kQueueDepth transfers are queued)
//     +0x18 QUEUED ro transfers queued or in flight   +0x1c DONE ro transfers completed (wraps)
#pragma once

#include <tlm_utils/multi_passthrough_initiator_socket.h>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <systemc>
#include <tlm>
#include <vector>

#include "hw/pcie/pcie_config.h"

namespace ipu::hw {

class PcieEndpoint : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<PcieEndpoint> mmio;        // from the host
  tlm_utils::simple_initiator_socket<PcieEndpoint> to_host;  // host memory
  // Bound in tile order; a chip of a machine may have no tile with a program.
  tlm_utils::multi_passthrough_initiator_socket<PcieEndpoint, 32, tlm::tlm_base_protocol_types, 0,
                                                sc_core::SC_ZERO_OR_MORE_BOUND>
      to_tiles;
  sc_core::sc_event interrupt;  // notified when INT_CAUSE & INT_ENABLE becomes non-zero

  // Register offsets (the map above).
  static constexpr uint32_t kControl = 0x00, kStatus = 0x04, kIntCause = 0x08, kIntEnable = 0x0c;
  static constexpr uint32_t channel_base(unsigned c) { return 0x20 + 0x20 * c; }
  static constexpr uint32_t kHostAddressLow = 0x00, kHostAddressHigh = 0x04, kTile = 0x08,
                            kTileAddress = 0x0c, kBytes = 0x10, kDoorbell = 0x14, kQueued = 0x18,
                            kDone = 0x1c;      // within a channel
  static constexpr unsigned kQueueDepth = 64;  // transfers a channel queues

  enum class Access : uint8_t { kReadWrite, kReadOnly, kWriteOneToClear };
  struct Register {
    std::string name;
    uint32_t offset;
    uint32_t reset;
    Access access;
    std::function<uint32_t()> read;
    std::function<void(uint32_t)> write;
  };

  PcieEndpoint(const sc_core::sc_module_name& name, const PcieConfig& config,
               const std::vector<unsigned>& tiles);

  const std::vector<Register>& registers() const { return registers_; }
  uint64_t bytes_moved(unsigned channel) const { return channels_[channel].bytes_moved; }
  std::string last_error() const { return error_; }

 private:
  SC_HAS_PROCESS(PcieEndpoint);
  struct Transfer {
    uint64_t host;
    uint32_t tile, tile_address, bytes;
    sc_core::sc_time doorbell;  // when it was queued: its latency runs from here
  };
  struct Channel {
    uint32_t host_lo = 0, host_hi = 0, tile = 0, tile_address = 0, bytes = 0;
    std::deque<Transfer> queue;  // the front one is in flight
    uint32_t done = 0;
    uint64_t bytes_moved = 0;
    sc_core::sc_event doorbell;
  };
  void b_transport(tlm::tlm_generic_payload& p, sc_core::sc_time& delay);
  void channel_thread(unsigned c);
  void ring(unsigned c, uint32_t value);  // a doorbell
  void raise(uint32_t cause);
  bool move(unsigned c, const Transfer& t, uint32_t offset, uint8_t* chunk, uint32_t n,
            bool to_device);

  PcieConfig config_;
  std::map<unsigned, unsigned> socket_of_;
  std::vector<Register> registers_;
  Channel channels_[2];
  uint32_t control_ = 1, int_cause_ = 0, int_enable_ = 0;
  bool error_flag_ = false;
  std::string error_;
};

}  // namespace ipu::hw

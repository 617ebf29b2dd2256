// The host's end of a gateway's 100 GbE RoCE ports, for a host modelled as a SystemC thread:
// host buffers written into and read from streaming memory, as the host runtime of an
// IPU-Machine does. The gateway times a transfer on the chips' clock (sc_time 0 is cycle 0): its
// 64 KiB messages alternate ports, which carry them at the same time, so a large transfer moves
// at the ports' combined rate.
#pragma once

#include <cstdint>
#include <systemc>

namespace ipu::hw {

class Gateway;

class HostLink {
 public:
  static constexpr uint64_t kMessageBytes = uint64_t{1} << 16;

  explicit HostLink(Gateway& gateway) : gateway_(gateway) {}

  // Call from a SystemC thread: each returns when the transfer is complete (simulated time
  // advances). Throw std::out_of_range naming the range when it is not in streaming memory.
  void write(uint64_t address, const void* data, uint64_t bytes);
  void read(uint64_t address, void* data, uint64_t bytes);

 private:
  void transfer(bool to_gateway, uint64_t address, uint8_t* data, uint64_t bytes);

  Gateway& gateway_;
};

}  // namespace ipu::hw

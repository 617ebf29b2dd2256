// The host's end of a gateway's 100 GbE RoCE ports: host buffers written into and read from
// streaming memory, as the host runtime of an IPU-Machine does. A transfer is cut into messages
// spread over the ports in turn; the ports carry them at the same time, each serialising its
// own (the gateway times them), so a large transfer moves at the ports' combined rate.
#pragma once

#include <tlm_utils/simple_initiator_socket.h>

#include <cstdint>
#include <memory>
#include <systemc>
#include <tlm>
#include <vector>

namespace ipu::hw {

class Gateway;

class HostLink : public sc_core::sc_module {
 public:
  static constexpr uint64_t kMessageBytes = uint64_t{1} << 16;

  HostLink(const sc_core::sc_module_name& name, Gateway& gateway);

  // Call from a SystemC thread: each returns when the last message is through (simulated time
  // advances). Throw std::out_of_range naming the range when it is not in streaming memory.
  void write(uint64_t address, const void* data, uint64_t bytes);
  void read(uint64_t address, void* data, uint64_t bytes);

 private:
  void transfer(tlm::tlm_command command, uint64_t address, uint8_t* data, uint64_t bytes);

  Gateway& gateway_;
  std::vector<std::unique_ptr<tlm_utils::simple_initiator_socket<HostLink>>> ports_;
};

}  // namespace ipu::hw

// Host memory as the PCIe DMA engine sees it: host buffers mapped at host bus addresses
// (the runtime maps its buffers before asking for a transfer). A TLM target.
#pragma once

#include <tlm_utils/simple_target_socket.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <systemc>
#include <tlm>

namespace ipu::hw {

class HostMemory : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<HostMemory> bus;

  explicit HostMemory(const sc_core::sc_module_name& name) : sc_module(name), bus("bus") {
    bus.register_b_transport(this, &HostMemory::b_transport);
  }

  // Maps `bytes` of host memory at a fresh bus address and returns it.
  uint64_t map(uint8_t* buffer, size_t bytes) {
    const uint64_t address = next_;
    regions_[address] = {buffer, bytes};
    next_ += (bytes + 0xfff) & ~uint64_t{0xfff};
    return address;
  }
  void unmap_all() {
    regions_.clear();
    next_ = kBase;
  }

 private:
  static constexpr uint64_t kBase = uint64_t{1} << 32;
  struct Region {
    uint8_t* buffer;
    size_t bytes;
  };

  void b_transport(tlm::tlm_generic_payload& p, sc_core::sc_time&) {
    auto it = regions_.upper_bound(p.get_address());
    if (it == regions_.begin()) return p.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    --it;
    const uint64_t offset = p.get_address() - it->first;
    if (offset + p.get_data_length() > it->second.bytes)
      return p.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    if (p.is_write())
      std::memcpy(it->second.buffer + offset, p.get_data_ptr(), p.get_data_length());
    else
      std::memcpy(p.get_data_ptr(), it->second.buffer + offset, p.get_data_length());
    p.set_response_status(tlm::TLM_OK_RESPONSE);
  }

  std::map<uint64_t, Region> regions_;
  uint64_t next_ = kBase;
};

}  // namespace ipu::hw

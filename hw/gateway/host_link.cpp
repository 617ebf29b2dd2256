#include "host_link.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "gateway.h"

namespace ipu::hw {

HostLink::HostLink(const sc_core::sc_module_name& name, Gateway& gateway)
    : sc_module(name), gateway_(gateway) {
  for (unsigned p = 0; p < gateway.config().host_ports; ++p) {
    ports_.push_back(std::make_unique<tlm_utils::simple_initiator_socket<HostLink>>(
        fmt::format("port{}", p).c_str()));
    ports_.back()->bind(gateway.host);
  }
}

void HostLink::write(uint64_t address, const void* data, uint64_t bytes) {
  transfer(tlm::TLM_WRITE_COMMAND, address, const_cast<uint8_t*>(static_cast<const uint8_t*>(data)),
           bytes);
}

void HostLink::read(uint64_t address, void* data, uint64_t bytes) {
  transfer(tlm::TLM_READ_COMMAND, address, static_cast<uint8_t*>(data), bytes);
}

void HostLink::transfer(tlm::tlm_command command, uint64_t address, uint8_t* data, uint64_t bytes) {
  if (!gateway_.memory().contains(address, bytes))  // refused whole: nothing half-written
    throw std::out_of_range(fmt::format(
        "host link to gateway {}: streaming-memory bytes 0x{:x}..0x{:x} lie outside its {} bytes",
        gateway_.index(), address, address + bytes, gateway_.memory().size()));
  sc_core::sc_time last = sc_core::SC_ZERO_TIME;
  tlm::tlm_generic_payload payload;
  for (uint64_t offset = 0, message = 0; offset < bytes; offset += kMessageBytes, ++message) {
    const auto n = static_cast<unsigned>(std::min(kMessageBytes, bytes - offset));
    payload.set_command(command);
    payload.set_address(address + offset);
    payload.set_data_ptr(data + offset);
    payload.set_data_length(n);
    payload.set_streaming_width(n);
    payload.set_byte_enable_ptr(nullptr);
    payload.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;  // every message is posted now
    (*ports_[message % ports_.size()])->b_transport(payload, delay);
    if (!payload.is_response_ok())
      throw std::out_of_range(fmt::format("host link to gateway {}: message at 0x{:x} refused: {}",
                                          gateway_.index(), address + offset,
                                          payload.get_response_string()));
    last = std::max(last, delay);
  }
  wait(last);
}

}  // namespace ipu::hw

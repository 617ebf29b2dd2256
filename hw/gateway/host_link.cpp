#include "host_link.h"

#include <cmath>

#include "gateway.h"

namespace ipu::hw {

void HostLink::write(uint64_t address, const void* data, uint64_t bytes) {
  transfer(true, address, const_cast<uint8_t*>(static_cast<const uint8_t*>(data)), bytes);
}

void HostLink::read(uint64_t address, void* data, uint64_t bytes) {
  transfer(false, address, static_cast<uint8_t*>(data), bytes);
}

void HostLink::transfer(bool to_gateway, uint64_t address, uint8_t* data, uint64_t bytes) {
  const double clock_hz = gateway_.clock_hz();
  const auto now =
      static_cast<uint64_t>(std::ceil(sc_core::sc_time_stamp().to_seconds() * clock_hz));
  const uint64_t done =
      gateway_.host_finish(gateway_.host_start(to_gateway, address, data, bytes, now));
  sc_core::wait(sc_core::sc_time(static_cast<double>(done) / clock_hz, sc_core::SC_SEC) -
                sc_core::sc_time_stamp());
}

}  // namespace ipu::hw

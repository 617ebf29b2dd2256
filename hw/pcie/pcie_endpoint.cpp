#include "pcie_endpoint.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace ipu::hw {

namespace {
constexpr uint32_t kChunk = 4096;  // bytes per TLM transaction of the DMA engine
}

PcieEndpoint::PcieEndpoint(const sc_core::sc_module_name& name, const PcieConfig& config,
                           const std::vector<unsigned>& tiles)
    : sc_module(name), mmio("mmio"), to_host("to_host"), to_tiles("to_tiles"), config_(config) {
  for (unsigned i = 0; i < tiles.size(); ++i) socket_of_[tiles[i]] = i;
  mmio.register_b_transport(this, &PcieEndpoint::b_transport);
  registers_ = {
      {"CONTROL", 0x00, 1, Access::kReadWrite, [this] { return control_; },
       [this](uint32_t v) { control_ = v & 1; }},
      {"STATUS", 0x04, 0, Access::kReadOnly,
       [this] {
         return (channels_[0].queue.empty() ? 0u : 1u) | (channels_[1].queue.empty() ? 0u : 2u) |
                (error_flag_ ? 4u : 0u);
       },
       nullptr},
      {"INT_CAUSE", 0x08, 0, Access::kWriteOneToClear, [this] { return int_cause_; },
       [this](uint32_t v) {
         int_cause_ &= ~v;
         if (v & 4) error_flag_ = false;
       }},
      {"INT_ENABLE", 0x0c, 0, Access::kReadWrite, [this] { return int_enable_; },
       [this](uint32_t v) { int_enable_ = v & 7; }},
  };
  for (unsigned c = 0; c < 2; ++c) {
    Channel& ch = channels_[c];
    const uint32_t base = 0x20 + 0x20 * c;
    const std::string prefix = fmt::format("CH{}_", c);
    auto reg = [&](const char* field, uint32_t offset, uint32_t& member) {
      registers_.push_back({prefix + field, base + offset, 0, Access::kReadWrite,
                            [&member] { return member; }, [&member](uint32_t v) { member = v; }});
    };
    reg("HOST_ADDR_LO", 0x00, ch.host_lo);
    reg("HOST_ADDR_HI", 0x04, ch.host_hi);
    reg("TILE", 0x08, ch.tile);
    reg("TILE_ADDR", 0x0c, ch.tile_address);
    reg("BYTES", 0x10, ch.bytes);
    registers_.push_back({prefix + "DOORBELL", base + 0x14, 0, Access::kReadWrite,
                          [] { return 0u; }, [this, c](uint32_t v) { ring(c, v); }});
    registers_.push_back({prefix + "QUEUED", base + 0x18, 0, Access::kReadOnly,
                          [&ch] { return static_cast<uint32_t>(ch.queue.size()); }, nullptr});
    registers_.push_back(
        {prefix + "DONE", base + 0x1c, 0, Access::kReadOnly, [&ch] { return ch.done; }, nullptr});
  }
  sc_core::sc_spawn([this] { channel_thread(0); });
  sc_core::sc_spawn([this] { channel_thread(1); });
}

void PcieEndpoint::b_transport(tlm::tlm_generic_payload& p, sc_core::sc_time&) {
  const auto r = std::find_if(registers_.begin(), registers_.end(),
                              [&](const Register& x) { return x.offset == p.get_address(); });
  if (r == registers_.end() || p.get_data_length() != 4)
    return p.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
  uint32_t value = 0;
  if (p.is_read()) {
    value = r->read();
    std::memcpy(p.get_data_ptr(), &value, 4);
  } else {
    if (r->access == Access::kReadOnly)
      return p.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
    std::memcpy(&value, p.get_data_ptr(), 4);
    r->write(value);
  }
  p.set_response_status(tlm::TLM_OK_RESPONSE);
}

void PcieEndpoint::ring(unsigned c, uint32_t value) {
  Channel& ch = channels_[c];
  if ((value & 1) == 0 || !control_) return;
  if (ch.queue.size() >= kQueueDepth) {
    error_ = fmt::format("DMA channel {}: doorbell with {} transfers already queued (the most)", c,
                         ch.queue.size());
    error_flag_ = true;
    raise(4u);
    return;
  }
  ch.queue.push_back({(uint64_t{ch.host_hi} << 32) | ch.host_lo, ch.tile, ch.tile_address, ch.bytes,
                      sc_core::sc_time_stamp()});
  ch.doorbell.notify(sc_core::SC_ZERO_TIME);
}

void PcieEndpoint::raise(uint32_t cause) {
  int_cause_ |= cause;
  if (int_cause_ & int_enable_) interrupt.notify(sc_core::SC_ZERO_TIME);
}

bool PcieEndpoint::move(unsigned c, const Transfer& t, uint32_t offset, uint8_t* chunk, uint32_t n,
                        bool to_device) {
  const auto socket = socket_of_.find(t.tile);
  if (socket == socket_of_.end()) {
    error_ = fmt::format("DMA channel {}: tile {} has no program loaded on this chip", c, t.tile);
    return false;
  }
  const uint64_t host = t.host + offset;
  const uint32_t tile_address = t.tile_address + offset;
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  tlm::tlm_generic_payload host_side, tile_side;
  for (tlm::tlm_generic_payload* p : {&host_side, &tile_side}) {
    p->set_data_ptr(chunk);
    p->set_data_length(n);
    p->set_streaming_width(n);
  }
  host_side.set_address(host);
  tile_side.set_address(tile_address);
  host_side.set_command(to_device ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND);
  tile_side.set_command(to_device ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
  tlm::tlm_generic_payload& first = to_device ? host_side : tile_side;
  tlm::tlm_generic_payload& second = to_device ? tile_side : host_side;
  auto send = [&](tlm::tlm_generic_payload& p) {
    if (&p == &host_side)
      to_host->b_transport(p, delay);
    else
      to_tiles[static_cast<int>(socket->second)]->b_transport(p, delay);
    return p.is_response_ok();
  };
  if (!send(first) || !send(second)) {
    error_ = fmt::format(
        "DMA channel {}: {} bytes between host 0x{:x} and tile {} address 0x{:08x} were refused", c,
        n, host, t.tile, tile_address);
    return false;
  }
  return true;
}

void PcieEndpoint::channel_thread(unsigned c) {
  Channel& ch = channels_[c];
  const bool to_device = c == 0;
  const sc_core::sc_time latency(config_.latency_ns, sc_core::SC_NS);
  std::vector<uint8_t> chunk(kChunk);
  for (;;) {
    while (ch.queue.empty()) wait(ch.doorbell);
    const Transfer t = ch.queue.front();
    // Its latency ran since its doorbell, while the transfers ahead moved their data.
    const sc_core::sc_time ready = t.doorbell + latency;
    if (sc_core::sc_time_stamp() < ready) wait(ready - sc_core::sc_time_stamp());
    bool ok = true;
    for (uint32_t done = 0; done < t.bytes && ok; done += kChunk) {
      const uint32_t n = std::min(kChunk, t.bytes - done);
      ok = move(c, t, done, chunk.data(), n, to_device);
      wait(sc_core::sc_time(static_cast<double>(n) / config_.bytes_per_second, sc_core::SC_SEC));
      if (ok) ch.bytes_moved += n;
    }
    ch.queue.pop_front();
    ++ch.done;
    if (!ok) error_flag_ = true;
    raise(ok ? (1u << c) : 4u);
  }
}

}  // namespace ipu::hw

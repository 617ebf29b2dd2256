#include "tile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace ipu::hw {

Tile::Tile(const sc_core::sc_module_name& name, const TileConfig& config, unsigned tile_id)
    : sc_module(name),
      memory("memory"),
      config_(config),
      id_(tile_id),
      sram_(config.sram_bytes),
      core_(config, sram_.data()),
      period_(sc_core::sc_time(1.0 / config.clock_hz, sc_core::SC_SEC)) {
  if (!(config.clock_hz > 0)) throw std::invalid_argument("tile.clock-hz must be positive");
  core_.set_tile_id(tile_id);
  memory.register_b_transport(this, &Tile::b_transport);
  memory.register_get_direct_mem_ptr(this, &Tile::get_direct_mem_ptr);
  memory.register_transport_dbg(this, &Tile::transport_dbg);
  SC_THREAD(run_thread);
}

void Tile::start(uint32_t entry, uint64_t max_cycles) {
  core_.reset(entry);
  max_cycles_ = max_cycles;
  outcome_ = {};
  started_ = true;
  start_event_.notify(sc_core::SC_ZERO_TIME);
}

void Tile::run_thread() {
  if (!started_) wait(start_event_);
  uint64_t synced = 0;  // tile cycles already matched by simulated time
  for (;;) {
    const uint64_t until = std::min(max_cycles_, core_.cycles() + quantum_cycles_);
    const StopReason r = core_.run(until);
    const uint64_t now = core_.cycles();
    wait(period_ * static_cast<double>(now - synced));
    synced = now;
    if (r == StopReason::kCycleLimit && now < max_cycles_) continue;
    outcome_.reason = r;
    if (r == StopReason::kExited) {
      outcome_.exit_status = core_.exit_status();
    } else if (r == StopReason::kFault) {
      outcome_.message = core_.fault().message;
    } else {
      outcome_.message = fmt::format(
          "tile {}: program did not finish within {} cycles (--max-cycles); running contexts:\n{}",
          id_, max_cycles_, core_.describe_running_contexts());
    }
    finished_event_.notify(sc_core::SC_ZERO_TIME);
    return;
  }
}

bool Tile::access(tlm::tlm_generic_payload& payload, uint32_t& offset) {
  const uint64_t address = payload.get_address();
  const uint64_t length = payload.get_data_length();
  if (payload.get_byte_enable_ptr() != nullptr) {
    payload.set_response_status(tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
    return false;
  }
  if (address < config_.sram_base ||
      address + length > uint64_t{config_.sram_base} + config_.sram_bytes) {
    payload.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return false;
  }
  offset = static_cast<uint32_t>(address - config_.sram_base);
  return true;
}

void Tile::b_transport(tlm::tlm_generic_payload& payload, sc_core::sc_time& delay) {
  uint32_t offset = 0;
  if (!access(payload, offset)) return;
  const uint32_t length = payload.get_data_length();
  if (payload.is_write()) {
    std::memcpy(sram_.data() + offset, payload.get_data_ptr(), length);
    core_.invalidate(config_.sram_base + offset, length);
  } else if (payload.is_read()) {
    std::memcpy(payload.get_data_ptr(), sram_.data() + offset, length);
  }
  // One SRAM port access per 8 bytes (64-bit wide), one tile cycle each.
  const unsigned port_cycles = (length + 7) / 8;
  delay += period_ * static_cast<double>(port_cycles);
  payload.set_dmi_allowed(true);
  payload.set_response_status(tlm::TLM_OK_RESPONSE);
}

bool Tile::get_direct_mem_ptr(tlm::tlm_generic_payload&, tlm::tlm_dmi& dmi) {
  // Read-only DMI: writes must go through b_transport so the core can drop stale predecoded
  // instructions.
  dmi.set_dmi_ptr(sram_.data());
  dmi.set_start_address(config_.sram_base);
  dmi.set_end_address(uint64_t{config_.sram_base} + config_.sram_bytes - 1);
  dmi.set_granted_access(tlm::tlm_dmi::DMI_ACCESS_READ);
  dmi.set_read_latency(period_);
  dmi.set_write_latency(period_);
  return true;
}

unsigned Tile::transport_dbg(tlm::tlm_generic_payload& payload) {
  uint32_t offset = 0;
  if (!access(payload, offset)) return 0;
  const uint32_t length = payload.get_data_length();
  if (payload.is_write()) {
    std::memcpy(sram_.data() + offset, payload.get_data_ptr(), length);
    core_.invalidate(config_.sram_base + offset, length);
  } else if (payload.is_read()) {
    std::memcpy(payload.get_data_ptr(), sram_.data() + offset, length);
  }
  payload.set_response_status(tlm::TLM_OK_RESPONSE);
  return length;
}

}  // namespace ipu::hw

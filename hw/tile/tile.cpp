#include "tile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "base/byte_stream.h"

namespace ipu::hw {

Tile::Tile(const sc_core::sc_module_name& name, const iss::TileConfig& config, unsigned tile_id)
    : sc_module(name),
      memory("memory"),
      sync("sync"),
      exchange("exchange"),
      config_(config),
      id_(tile_id),
      machine_id_(tile_id),
      sram_(config.sram_bytes),
      core_(config, sram_.data()),
      period_(sc_core::sc_time(1.0 / config.clock_hz, sc_core::SC_SEC)) {
  if (!(config.clock_hz > 0)) throw std::invalid_argument("tile.clock-hz must be positive");
  core_.set_tile_id(tile_id);
  memory.register_b_transport(this, &Tile::b_transport);
  memory.register_get_direct_mem_ptr(this, &Tile::get_direct_mem_ptr);
  memory.register_transport_dbg(this, &Tile::transport_dbg);
  SC_METHOD(step);
}

void Tile::set_machine(unsigned chip, unsigned chips, unsigned tiles_per_chip,
                       unsigned program_tiles) {
  core_.set_tile_count(tiles_per_chip);
  core_.set_program_tiles(program_tiles);
  core_.set_chip(chip, chips);
  machine_id_ = chip * tiles_per_chip + id_;
}

void Tile::set_console(iss::Core::ConsoleSink sink) {
  console_ = std::move(sink);
  core_.set_console([this](unsigned context, std::string_view line) {
    if (deferring_)
      deferred_console_.emplace_back(context, line);
    else if (console_)
      console_(context, line);
  });
}

sc_core::sc_time Tile::time_until(uint64_t cycle) const {
  return cycle > synced_ ? period_ * static_cast<double>(cycle - synced_) : sc_core::SC_ZERO_TIME;
}

sc_core::sc_time Tile::resume_delay() const { return time_until(core_.cycles()); }

void Tile::run_burst() noexcept {
  deferring_ = true;
  try {
    burst_result_ = core_.run(burst_until_);
  } catch (...) {
    burst_error_ = std::current_exception();
  }
  deferring_ = false;
}

void Tile::save_burst(base::ByteWriter& out) const {
  out.put(burst_result_);
  std::string error;
  if (burst_error_) {
    try {
      std::rethrow_exception(burst_error_);
    } catch (const std::exception& e) {
      error = e.what();
    } catch (...) {
      error = "an unknown exception";
    }
  }
  out.put(error);
  core_.save_status(out);
  out.put(static_cast<uint64_t>(deferred_console_.size()));
  for (const auto& [context, line] : deferred_console_) out.put(context), out.put(line);
  deferred_exchange_.save(out);
}

void Tile::load_burst(base::ByteReader& in) {
  in.get(burst_result_);
  std::string error;
  in.get(error);
  if (!error.empty())
    burst_error_ = std::make_exception_ptr(std::runtime_error(
        fmt::format("{} (in the simulator process that runs {})", error, core_.tile_label())));
  core_.load_status(in);
  deferred_console_.resize(in.count(sizeof(unsigned) + sizeof(uint64_t)));
  for (auto& [context, line] : deferred_console_) in.get(context), in.get(line);
  deferred_exchange_.load(in);
}

void Tile::commit_burst() {
  for (auto& [context, line] : deferred_console_)
    if (console_) console_(context, line);
  deferred_console_.clear();
  if (exchange.size() > 0)
    deferred_exchange_.commit(*exchange[0], machine_id_, phase_,
                              [this] { return core_.tile_label(); });
}

void Tile::start(uint32_t entry, uint64_t max_cycles) {
  core_.reset(entry);
  max_cycles_ = max_cycles;
  outcome_ = {};
  started_ = true;
  start_event_.notify(sc_core::SC_ZERO_TIME);
}

void Tile::add_segment(TileSegment::Kind kind, uint64_t begin, uint64_t end, uint64_t phase) {
  if (keep_timeline_) timeline_.push_back({kind, begin, end, phase, prices_.pj(core_.actions())});
}

bool Tile::wait_for_cycle(uint64_t cycle, Step next) {
  step_ = next;
  if (cycle <= synced_) return false;
  next_trigger(time_until(cycle));
  synced_ = cycle;
  return true;
}

void Tile::finish(iss::StopReason reason) {
  if (core_.cycles() > compute_begin_)
    add_segment(TileSegment::kCompute, compute_begin_, core_.cycles(), phase_);
  outcome_.reason = reason;
  waiting_ = TileWait::kFinished;
  if (reason == iss::StopReason::kExited) {
    outcome_.exit_status = core_.exit_status();
  } else if (reason == iss::StopReason::kFault) {
    outcome_.message = core_.fault().message;
  } else {
    outcome_.message = fmt::format(
        "{}: program did not finish within {} cycles (--max-cycles); running contexts:\n{}",
        core_.tile_label(), max_cycles_, core_.describe_running_contexts());
  }
  step_ = Step::kFinished;
  finished_event_.notify(sc_core::SC_ZERO_TIME);
}

void Tile::step() {
  for (;;) {
    switch (step_) {
      case Step::kStart:
        if (!started_) return next_trigger(start_event_);
        if (sync.size() > 0 || exchange.size() > 0) core_.set_exchange(this);
        if (exchange.size() > 0)
          deferred_exchange_.set_words_per_cycle(exchange->words_per_cycle());
        step_ = Step::kRun;
        break;

      case Step::kRun: {
        const uint64_t until = std::min(max_cycles_, core_.cycles() + quantum_cycles_);
        if (pool_ != nullptr) {
          burst_until_ = until;
          pool_->submit(machine_id_, *this, burst_done_);
          step_ = Step::kBurstDone;
          return next_trigger(burst_done_);
        }
        stop_ = core_.run(until);
        if (wait_for_cycle(core_.cycles(), Step::kStopped)) return;
        break;
      }

      case Step::kBurstDone:
        // The pool woke this tile resume_delay() after the batch: simulated time is at its cycle.
        synced_ = std::max(synced_, core_.cycles());
        if (burst_error_) std::rethrow_exception(std::exchange(burst_error_, nullptr));
        stop_ = burst_result_;
        step_ = Step::kStopped;
        break;

      case Step::kStopped:
        if (stop_ == iss::StopReason::kCycleLimit && core_.cycles() < max_cycles_) {
          step_ = Step::kRun;
          break;
        }
        if (stop_ == iss::StopReason::kSync) {
          // A sync waits for the tile's streaming-memory transfers (the gateway takes part).
          const uint64_t arrival = std::max(core_.blocked_at(), streaming_done_);
          add_segment(TileSegment::kCompute, compute_begin_, core_.blocked_at(), phase_);
          compute_begin_ = arrival;  // nothing is computed again before the release
          if (sync.size() == 0) {
            core_.stop_with_error(
                fmt::format("{}: ipu.sync on a platform without a sync network (cycle {})",
                            core_.tile_label(), arrival));
            return finish(iss::StopReason::kFault);
          }
          const SyncArrival a = sync->arrive(machine_id_, core_.sync_group(), arrival);
          step_ = Step::kReleased;
          if (a.released != nullptr) {
            waiting_ = TileWait::kSync;
            awaited_release_ = a.later;
            return next_trigger(*a.released);
          }
          awaited_release_ = nullptr;
          release_ = a.now;
          break;
        }
        if (stop_ == iss::StopReason::kExchangeEnd) {
          const uint64_t boundary = core_.blocked_at();
          add_segment(TileSegment::kExchange, exchange_begin_, boundary, phase_);
          compute_begin_ = boundary;
          if (exchange.size() > 0) {
            waiting_ = TileWait::kExchange;
            step_ = Step::kPhaseEnd;
            return next_trigger(exchange->reach_boundary(machine_id_, phase_, boundary));
          }
          core_.resume_after_exchange();
          step_ = Step::kRun;
          break;
        }
        return finish(stop_);

      case Step::kReleased: {
        waiting_ = TileWait::kRunning;
        if (awaited_release_ != nullptr) release_ = *std::exchange(awaited_release_, nullptr);
        if (!release_.error.empty()) {
          core_.stop_with_error(fmt::format("{} context 0 (supervisor): {} (cycle {})",
                                            core_.tile_label(), release_.error, compute_begin_));
          return finish(iss::StopReason::kFault);
        }
        add_segment(TileSegment::kSync, core_.blocked_at(), release_.cycle, release_.phase);
        phase_ = release_.phase;
        exchange_begin_ = release_.cycle;
        compute_begin_ = release_.cycle;
        core_.resume_after_sync(release_.cycle);
        if (wait_for_cycle(release_.cycle, Step::kRun)) return;
        break;
      }

      case Step::kPhaseEnd: {
        waiting_ = TileWait::kRunning;
        PhaseEnd end = exchange->phase_end(machine_id_, phase_);
        streaming_done_ = std::max(streaming_done_, end.streaming_done);
        if (!end.error.empty()) {
          core_.stop_with_error(end.error);
          return finish(iss::StopReason::kFault);
        }
        core_.resume_after_exchange();
        step_ = Step::kRun;
        break;
      }

      case Step::kFinished: return;
    }
  }
}

uint64_t Tile::send(uint64_t cycle, uint32_t pc, uint32_t address, std::vector<uint32_t> words,
                    std::vector<unsigned> destinations) {
  if (deferring_)
    return deferred_exchange_.send(cycle, pc, address, std::move(words), std::move(destinations));
  return exchange->send(machine_id_, phase_, cycle, pc, address, std::move(words),
                        std::move(destinations));
}

uint64_t Tile::stream(uint64_t cycle, bool write, uint64_t sm_address, uint32_t address,
                      uint32_t count, std::vector<uint32_t> words) {
  if (deferring_)
    return deferred_exchange_.stream(cycle, write, sm_address, address, count, std::move(words));
  return exchange->stream(machine_id_, phase_, cycle, write, sm_address, address, count,
                          std::move(words));
}

void Tile::select_source(uint64_t cycle, uint32_t pc, int source) {
  if (deferring_) return deferred_exchange_.select_source(cycle, pc, source);
  exchange->select_source(machine_id_, phase_, cycle, pc, source);
}

// The exchange's latency is its configuration's, the same from any thread: a deferred burst asks
// it directly.
uint64_t Tile::latency_to(unsigned tile) const { return exchange->latency(machine_id_, tile); }

void Tile::receive_buffer(uint64_t cycle, uint32_t pc, uint32_t address, uint32_t words) {
  if (deferring_) return deferred_exchange_.receive_buffer(cycle, pc, address, words);
  exchange->receive_buffer(machine_id_, phase_, cycle, pc, address, words);
}

void Tile::read(uint32_t address, uint8_t* data, size_t size) const {
  if (replica_)  // its memory is in the process that runs it
    throw std::logic_error(
        fmt::format("{}'s memory is not in this simulator process", core_.tile_label()));
  std::memcpy(data, sram_.data() + (address - config_.sram_base), size);
}

void Tile::load(uint32_t address, const uint8_t* data, size_t size) {
  if (replica_) return;
  std::memcpy(sram_.data() + (address - config_.sram_base), data, size);
  core_.invalidate(address, static_cast<uint32_t>(size));
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

void Tile::b_transport(int, tlm::tlm_generic_payload& payload, sc_core::sc_time& delay) {
  uint32_t offset = 0;
  if (!access(payload, offset)) return;
  const uint32_t length = payload.get_data_length();
  if (replica_) {
    if (payload.is_read())  // nothing here reads a replica: its memory is in another process
      throw std::logic_error(
          fmt::format("{}'s memory is not in this simulator process", core_.tile_label()));
  } else if (payload.is_write()) {
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

bool Tile::get_direct_mem_ptr(int, tlm::tlm_generic_payload&, tlm::tlm_dmi& dmi) {
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

unsigned Tile::transport_dbg(int, tlm::tlm_generic_payload& payload) {
  uint32_t offset = 0;
  if (!access(payload, offset)) return 0;
  const uint32_t length = payload.get_data_length();
  if (replica_) return 0;  // its memory is in the process that runs it
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

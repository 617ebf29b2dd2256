#include "deferred_exchange.h"

#include <fmt/format.h>

#include <stdexcept>
#include <utility>

namespace ipu::hw {

DeferredExchange::Call& DeferredExchange::record(Call::Kind kind, uint64_t cycle, uint32_t pc) {
  Call& call = calls_.emplace_back();
  call.kind = kind;
  call.cycle = cycle;
  call.pc = pc;
  return call;
}

uint64_t DeferredExchange::send(uint64_t cycle, uint32_t pc, uint32_t address,
                                std::vector<uint32_t> words, std::vector<unsigned> destinations) {
  Call& call = record(Call::kSend, cycle, pc);
  call.address = address;
  call.port_free = send_port_free(cycle, words.size(), words_per_cycle_);
  call.words = std::move(words);
  call.destinations = std::move(destinations);
  return call.port_free;
}

void DeferredExchange::select_source(uint64_t cycle, uint32_t pc, int source) {
  record(Call::kSelect, cycle, pc).source = source;
}

void DeferredExchange::receive_buffer(uint64_t cycle, uint32_t pc, uint32_t address,
                                      uint32_t words) {
  Call& call = record(Call::kBuffer, cycle, pc);
  call.address = address;
  call.count = words;
}

uint64_t DeferredExchange::stream(uint64_t cycle, bool write, uint64_t sm_address, uint32_t address,
                                  uint32_t count, std::vector<uint32_t> words) {
  Call& call = record(Call::kStream, cycle);
  call.write = write;
  call.sm_address = sm_address;
  call.address = address;
  call.count = count;
  call.port_free = stream_port_free(cycle, write, count, words_per_cycle_);
  call.words = std::move(words);
  return call.port_free;
}

void DeferredExchange::commit(ExchangeIf& exchange, unsigned tile, uint64_t phase,
                              const std::function<std::string()>& tile_label) {
  for (Call& call : calls_) {
    uint64_t port_free = call.port_free;
    switch (call.kind) {
      case Call::kSend:
        port_free = exchange.send(tile, phase, call.cycle, call.pc, call.address,
                                  std::move(call.words), std::move(call.destinations));
        break;
      case Call::kSelect:
        exchange.select_source(tile, phase, call.cycle, call.pc, call.source);
        break;
      case Call::kBuffer:
        exchange.receive_buffer(tile, phase, call.cycle, call.pc, call.address, call.count);
        break;
      case Call::kStream:
        port_free = exchange.stream(tile, phase, call.cycle, call.write, call.sm_address,
                                    call.address, call.count, std::move(call.words));
        break;
    }
    if (port_free != call.port_free)
      throw std::logic_error(fmt::format(
          "{}: the exchange frees the send port at cycle {}, the tile was told {} (cycle {})",
          tile_label(), port_free, call.port_free, call.cycle));
  }
  calls_.clear();
}

void DeferredExchange::save(base::ByteWriter& out) const {
  out.put(static_cast<uint64_t>(calls_.size()));
  for (const Call& c : calls_) {
    out.put(c.kind), out.put(c.cycle), out.put(c.pc), out.put(c.address), out.put(c.count);
    out.put(c.source);
    out.put(c.write), out.put(c.sm_address), out.put(c.port_free);
    out.put(c.words), out.put(c.destinations);
  }
}

void DeferredExchange::load(base::ByteReader& in) {
  calls_.resize(in.count(sizeof(Call::Kind) + sizeof(uint64_t)));
  for (Call& c : calls_) {
    in.get(c.kind), in.get(c.cycle), in.get(c.pc), in.get(c.address), in.get(c.count);
    in.get(c.source);
    in.get(c.write), in.get(c.sm_address), in.get(c.port_free);
    in.get(c.words), in.get(c.destinations);
  }
}

}  // namespace ipu::hw

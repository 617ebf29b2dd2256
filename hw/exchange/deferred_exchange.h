// A tile's exchange instructions, held while its compute burst runs on a host thread
// (hw/parallel/compute_pool.h) and handed to the exchange on the simulation thread afterwards. Each
// call answers as the exchange would: the cycle the send port is free again comes from the
// sender's own figures, and commit() checks that the exchange agrees.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/byte_stream.h"
#include "exchange.h"

namespace ipu::hw {

class DeferredExchange {
 public:
  void set_words_per_cycle(unsigned words_per_cycle) { words_per_cycle_ = words_per_cycle; }

  // ExchangeIf's calls for one tile and phase, recorded.
  uint64_t send(uint64_t cycle, uint32_t pc, uint32_t address, std::vector<uint32_t> words,
                std::vector<unsigned> destinations);
  void select_source(uint64_t cycle, uint32_t pc, int source);
  void receive_buffer(uint64_t cycle, uint32_t pc, uint32_t address, uint32_t words);
  uint64_t stream(uint64_t cycle, bool write, uint64_t sm_address, uint32_t address, uint32_t count,
                  std::vector<uint32_t> words);

  // Hands every call, in order, to `exchange` as machine tile `tile` in phase `phase`, and
  // forgets them. Throws std::logic_error naming `tile_label` if the exchange frees the send
  // port at another cycle than the tile was told.
  // tile_label names the tile in the error, formatted only then (commits are on the serial
  // path of every burst).
  void commit(ExchangeIf& exchange, unsigned tile, uint64_t phase,
              const std::function<std::string()>& tile_label);

  // The recorded calls, for a simulator process that keeps a replica of the tile
  // (hw/parallel/ranks.h); load() replaces what was recorded here.
  void save(base::ByteWriter& out) const;
  void load(base::ByteReader& in);

 private:
  struct Call {
    enum Kind : uint8_t { kSend, kSelect, kBuffer, kStream } kind;
    uint64_t cycle;
    uint32_t pc = 0;  // the instruction's (sends, selects and buffers)
    uint32_t address = 0;
    uint32_t count = 0;  // receive buffer or streamed words
    int source = -1;
    bool write = false;
    uint64_t sm_address = 0;
    uint64_t port_free = 0;  // what the tile was told
    std::vector<uint32_t> words;
    std::vector<unsigned> destinations;
  };
  Call& record(Call::Kind kind, uint64_t cycle, uint32_t pc = 0);

  unsigned words_per_cycle_ = 1;
  std::vector<Call> calls_;
};

}  // namespace ipu::hw

// The IPU-Gateway of an IPU-Machine: the board's streaming memory (DDR4 DIMMs, stored
// sparsely), reached by the board's chips over PCIe Gen4 x8 each and by the host over 100 GbE
// RoCE ports.
//
// Tiles reach streaming memory only in exchange phases (ipu.smwrite, ipu.smread: remote-buffer
// transfers). The exchange collects a phase's transfers and, once every tile of the phase is at
// its boundary, hands them to the gateways, which time them and move the data. A transfer moves
// in bursts (gateway.burst-bytes, aligned in streaming memory); each burst queues, first come
// first served, at the servers on its path, each serialising it at its rate:
//   write: tile port (words leave at t + 1 + k) -> chip exchange to its edge (base latency)
//          -> the chip's link to the gateway -> link latency -> its DIMM (done when written)
//   read:  request reaches the gateway (t + 1 + base latency + link latency) -> its DIMM ->
//          DDR latency -> the gateway's link to the chip -> link latency + base latency -> the
//          tile's receive port (exchange.words-per-cycle) (done when the last word landed)
// The receive port also takes the exchange's words in the same phase. Those are scheduled (the
// exchange has no queue), so a read's words land in the cycles they leave free: a cycle takes
// exchange.words-per-cycle words in all.
// A read keeps one burst queued at the DIMMs (the next goes when this one is through), so reads
// of every chip take turns there. Consecutive blocks of gateway.interleave-bytes alternate DIMMs.
// Each chip's phases reach serve() on their own, not in time order with other chips': a DIMM
// keeps its idle gaps, and a burst takes the earliest idle time from its arrival.
// Time is kept in 1/65536 cycle so that rates that are not whole bytes per cycle are carried
// exactly enough; the order of service is decided by arrival time, then machine tile, then issue
// order: never by the order the host happened to run the tiles in.
//
// The host reaches streaming memory over the RoCE ports, on the same DIMM schedule as the tiles:
// a host transfer (host_start .. host_finish, on the chips' clock) is cut into 64 KiB messages
// that alternate ports, each port and direction serialising its own. A write's message streams
// into the DIMMs as the port delivers it, a burst at a time; a read keeps an interleave block's
// bursts queued at each DIMM and its message leaves on the port as the data comes (cut
// through). Its bursts queue at the DIMMs in time order with the tiles' bursts, first come first
// served: a host stream the runtime prefetches while the tiles compute and a remote-buffer transfer
// of the same time contend there. The host's latency (gateway.host-latency-ns) ends each transfer.
// HostLink drives them from a SystemC thread (sc_time 0 is cycle 0).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <systemc>
#include <tuple>
#include <vector>

#include "gateway_config.h"
#include "host_link.h"
#include "hw/common/machine_shape.h"
#include "hw/exchange/exchange_config.h"
#include "streaming_memory.h"

namespace ipu::hw {

// One tile's streaming-memory transfer in an exchange phase.
struct StreamRequest {
  unsigned tile = 0;            // machine tile (chip * tiles per chip + tile)
  uint64_t cycle = 0;           // issue cycle: words (or the read request) leave from cycle + 1
  bool write = false;           // ipu.smwrite; else ipu.smread
  uint64_t address = 0;         // streaming-memory byte address, word aligned
  uint32_t tile_address = 0;    // the words' address in the tile
  uint32_t count = 0;           // words
  std::vector<uint32_t> words;  // write: the data sent; read: filled by serve()
  uint64_t done = 0;  // filled by serve(): cycle the last word was in DDR (write) or landed (read)
};

// The exchange's words arriving at each tile that reads streaming memory in the phase: (cycle,
// words), by cycle.
using ExchangeArrivals = std::map<unsigned, std::vector<std::pair<uint64_t, uint32_t>>>;

// What a path's server (a link direction, a DIMM, a tile's receive port) did.
struct TransferCounters {
  uint64_t bytes = 0;
  uint64_t transfers = 0;                    // bursts (tile traffic) or transactions (host)
  double busy_cycles = 0;                    // cycles spent serialising
  uint64_t first_cycle = 0, last_cycle = 0;  // first burst's start, last burst's end
};

// The chip's exchange between a tile and the chip's edge, as a streaming-memory transfer
// crosses it: the exchange's base latency, and the words a tile sends or receives a cycle.
struct ChipEdge {
  unsigned latency = 16;
  unsigned words_per_cycle = 1;
  static ChipEdge of(const ExchangeConfig& exchange) {
    return {exchange.base_latency, exchange.words_per_cycle};
  }
};

class Gateway : public sc_core::sc_module {
 public:
  // Gateway `index` of a machine of chips of `chip`, serving chips first_chip ..
  // first_chip + chips - 1.
  Gateway(const sc_core::sc_module_name& name, const GatewayConfig& config,
          const MachineShape& shape, const ChipEdge& edge, unsigned index, unsigned first_chip,
          unsigned chips);

  // Times one exchange phase's transfers of this board's tiles and moves their data: writes
  // into streaming memory, reads into `words`; sets each `done`. `arrivals`: the exchange's
  // words at the reading tiles, which their receive ports take first.
  void serve(std::vector<StreamRequest*>& requests, const ExchangeArrivals& arrivals = {});

  unsigned index() const { return index_; }
  unsigned first_chip() const { return first_chip_; }
  unsigned chips() const { return chips_; }
  const GatewayConfig& config() const { return config_; }
  double clock_hz() const { return clock_hz_; }
  StreamingMemory& memory() { return memory_; }
  const StreamingMemory& memory() const { return memory_; }
  unsigned dimm_of(uint64_t address) const {
    return static_cast<unsigned>((address / config_.interleave_bytes) % config_.dimms);
  }

  // Host traffic, on the chips' clock. host_start begins moving `bytes` between the host's
  // `data` (kept valid until finished) and streaming memory at `address`, from `cycle`; it
  // throws std::out_of_range naming the range when that is not in streaming memory.
  // host_finish times the transfer to its end, with whatever else shares its servers until
  // then, and returns the cycle it is complete. serve() moves host transfers in flight along
  // with the tiles'.
  using HostTransfer = uint64_t;
  HostTransfer host_start(bool to_gateway, uint64_t address, uint8_t* data, uint64_t bytes,
                          uint64_t cycle);
  uint64_t host_finish(HostTransfer transfer);

  // Chip c's link to the gateway (`to_gateway`) and back, and each DIMM (tile and host traffic).
  const TransferCounters& chip_link(unsigned local_chip, bool to_gateway) const {
    return servers_[link_server(local_chip, to_gateway)].counters;
  }
  const TransferCounters& dimm(unsigned d) const { return servers_[d].counters; }
  // Host traffic per RoCE port: to_gateway (host writes) or to the host (reads); transfers
  // count messages.
  const TransferCounters& host_port(unsigned port, bool to_gateway) const {
    return host_ports_[2 * port + (to_gateway ? 0 : 1)].counters;
  }
  uint64_t bytes_written() const { return bytes_written_; }  // by tiles
  uint64_t bytes_read() const { return bytes_read_; }        // by tiles

 private:
  struct Server {
    uint64_t free = 0;  // ticks: when the last burst queued here is through
    uint64_t busy_ticks = 0, first = ~uint64_t{0}, last = 0;
    TransferCounters counters;
    // A DIMM serves the phases of all the board's chips, which reach serve() one at a time and
    // not in time order (each chip syncs on its own): a burst takes the earliest idle time from
    // its arrival, a gap between bursts booked before it included. Gaps too short for a burst
    // (min_gap) are not kept, nor more than kMaxGaps (the earliest go first).
    std::map<uint64_t, uint64_t> gaps;  // start -> end, in ticks
    uint64_t min_gap = 0;               // 0: no gaps kept (a link, a port: one chip's phases)
  };
  static constexpr size_t kMaxGaps = size_t{1} << 16;
  // A host transfer in flight: its messages, and the bursts still to move.
  struct HostFlight {
    bool to_gateway = false;
    uint64_t address = 0, bytes = 0;
    uint8_t* data = nullptr;
    unsigned first_port = 0;
    struct Message {
      uint64_t port_start = 0;  // a write's: when the port starts sending it
      uint64_t first_ready = ~uint64_t{0}, last_ready = 0;  // a read's data, ready to send
      uint64_t bursts_left = 0;
    };
    std::vector<Message> messages;
    uint64_t bursts_left = 0;
    uint64_t next_read = 0;  // a read's next burst to queue at its DIMM (an offset)
    uint64_t done = 0;       // ticks
  };
  // A burst of a host transfer reaching a DIMM: by time, then transfer, then offset.
  struct HostEvent {
    uint64_t tick, transfer, offset;
    bool operator<(const HostEvent& o) const {
      return std::tie(tick, transfer, offset) < std::tie(o.tick, o.transfer, o.offset);
    }
  };
  unsigned link_server(unsigned local_chip, bool to_gateway) const {
    return config_.dimms + 2 * local_chip + (to_gateway ? 0 : 1);
  }
  // Queues `bytes` arriving at `tick` at server `s`; returns when they are through.
  uint64_t pass(Server& s, uint64_t tick, uint64_t service_ticks, uint64_t bytes);
  HostTransfer start_flight(HostFlight flight, uint64_t tick);
  uint64_t burst_end(const HostFlight& f, uint64_t offset) const;  // of the burst at offset
  Server& host_port_server(const HostFlight& f, size_t message) {
    const auto port = static_cast<unsigned>((f.first_port + message) % config_.host_ports);
    return host_ports_[2 * port + (f.to_gateway ? 0 : 1)];
  }
  void queue_read_burst(HostTransfer id, HostFlight& f, uint64_t tick);
  void move_host_burst(const HostEvent& e);  // takes the burst through its DIMM
  uint64_t finish_ticks(HostTransfer transfer);

  GatewayConfig config_;
  unsigned index_, first_chip_, chips_, tiles_per_chip_;
  double clock_hz_;
  unsigned base_latency_, words_per_cycle_;
  uint64_t link_latency_ticks_, ddr_latency_ticks_;
  double link_ticks_per_byte_, ddr_ticks_per_byte_;
  StreamingMemory memory_;
  std::vector<Server> servers_;     // DIMMs, then per chip its link to the gateway and back
  std::vector<Server> host_ports_;  // per port: to the gateway, then to the host
  uint64_t host_latency_ticks_;
  double host_port_ticks_per_byte_;
  std::map<HostTransfer, HostFlight> flights_;
  HostTransfer next_flight_ = 0;
  std::set<HostEvent> host_events_;  // each flight's blocks next due at a DIMM
  uint64_t bytes_written_ = 0, bytes_read_ = 0;
};

// The machine's gateways, one per chips_per_gateway chips: the exchange hands them each
// phase's transfers.
class Gateways {
 public:
  Gateways(const GatewayConfig& config, const MachineShape& shape, const ChipEdge& edge);

  bool present() const { return !gateways_.empty(); }
  Gateway& of_chip(unsigned chip) { return *gateways_.at(chip / config_.chips_per_gateway); }
  const std::vector<std::unique_ptr<Gateway>>& all() const { return gateways_; }
  // Bytes of streaming memory a tile of any chip reaches (0: none).
  uint64_t memory_bytes() const { return present() ? gateways_[0]->memory().size() : 0; }
  // The host's RoCE link to gateway g.
  HostLink& host_link(unsigned g) { return *host_links_.at(g); }
  void serve(std::vector<StreamRequest>& requests, const ExchangeArrivals& arrivals = {});

 private:
  GatewayConfig config_;
  unsigned tiles_per_chip_;
  std::vector<std::unique_ptr<Gateway>> gateways_;
  std::vector<std::unique_ptr<HostLink>> host_links_;
};

}  // namespace ipu::hw

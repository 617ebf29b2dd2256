// The machine's exchange: all-to-all, non-blocking, compiled and time-deterministic. Each tile
// sends `exchange.words-per-cycle` 32-bit words per cycle and receives as many; there are no
// queues or arbiters. A send names its destinations (source, destinations, words, start
// cycle); each receiver selects the one tile it listens to and where arriving words land.
// Multicast costs nothing extra. A word sent at cycle t arrives at t + 1 + latency(src, dst)
// (ExchangeConfig::latency: grows with the columns between the tiles).
//
// Between chips (after an external sync) a word crosses the sender's exchange to a link port
// (exchange.base-latency), the IPU-Links of its route (hw/ipulink: rung first, then along the
// column; ipulink latency + serialisation per hop) and the receiver's exchange
// (exchange.base-latency). Every link a phase uses must carry its words at its rate: an
// over-subscribed link is a schedule error like the others. Tiles are machine tile numbers
// (chip * tiles per chip + tile), which on one chip are the tiles' own numbers.
//
// Tiles run their exchange phase (from a sync release to their next ipu.run / xend / sync /
// exit) decoupled; when every tile of the phase has reached that boundary the exchange
// resolves it: each word is checked against the receiver's selected source and receive
// buffer, and delivered into the receiver's SRAM through the TLM socket. Any schedule error
// (wrong or no source selected, buffer overrun, a buffer left short, a word arriving after the
// receiver's phase ended, a destination outside the phase) stops the run with a report naming
// sending tile, receiving tile, cycle and addresses. Nothing is dropped silently.
//
// Streaming-memory transfers (ipu.smwrite, ipu.smread) are collected with the phase and, once
// it checks out, handed to the gateways (hw/gateway) that time them; a tile's next sync waits
// for its own transfers to complete.
#pragma once

#include <tlm_utils/multi_passthrough_initiator_socket.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <systemc>
#include <tlm>
#include <tuple>
#include <utility>
#include <vector>

#include "hw/common/machine_shape.h"
#include "hw/exchange/exchange_config.h"
#include "hw/gateway/gateway.h"
#include "hw/ipulink/link_fabric.h"
#include "hw/sync/sync_network.h"
#include "receive_mux.h"

namespace ipu::hw {

// What a tile learns when its exchange phase is resolved.
struct PhaseEnd {
  std::string error;            // the report that stops the run, or empty
  uint64_t streaming_done = 0;  // cycle its streaming-memory transfers completed (0: none)
};

// When a tile's send port is free again: after a send of `words` words issued at `cycle`, and
// after a streaming-memory transfer (a write's words leave one per send slot; a read sends its
// request in one).
inline uint64_t send_port_free(uint64_t cycle, uint64_t words, unsigned words_per_cycle) {
  return cycle + 1 + (words + words_per_cycle - 1) / words_per_cycle;
}
inline uint64_t stream_port_free(uint64_t cycle, bool write, uint64_t count,
                                 unsigned words_per_cycle) {
  return write ? send_port_free(cycle, count, words_per_cycle) : cycle + 2;
}

class ExchangeIf : public virtual sc_core::sc_interface {
 public:
  // Words each tile sends (and receives) per cycle.
  virtual unsigned words_per_cycle() const = 0;
  // Records a send; returns the cycle from which the sender's port is free again.
  // Send-to-arrival cycles between two machine tiles (thread-safe: the configuration's).
  virtual uint64_t latency(unsigned from, unsigned to) const = 0;
  // `pc` is the tile's instruction (iss::ExchangeSink), for error reports.
  virtual uint64_t send(unsigned tile, uint64_t phase, uint64_t cycle, uint32_t pc,
                        uint32_t address, std::vector<uint32_t> words,
                        std::vector<unsigned> destinations) = 0;
  virtual void select_source(unsigned tile, uint64_t phase, uint64_t cycle, uint32_t pc,
                             int source) = 0;
  virtual void receive_buffer(unsigned tile, uint64_t phase, uint64_t cycle, uint32_t pc,
                              uint32_t address, uint32_t words) = 0;
  // A streaming-memory transfer (ExchangeSink::stream); returns when the send port is free.
  virtual uint64_t stream(unsigned tile, uint64_t phase, uint64_t cycle, bool write,
                          uint64_t sm_address, uint32_t address, uint32_t count,
                          std::vector<uint32_t> words) = 0;
  // A tile reached the end of its exchange phase at `cycle`. Tiles are SC_METHODs, which cannot
  // block: the tile waits for the returned event, which fires when the phase is resolved (the
  // last tile to arrive resolves it, and waits with the others), then reads phase_end().
  virtual const sc_core::sc_event& reach_boundary(unsigned tile, uint64_t phase,
                                                  uint64_t cycle) = 0;
  // What the resolved phase came to for `tile`; once per tile and phase.
  virtual PhaseEnd phase_end(unsigned tile, uint64_t phase) = 0;
};

// One resolved exchange phase, for the statistics.
struct ExchangeRecord {
  uint64_t phase = 0;
  unsigned group = 0;
  uint64_t release = 0;     // cycle the phase began (the sync release)
  uint64_t end = 0;         // latest boundary of its tiles
  uint64_t words = 0;       // words delivered (a multicast word counts once per receiver)
  uint64_t chip_words = 0;  // of those, words delivered to a tile of another chip
  // Of those within a chip, each word times the exchange columns between sender and receiver
  // (the energy model's distance term).
  uint64_t column_words = 0;
  uint64_t last_arrival = 0;  // cycle of the last word's arrival (0: no traffic)
  uint64_t streaming_bytes_written = 0, streaming_bytes_read = 0;
  uint64_t streaming_done = 0;  // cycle the phase's last streaming-memory transfer completed
};

// The words of one send that reached one receiver, for the trace's flow arrows (recorded only
// when asked: a full-chip all-to-all has two million a phase).
struct ExchangeFlow {
  uint64_t phase = 0;
  unsigned from = 0, to = 0;  // machine tiles
  uint64_t sent = 0;          // cycle the send issued
  uint64_t first_arrival = 0, last_arrival = 0;
  uint32_t words = 0;
};

class Exchange : public sc_core::sc_module, public ExchangeIf {
 public:
  // Bound to every active tile's memory socket, in the order of `active_tiles`.
  tlm_utils::multi_passthrough_initiator_socket<Exchange> to_tiles;

  // `links`: the machine's IPU-Links (null on one chip).
  Exchange(const sc_core::sc_module_name& name, const ExchangeConfig& config,
           const MachineShape& shape, const std::vector<unsigned>& active_tiles,
           const LinkFabric* links = nullptr);

  // Send-to-arrival cycles between two machine tiles, on one chip or across IPU-Links.
  uint64_t latency(unsigned from, unsigned to) const override;

  // Opens the exchange phase a barrier release starts (SyncNetwork::on_release).
  void open_phase(const BarrierRecord& barrier);

  unsigned words_per_cycle() const override { return config_.words_per_cycle; }
  uint64_t send(unsigned tile, uint64_t phase, uint64_t cycle, uint32_t pc, uint32_t address,
                std::vector<uint32_t> words, std::vector<unsigned> destinations) override;
  void select_source(unsigned tile, uint64_t phase, uint64_t cycle, uint32_t pc,
                     int source) override;
  void receive_buffer(unsigned tile, uint64_t phase, uint64_t cycle, uint32_t pc, uint32_t address,
                      uint32_t words) override;
  uint64_t stream(unsigned tile, uint64_t phase, uint64_t cycle, bool write, uint64_t sm_address,
                  uint32_t address, uint32_t count, std::vector<uint32_t> words) override;
  const sc_core::sc_event& reach_boundary(unsigned tile, uint64_t phase, uint64_t cycle) override;
  PhaseEnd phase_end(unsigned tile, uint64_t phase) override;

  // The machine's gateways (streaming memory); none on a PCIe card.
  void set_gateways(Gateways* gateways) { gateways_ = gateways; }

  // Runs fn(0) .. fn(n - 1), on host threads if it likes, and returns when all are done.
  using ParallelFor = std::function<void(size_t n, const std::function<void(size_t)>& fn)>;
  // Receivers' checks go through `parallel_for` (with the C++ receive mux; unset: one after
  // another). The machine passes its compute pool's (hw/parallel/compute_pool.h).
  void set_parallel_for(ParallelFor parallel_for) { parallel_for_ = std::move(parallel_for); }

  // Name a tile's code and data addresses in schedule errors: `code` a pc ("main at
  // prefix.c:31"), `data` a data address ("out+8"); "" (or unset) for one it cannot name.
  // Called from the receivers' host threads: they must be thread-safe.
  using Locator = std::function<std::string(uint32_t)>;
  void set_locators(Locator code, Locator data) {
    locate_code_ = std::move(code), locate_data_ = std::move(data);
  }

  // The receive mux deciding each word (the C++ model unless ipu-sim --rtl xmux).
  void set_receive_mux(ReceiveMuxIf* mux) { receive_mux_ = mux != nullptr ? mux : &model_mux_; }

  // Every resolved phase, for statistics and traces (kept unless keep_records is off).
  const std::vector<ExchangeRecord>& records() const { return records_; }
  void keep_records(bool keep) { keep_records_ = keep; }
  // Words delivered over the whole run, and of those to another chip (kept either way).
  uint64_t words() const { return words_; }
  uint64_t chip_words() const { return chip_words_; }
  // The cycles during which some phase that streamed was under way (from its release to its
  // end, or to its transfers' completion, which the tiles' next sync waits for), and those of
  // the other phases that moved words between chips: a program's time off the chips, as
  // RunReport carries it. Chips stream in phases of their own, at once, so the phases' spans
  // are merged, not added up.
  uint64_t streaming_phase_cycles() const { return streaming_spans_.cycles(); }
  uint64_t cross_chip_phase_cycles() const { return cross_chip_spans_.cycles(); }
  // Words delivered to chip `chip`'s tiles over the whole run, and of those from its own tiles
  // each times the exchange columns it crossed (for the energy model).
  uint64_t words_to_chip(unsigned chip) const {
    return chip < words_to_chip_.size() ? words_to_chip_[chip] : 0;
  }
  uint64_t column_words_to_chip(unsigned chip) const {
    return chip < column_words_to_chip_.size() ? column_words_to_chip_[chip] : 0;
  }
  // Keeps up to `limit` ExchangeFlows of resolved phases, in phase and receiver order (0:
  // none, the default); flows_dropped() counts the rest.
  void record_flows(size_t limit) { flow_limit_ = limit; }
  const std::vector<ExchangeFlow>& flows() const { return flows_; }
  uint64_t flows_dropped() const { return flows_dropped_; }
  // Tiles waiting at their boundary in an unresolved phase: (phase, tile, boundary cycle).
  std::vector<std::tuple<uint64_t, unsigned, uint64_t>> waiting() const;

 private:
  struct Send {
    unsigned source;
    uint64_t cycle;
    uint32_t pc;
    uint32_t address;
    std::vector<uint32_t> words;
    std::vector<unsigned> destinations;
  };
  struct Select {
    uint64_t effective;
    int source;
    uint32_t pc;
  };
  struct Buffer {
    uint64_t effective;
    uint32_t address;
    uint32_t words;
    uint32_t pc;
    uint32_t filled = 0;
  };
  struct TileState {
    std::vector<Select> selects;
    std::vector<Buffer> buffers;
    uint64_t boundary = 0;
    bool at_boundary = false;
    uint64_t streaming_done = 0;
  };
  struct Phase {
    BarrierRecord barrier;          // its tiles ascending: the phase's members
    std::vector<TileState> states;  // per member, in barrier.tiles order
    // Where `tile` is among the members; kNotMember when it is none.
    size_t member(unsigned tile) const;
    static constexpr size_t kNotMember = ~size_t{0};
    std::vector<Send> sends;
    std::vector<StreamRequest> streams;
    std::vector<unsigned> stream_readers;  // tiles that read streaming memory, ascending
    unsigned waiting = 0;
    size_t unread = 0;  // members that have not yet read the resolution
    bool resolved = false;
    std::string error;
    sc_core::sc_event done;
  };

  // Words reach a receiver from several sends; they are walked in arrival order with one cursor
  // per (send, receiver) segment, so memory stays proportional to the number of sends.
  struct Cursor {
    uint64_t cycle;  // arrival of word `word`
    unsigned source;
    size_t send;
    uint32_t word;
    bool operator>(const Cursor& o) const {
      return std::tie(cycle, source, send, word) > std::tie(o.cycle, o.source, o.send, o.word);
    }
  };
  // What one receiver's side of a phase came to.
  struct Received {
    std::vector<std::pair<size_t, std::string>> errors;            // (receive cycle, report)
    std::vector<std::pair<uint32_t, std::vector<uint32_t>>> runs;  // contiguous writes
    uint64_t words = 0, chip_words = 0, column_words = 0, last_arrival = 0;
    std::vector<ExchangeFlow> flows;  // when record_flows() asks for them
    // For a tile that also reads streaming memory in the phase: its words' arrivals, (cycle,
    // words), which its receive port takes before the read's.
    std::vector<std::pair<uint64_t, uint32_t>> arrivals;
  };

  Phase& phase(uint64_t id);
  // Member `tile`'s state in phase `p` (an internal error when it is none).
  TileState& state(Phase& p, unsigned tile) const;
  std::string resolve(Phase& p);
  // Checks receiver `tile`'s words (`heap`: its cursors, consumed) against its selects and
  // buffers through the receive mux. Touches nothing shared: receivers run on several threads.
  Received receive(const Phase& p, unsigned tile, const TileState& t,
                   std::vector<Cursor>& heap) const;
  // Hands every word that crosses an IPU-Link in phase `p` to its link; appends an error for
  // the first word of an over-subscribed link.
  void cross_links(const Phase& p, std::vector<std::string>& errors);
  std::string name(unsigned tile) const { return tile_name(tile, shape_); }
  // "0x0004f4f8", or "0x0004f4f8 = out+8" when the data locator names it.
  std::string data_address(uint32_t address) const;
  // " in main at prefix.c:31" when the code locator names pc, else "".
  std::string source_of(uint32_t pc) const;
  void deliver(unsigned tile, uint32_t address, const std::vector<uint32_t>& words);
  // Times the phase's streaming-memory transfers through the gateways and lands the reads;
  // `record` (the phase's) gets their bytes and end.
  void stream_through_gateways(Phase& p, ExchangeRecord& record,
                               const ExchangeArrivals& arrivals = {});

  ExchangeConfig config_;
  MachineShape shape_;
  const LinkFabric* links_;
  std::map<unsigned, unsigned> socket_of_;  // tile -> socket index
  std::map<uint64_t, Phase> phases_;
  std::vector<ExchangeRecord> records_;
  bool keep_records_ = true;
  uint64_t words_ = 0, chip_words_ = 0;
  // The cycles a union of spans [begin, end) covers, the spans added in any order. Each count
  // merges what it holds and keeps only the latest-ending merged span (a later phase can
  // overlap only spans still under way: at a run's end, none); the rest is a number.
  class SpanUnion {
   public:
    void add(uint64_t begin, uint64_t end) {
      if (end > begin) spans_.emplace_back(begin, end);
    }
    uint64_t cycles() const;

   private:
    mutable std::vector<std::pair<uint64_t, uint64_t>> spans_;
    mutable uint64_t settled_ = 0;
  };
  SpanUnion streaming_spans_, cross_chip_spans_;
  std::vector<uint64_t> words_to_chip_, column_words_to_chip_;
  size_t flow_limit_ = 0;
  std::vector<ExchangeFlow> flows_;
  uint64_t flows_dropped_ = 0;
  ReceiveMux model_mux_;
  ReceiveMuxIf* receive_mux_ = &model_mux_;
  Gateways* gateways_ = nullptr;
  ParallelFor parallel_for_;
  Locator locate_code_, locate_data_;
};

}  // namespace ipu::hw

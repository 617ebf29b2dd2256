// What the RTL wrappers share (docs/rtl.md). A wrapper owns one verilated block in its own
// VerilatedContext and is a TLM-2.0 target: the generic payload's data pointer carries the
// block's transaction (a write of exactly sizeof(Transaction) bytes), the wrapper drives the
// RTL through it clock by clock and annotates the RTL clocks it took. The RTL is clocked only
// while it works; its waveform (--rtl-trace) is timed in those clocks.
#pragma once

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <systemc>
#include <tlm>

// verilated.h, when it sees SystemC, calls sc_time_stamp() unqualified.
using sc_core::sc_time_stamp;

#include "iss/datapaths.h"
#include "verilated.h"
#include "verilated_fst_c.h"

namespace ipu::tlm_rtl {

// The RTL did not behave as its C++ model: a different latency, a flag the model would not
// raise, a block that never answers. Names the block and what it did; a tile that meets one
// reports it with its tile, context, pc and cycle (iss::DatapathMismatch).
class RtlMismatch : public iss::DatapathMismatch {
 public:
  using iss::DatapathMismatch::DatapathMismatch;
};

template <class Model, class Transaction>
class RtlBlock : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<RtlBlock> socket;

  RtlBlock(const sc_core::sc_module_name& name, double clock_hz)
      : sc_module(name),
        socket("socket"),
        context_(std::make_unique<VerilatedContext>()),
        rtl_(std::make_unique<Model>(context_.get())),
        period_(sc_core::sc_time(1.0 / clock_hz, sc_core::SC_SEC)) {
    socket.register_b_transport(this, &RtlBlock::b_transport);
  }
  ~RtlBlock() override {
    if (trace_) trace_->close();
    rtl_->final();
  }

  // Dumps the block's signals to an FST file from now on.
  void trace_to(const std::string& path) {
    context_->traceEverOn(true);
    trace_ = std::make_unique<VerilatedFstC>();
    rtl_->trace(trace_.get(), 99);
    trace_->open(path.c_str());
    if (!trace_->isOpen()) throw std::runtime_error("--rtl-trace: cannot write " + path);
  }
  uint64_t clocks() const { return clocks_; }
  uint64_t transactions() const { return transactions_; }
  double host_seconds() const { return host_seconds_; }  // spent running transactions

 protected:
  // Runs one transaction on the RTL, clock by clock; throws RtlMismatch when the RTL departs
  // from its C++ model in timing or protocol.
  virtual void execute(Transaction& transaction) = 0;

  Model& rtl() { return *rtl_; }
  // One clock: the inputs set before the call are sampled at its rising edge.
  void clock() {
    rtl_->clk = 0;
    rtl_->eval();
    dump();
    rtl_->clk = 1;
    rtl_->eval();
    ++clocks_;
    dump();
  }
  // Settles the combinational outputs for the inputs set (clock low), without an edge.
  void settle() {
    rtl_->clk = 0;
    rtl_->eval();
  }

 private:
  void dump() {
    if (trace_) trace_->dump(context_->time());
    context_->timeInc(1);
  }
  void b_transport(tlm::tlm_generic_payload& payload, sc_core::sc_time& delay) {
    if (payload.get_command() != tlm::TLM_WRITE_COMMAND ||
        payload.get_data_length() != sizeof(Transaction) || payload.get_data_ptr() == nullptr) {
      payload.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
      return;
    }
    const uint64_t before = clocks_;
    const auto t0 = std::chrono::steady_clock::now();
    execute(*reinterpret_cast<Transaction*>(payload.get_data_ptr()));
    host_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ++transactions_;
    delay += period_ * static_cast<double>(clocks_ - before);
    payload.set_response_status(tlm::TLM_OK_RESPONSE);
  }

  std::unique_ptr<VerilatedContext> context_;
  std::unique_ptr<Model> rtl_;
  std::unique_ptr<VerilatedFstC> trace_;
  sc_core::sc_time period_;
  uint64_t clocks_ = 0, transactions_ = 0;
  double host_seconds_ = 0;
};

// Sends `transaction` through `socket` (the initiator side of the wrappers above); throws
// RtlMismatch when the target refuses it.
template <class Socket, class Transaction>
void transport(Socket& socket, Transaction& transaction, const char* block) {
  tlm::tlm_generic_payload payload;
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  payload.set_command(tlm::TLM_WRITE_COMMAND);
  payload.set_address(0);
  payload.set_data_ptr(reinterpret_cast<unsigned char*>(&transaction));
  payload.set_data_length(sizeof(Transaction));
  payload.set_streaming_width(sizeof(Transaction));
  payload.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  socket->b_transport(payload, delay);
  if (!payload.is_response_ok())
    throw RtlMismatch(std::string("the ") + block +
                      " RTL wrapper refused a transaction: " + payload.get_response_string());
}

}  // namespace ipu::tlm_rtl

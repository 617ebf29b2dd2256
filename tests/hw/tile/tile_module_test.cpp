// The SystemC tile through its real ports: the TLM target socket (b_transport with annotated
// delay, DMI, debug transport, address errors) and a program run whose simulated time equals
// its tile cycles times the clock period.
#include <gtest/gtest.h>
#include <tlm_utils/simple_initiator_socket.h>

#include <functional>
#include <systemc>

#include "hw/tile/tile.h"
#include "tests/support/rv_asm.h"

namespace ipu::test {
namespace {

using namespace rv;

struct Stimulus : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<Stimulus> socket{"socket"};
  std::function<void()> script;  // run as a thread at the start of simulation
  SC_HAS_PROCESS(Stimulus);
  explicit Stimulus(const sc_core::sc_module_name& n) : sc_module(n) { SC_THREAD(run); }
  void run() {
    if (script) script();
  }

  tlm::tlm_response_status access(tlm::tlm_command cmd, uint64_t address, void* data, unsigned size,
                                  sc_core::sc_time& delay) {
    tlm::tlm_generic_payload p;
    p.set_command(cmd);
    p.set_address(address);
    p.set_data_ptr(static_cast<unsigned char*>(data));
    p.set_data_length(size);
    p.set_streaming_width(size);
    socket->b_transport(p, delay);
    return p.get_response_status();
  }
};

TEST(TileModule, SocketAccessDmiAndTimedRun) {
  iss::TileConfig config;
  config.clock_hz = 1.25e9;  // 0.8 ns: exact in SystemC's fs resolution
  sc_core::sc_set_time_resolution(1, sc_core::SC_FS);
  hw::Tile tile("tile", config);
  Stimulus host("host");
  host.socket.bind(tile.memory);
  const sc_core::sc_time period(0.8, sc_core::SC_NS);
  EXPECT_EQ(tile.cycle_time(), period);

  // The socket is driven from the stimulus thread (multi-initiator sockets connect at the end
  // of elaboration). Program written through b_transport: count down from 100, exit with 9.
  //   addi a0,zero,100 ; loop: addi a0,a0,-1 ; bne a0,zero,loop ; addi a0,zero,9 ; addi a7,zero,93
  //   ; ecall
  uint32_t program[] = {addi(a0, zero, 100), addi(a0, a0, -1),   B(1, a0, zero, -4),
                        addi(a0, zero, 9),   addi(a7, zero, 93), ecall()};
  // The tile's core may only start once its program is in memory: the script starts it.
  host.script = [&] {
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    ASSERT_EQ(host.access(tlm::TLM_WRITE_COMMAND, config.sram_base, program, sizeof program, delay),
              tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(delay, period * 3.0);  // 24 bytes over the 8-byte SRAM port: 3 cycles

    uint32_t readback[6] = {};
    ASSERT_EQ(
        host.access(tlm::TLM_READ_COMMAND, config.sram_base, readback, sizeof readback, delay),
        tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(std::memcmp(readback, program, sizeof program), 0);

    // Outside the window: address error, nothing written.
    uint32_t word = 0x12345678;
    EXPECT_EQ(host.access(tlm::TLM_WRITE_COMMAND, 0, &word, 4, delay),
              tlm::TLM_ADDRESS_ERROR_RESPONSE);
    EXPECT_EQ(host.access(tlm::TLM_WRITE_COMMAND, config.sram_base + config.sram_bytes - 2, &word,
                          4, delay),
              tlm::TLM_ADDRESS_ERROR_RESPONSE);

    // DMI is granted read-only over the whole window.
    tlm::tlm_generic_payload p;
    p.set_address(config.sram_base);
    tlm::tlm_dmi dmi;
    ASSERT_TRUE(host.socket->get_direct_mem_ptr(p, dmi));
    EXPECT_TRUE(dmi.is_read_allowed());
    EXPECT_FALSE(dmi.is_write_allowed());
    EXPECT_EQ(dmi.get_start_address(), config.sram_base);
    EXPECT_EQ(dmi.get_end_address(), uint64_t{config.sram_base} + config.sram_bytes - 1);
    uint32_t first;
    std::memcpy(&first, dmi.get_dmi_ptr(), 4);
    EXPECT_EQ(first, program[0]);

    // Debug transport reads without time.
    tlm::tlm_generic_payload dbg;
    uint32_t via_debug = 0;
    dbg.set_command(tlm::TLM_READ_COMMAND);
    dbg.set_address(config.sram_base + 4);
    dbg.set_data_ptr(reinterpret_cast<unsigned char*>(&via_debug));
    dbg.set_data_length(4);
    EXPECT_EQ(host.socket->transport_dbg(dbg), 4u);
    EXPECT_EQ(via_debug, program[1]);

    tile.start(config.sram_base, 1'000'000);
  };
  // Run: 1 + 100 x 2 + 3 = 204 instructions, one every 6 cycles: last issue at 6 x 203.
  tile.set_quantum_cycles(500);  // several decoupled bursts
  sc_core::sc_start();
  ASSERT_TRUE(tile.finished());
  EXPECT_EQ(tile.outcome().reason, iss::StopReason::kExited);
  EXPECT_EQ(tile.outcome().exit_status, 9);
  EXPECT_EQ(tile.core().instructions_retired(), 204u);
  EXPECT_EQ(tile.core().cycles(), 6u * 203 + 1);
  // The script's b_transport delays were annotated, not waited: the run starts at time 0.
  EXPECT_EQ(sc_core::sc_time_stamp(), period * static_cast<double>(6 * 203 + 1));
}

}  // namespace
}  // namespace ipu::test

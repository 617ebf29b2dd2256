// The GDB server (debug/gdb_server.h) against a client that speaks the remote protocol byte by
// byte, on a bare core: the pitfalls other simulators' stubs hit (a stop reply without a thread,
// a register count that differs from the target description, a `c` answered with nothing),
// breakpoints, single steps, watchpoints, Ctrl-C, faults, and cycle counts that a debugging
// session leaves as they were. tests/cli/gdb_session.sh drives the real gdb-multiarch.
#include "debug/gdb_server.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <regex>
#include <string>
#include <thread>

#include "debug/remote_connection.h"
#include "tests/support/core_harness.h"
#include "tests/support/gdb_client.h"
#include "tests/support/rv_asm.h"

namespace ipu::test {
namespace {

using namespace rv;

constexpr uint32_t kBase = 0x4c000;
constexpr uint32_t kData = 0x4d000;    // the loop stores its counter here
constexpr uint32_t kTohost = 0x4d100;  // a store of 1 ends the run with status 0
constexpr uint32_t kStorePc = kBase + 16;
constexpr unsigned kLoops = 300;

// x5 counts to kLoops, storing each value at kData; then the program exits through tohost. With
// `forever`, the loop never ends (for Ctrl-C).
std::vector<uint32_t> counting_program(bool forever = false) {
  return {
      lui(6, kData >> 12),                                  // 0: x6 = kData
      addi(5, 0, 0),                                        // 4
      addi(8, 0, forever ? 0 : kLoops),                     // 8
      addi(5, 5, 1),                                        // 12: loop
      sw(5, 6, 0),                                          // 16
      B(1, 5, 8, -8),                                       // 20: bne x5, x8, loop
      lui(10, kTohost >> 12),                               // 24
      addi(10, 10, static_cast<int32_t>(kTohost & 0xfff)),  // 28
      addi(9, 0, 1),                                        // 32
      sw(9, 10, 0),                                         // 36: exit 0
      lw(11, 0, 0),                                         // 40: never reached
  };
}

constexpr unsigned kPc = 32;  // the target description's order: x0..x31, pc, ...

// Runs `program` on a bare core under the server while `session` talks to it; returns the
// core's final state for comparison.
struct Result {
  iss::StopReason reason;
  uint64_t cycles;
  uint64_t instret;
  uint32_t data;
};
Result debug_run(const std::vector<uint32_t>& program,
                 const std::function<void(GdbClient&)>& session) {
  CoreHarness h;
  h.load_words(program);
  h.core.set_tohost(kTohost);
  debug::GdbServer server(0);
  server.set_kill([] {});  // the default ends the process: here the server just hangs up
  server.add_core(h.core);
  std::thread client([&] {
    GdbClient c(server.port());
    session(c);
  });
  const iss::StopReason reason = h.run(1'000'000'000'000);
  using Ended = hw::ChipOutcome::Result;
  server.finish({reason == iss::StopReason::kExited  ? Ended::kExited
                 : reason == iss::StopReason::kFault ? Ended::kFault
                                                     : Ended::kCycleLimit,
                 h.core.exit_status(), ""});
  client.join();
  return {reason, h.core.cycles(), h.core.instructions_retired(), h.read_word(kData)};
}

Result plain_run(const std::vector<uint32_t>& program) {
  CoreHarness h;
  h.load_words(program);
  h.core.set_tohost(kTohost);
  const iss::StopReason reason = h.run(10'000'000);
  return {reason, h.core.cycles(), h.core.instructions_retired(), h.read_word(kData)};
}

TEST(GdbServer, EveryStopReplyNamesItsThread) {
  debug_run(counting_program(), [](GdbClient& c) {
    EXPECT_EQ(c.ask("?"), "T05thread:1;");  // stopped before the first instruction
    EXPECT_EQ(c.reg(kPc), kBase);
    EXPECT_EQ(c.ask(fmt::format("Z0,{:x},4", kStorePc)), "OK");
    EXPECT_EQ(c.ask("c"), "T05swbreak:;thread:1;");
    EXPECT_EQ(c.reg(kPc), kStorePc);
    EXPECT_EQ(c.reg(5), 1u);  // one pass through the increment
    EXPECT_EQ(c.ask(fmt::format("z0,{:x},4", kStorePc)), "OK");
    EXPECT_EQ(c.ask("s"), "T05thread:1;");
    EXPECT_EQ(c.reg(kPc), kStorePc + 4);
    EXPECT_EQ(c.ask("vCont;s:1"), "T05thread:1;");
    EXPECT_EQ(c.reg(kPc), kBase + 12);  // the branch went back to the loop
    EXPECT_EQ(c.ask("qC"), "QC1");
    EXPECT_EQ(c.ask("vCont;c"), "W00");  // the end of the run answers the continue
  });
}

TEST(GdbServer, RegisterPacketHoldsExactlyTheDescribedRegisters) {
  debug_run(counting_program(), [](GdbClient& c) {
    std::string xml, chunk;
    do {
      chunk = c.ask(fmt::format("qXfer:features:read:target.xml:{:x},200", xml.size()));
      ASSERT_FALSE(chunk.empty());
      xml += chunk.substr(1);
    } while (chunk[0] == 'm');
    EXPECT_EQ(xml, debug::GdbServer::target_xml());
    const std::regex reg("<reg ");
    const auto described = static_cast<size_t>(
        std::distance(std::sregex_iterator(xml.begin(), xml.end(), reg), std::sregex_iterator()));
    EXPECT_EQ(described, debug::GdbServer::register_count());
    EXPECT_NE(xml.find("name=\"pc\""), std::string::npos);
    EXPECT_NE(xml.find("org.gnu.gdb.riscv.fpu"), std::string::npos);
    EXPECT_NE(xml.find("name=\"mstatus\""), std::string::npos);
    EXPECT_EQ(c.ask("g").size(), 8 * described);
    EXPECT_EQ(c.ask(fmt::format("p{:x}", described)), "E01");  // one past the last
    EXPECT_EQ(c.ask("P5=78563412"), "OK");
    EXPECT_EQ(c.reg(5), 0x12345678u);
    EXPECT_EQ(c.ask("P0=01000000"), "OK");  // x0 stays zero
    EXPECT_EQ(c.reg(0), 0u);
    EXPECT_EQ(c.ask("D"), "OK");
  });
}

TEST(GdbServer, ContinueIsAnsweredByTheEndOfTheRun) {
  const Result debugged = debug_run(counting_program(), [](GdbClient& c) {
    EXPECT_EQ(c.ask("c"), "W00");
    EXPECT_EQ(c.packet(), "<closed>");
  });
  EXPECT_EQ(debugged.reason, iss::StopReason::kExited);
}

TEST(GdbServer, CtrlCStopsARunningProgram) {
  debug_run(counting_program(true), [](GdbClient& c) {
    c.raw(GdbClient::frame("c"));
    EXPECT_EQ(c.byte(), '+');
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    c.raw("\x03");
    EXPECT_EQ(c.packet(), "T02thread:1;");
    const uint32_t count = c.reg(5);
    EXPECT_GT(count, 0u);
    // End the loop after the next increment: x8 = x5 + 1.
    EXPECT_EQ(
        c.ask("P8=" +
              debug::to_hex(std::string(
                  reinterpret_cast<const char*>(&static_cast<const uint32_t&>(count + 1)), 4))),
        "OK");
    EXPECT_EQ(c.ask("k"), "<closed>");  // this test's kill action returns: the server hangs up
  });
}

TEST(GdbServer, KillRunsTheEmbeddersKillAction) {
  CoreHarness h;
  h.load_words(counting_program(true));
  h.core.set_tohost(kTohost);
  debug::GdbServer server(0);
  server.add_core(h.core);
  bool killed = false;
  server.set_kill([&] {
    killed = true;
    h.core.context(0).pc = kBase + 24;  // ends the run, as the process's end would
  });
  std::thread client([&] {
    GdbClient c(server.port());
    EXPECT_EQ(c.ask("vKill;1"), "OK");
    EXPECT_EQ(c.packet(), "<closed>");
  });
  EXPECT_EQ(h.run(1'000'000'000'000), iss::StopReason::kExited);
  client.join();
  EXPECT_TRUE(killed);
}

TEST(GdbServer, WriteWatchpointStopsBeforeTheStore) {
  debug_run(counting_program(), [](GdbClient& c) {
    EXPECT_EQ(c.ask(fmt::format("Z2,{:x},4", kData)), "OK");
    EXPECT_EQ(c.ask("c"), fmt::format("T05watch:{:x};thread:1;", kData));
    EXPECT_EQ(c.reg(kPc), kStorePc);
    EXPECT_EQ(c.ask(fmt::format("m{:x},4", kData)), "00000000");  // not stored yet
    EXPECT_EQ(c.ask(fmt::format("z2,{:x},4", kData)), "OK");
    EXPECT_EQ(c.ask("s"), "T05thread:1;");
    EXPECT_EQ(c.ask(fmt::format("m{:x},4", kData)), "01000000");
    EXPECT_EQ(c.ask(fmt::format("Z3,{:x},4", kData)), "OK");  // nothing reads it
    EXPECT_EQ(c.ask("c"), "W00");
  });
}

TEST(GdbServer, FaultStopsWithASignalBeforeTheRunEnds) {
  std::vector<uint32_t> program = {lui(6, 0x10), lw(5, 6, 0)};  // a load from 0x10000
  const Result r = debug_run(program, [](GdbClient& c) {
    EXPECT_EQ(c.ask("c"), "T0bthread:1;");  // SIGSEGV, at the load
    EXPECT_EQ(c.reg(kPc), kBase + 4);
    EXPECT_EQ(c.ask("c"), "X0b");
  });
  EXPECT_EQ(r.reason, iss::StopReason::kFault);
  // An illegal instruction word: SIGILL at the stop, and as the end of the run.
  debug_run({nop(), 0xffffffffu}, [](GdbClient& c) {
    EXPECT_EQ(c.ask("c"), "T04thread:1;");
    EXPECT_EQ(c.reg(kPc), kBase + 4);
    EXPECT_EQ(c.ask("c"), "X04");
  });
}

// A G packet that would change a read-only register writes nothing at all.
TEST(GdbServer, RegisterFileWritesAreAllOrNothing) {
  debug_run(counting_program(), [](GdbClient& c) {
    const std::string xml = debug::GdbServer::target_xml();
    std::smatch m;
    ASSERT_TRUE(std::regex_search(xml, m, std::regex("name=\"mhartid\"[^/]*regnum=\"([0-9]+)\"")));
    const unsigned mhartid = std::stoul(m[1]);
    std::string all = c.ask("g");
    all.replace(8 * 5, 8, "2a000000");        // x5 = 42
    all.replace(8 * mhartid, 8, "07000000");  // mhartid (read-only) = 7
    EXPECT_EQ(c.ask("G" + all), "E01");
    EXPECT_EQ(c.reg(5), 0u);
    EXPECT_EQ(c.reg(mhartid), 0u);
    all.replace(8 * mhartid, 8, "00000000");  // only x5 changes now
    EXPECT_EQ(c.ask("G" + all), "OK");
    EXPECT_EQ(c.reg(5), 42u);
    EXPECT_EQ(c.ask("D"), "OK");
  });
}

TEST(GdbServer, BadPacketsGetErrorsNotCrashes) {
  debug_run(counting_program(), [](GdbClient& c) {
    c.raw("$g#00");  // wrong checksum: refused, then resent
    EXPECT_EQ(c.byte(), '-');
    EXPECT_EQ(c.ask("m10000,4"), "E14");  // outside SRAM
    EXPECT_EQ(c.ask("mzz,4"), "E01");
    EXPECT_EQ(c.ask("Hg999"), "E01");  // no such thread
    EXPECT_EQ(c.ask("Z0,zz,4"), "E01");
    EXPECT_EQ(c.ask("vMustReplyEmpty"), "");
    EXPECT_EQ(c.ask("M4c000,4:0102"), "E01");  // length and data disagree
    EXPECT_EQ(c.ask("qXfer:threads:read::0,1000").substr(0, 1), "l");
    // Issue 39: malformed resumes, kills and detaches are refused, and nothing runs or ends.
    EXPECT_EQ(c.ask("vCont;x"), "E01");
    EXPECT_EQ(c.ask("vCont;c;Q"), "E01");
    EXPECT_EQ(c.ask("vCont;C1"), "E01");
    EXPECT_EQ(c.ask("kill"), "E01");
    EXPECT_EQ(c.ask("Dx"), "E01");
    EXPECT_EQ(c.ask("qC").substr(0, 2), "QC");  // still connected, still stopped
    EXPECT_EQ(c.ask("D"), "OK");
  });
}

// Issue 39: a packet sent before the ack of the previous reply was dropped (its reply never
// came); the server now takes it as the ack, as GDB's own stubs do, and answers it.
TEST(GdbServer, APacketBeforeTheAckOfTheLastReplyIsAnswered) {
  debug_run(counting_program(), [](GdbClient& c) {
    c.raw(GdbClient::frame("qC"));
    EXPECT_EQ(c.byte(), '+');
    char d;
    do d = c.byte();  // the reply to qC, left unacknowledged
    while (d != '#' && d != '\0');
    c.byte(), c.byte();
    c.raw(GdbClient::frame("m4c000,4"));  // no '+' first
    EXPECT_EQ(c.byte(), '+');
    EXPECT_EQ(c.packet(), "37d30400") << "lui x6, 0x4d: 0x0004d337";
    EXPECT_EQ(c.ask("D"), "OK");
  });
}

// Issue 39: a second client waited in the listen queue with no answer. It is told the port is
// busy and hung up on, and the first session goes on.
TEST(GdbServer, ASecondClientIsToldThePortIsBusy) {
  const Result plain = plain_run(counting_program());
  uint16_t port = 0;
  const Result debugged = debug_run(counting_program(), [&](GdbClient& c) {
    EXPECT_EQ(c.ask("qC").substr(0, 2), "QC");
    GdbClient second(c.port());
    std::string said;
    for (char b = second.byte(); b != '\0'; b = second.byte()) said += b;
    EXPECT_EQ(said, "+" + GdbClient::frame("E.the simulator's GDB port is busy: another "
                                           "debugger is attached"));
    EXPECT_EQ(c.ask("qC").substr(0, 2), "QC");
    EXPECT_EQ(c.ask("D"), "OK");
    port = c.port();
  });
  EXPECT_NE(port, 0);
  EXPECT_EQ(debugged.cycles, plain.cycles);
  EXPECT_EQ(debugged.data, kLoops);
}

// Issue 39: a client that never ends a packet grew the server's memory without bound. A packet
// longer than the advertised PacketSize drops the connection and the run goes on undebugged.
TEST(GdbServer, APacketLongerThanPacketSizeDropsTheConnection) {
  const Result plain = plain_run(counting_program());
  const Result debugged = debug_run(counting_program(), [](GdbClient& c) {
    const std::string supported = c.ask("qSupported");
    EXPECT_THAT(supported,
                ::testing::HasSubstr(fmt::format("PacketSize={:x};", debug::kMaxPacketBytes)));
    c.ask("vMustReplyEmpty");  // a packet of exactly the limit is still one packet
    const std::string fits(debug::kMaxPacketBytes, 'q');
    EXPECT_EQ(c.ask(fits), "");
    c.raw("$" + std::string(debug::kMaxPacketBytes + 1, 'a'));
    EXPECT_EQ(c.byte(), '\0') << "the server kept the connection";
  });
  EXPECT_EQ(debugged.reason, iss::StopReason::kExited);
  EXPECT_EQ(debugged.cycles, plain.cycles);
  EXPECT_EQ(debugged.data, kLoops);
}

TEST(GdbServer, DebuggingChangesNeitherResultsNorCycles) {
  const Result plain = plain_run(counting_program());
  const Result debugged = debug_run(counting_program(), [](GdbClient& c) {
    c.ask(fmt::format("Z0,{:x},4", kStorePc));
    for (int i = 0; i < 5; ++i) c.ask("c");
    c.ask(fmt::format("z0,{:x},4", kStorePc));
    for (int i = 0; i < 7; ++i) c.ask("s");
    c.ask(fmt::format("Z2,{:x},4", kData));
    c.ask("c");
    c.ask(fmt::format("z2,{:x},4", kData));
    c.ask("g");
    c.ask("m4c000,40");
    EXPECT_EQ(c.ask("c"), "W00");
  });
  EXPECT_EQ(debugged.reason, plain.reason);
  EXPECT_EQ(debugged.cycles, plain.cycles);
  EXPECT_EQ(debugged.instret, plain.instret);
  EXPECT_EQ(debugged.data, kLoops);
}

TEST(GdbServer, APortInUseIsAClearError) {
  const debug::Listener first(0);
  try {
    const debug::Listener second(first.port());
    FAIL() << "a second listener on port " << first.port();
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              fmt::format("GDB server: cannot listen on localhost:{}: Address already in use",
                          first.port()));
  }
}

}  // namespace
}  // namespace ipu::test

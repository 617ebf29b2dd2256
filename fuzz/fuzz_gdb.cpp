// libFuzzer target: the GDB server as a client reaches it (debug/gdb_server.h): the input is
// every byte a client sends over the connection (packets, acknowledgements, interrupts, garbage)
// while a bare core runs a counting loop under the server. The server must answer, refuse or
// drop the connection, and the run must end within its cycle limit; a crash, a sanitizer
// report, a hang or unbounded memory is a finding.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include "debug/gdb_server.h"
#include "tests/support/core_harness.h"
#include "tests/support/rv_asm.h"

namespace {

using namespace ipu;

constexpr uint32_t kData = 0x4d000, kTohost = 0x4d100;

// x5 counts to 300, storing each value at kData, then exits through tohost.
std::vector<uint32_t> counting_program() {
  using namespace test::rv;
  return {lui(6, kData >> 12),
          addi(5, 0, 0),
          addi(8, 0, 300),
          addi(5, 5, 1),
          sw(5, 6, 0),
          B(1, 5, 8, -8),
          lui(10, kTohost >> 12),
          addi(10, 10, static_cast<int32_t>(kTohost & 0xfff)),
          addi(9, 0, 1),
          sw(9, 10, 0)};
}

// Connects, sends `input` while reading (and dropping) whatever the server answers, closes its
// side, and reads until the server closes. SO_LINGER 0: no TIME_WAIT left per input.
void client(uint16_t port, const uint8_t* input, size_t size) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  const linger abort_on_close{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort_on_close, sizeof abort_on_close);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return;
  }
  size_t sent = 0;
  if (size == 0) ::shutdown(fd, SHUT_WR);  // nothing to say
  bool open = true;
  char buffer[4096];
  while (open) {
    pollfd p{fd, static_cast<short>(POLLIN | (sent < size ? POLLOUT : 0)), 0};
    if (::poll(&p, 1, 10'000) <= 0) break;
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) open = ::recv(fd, buffer, sizeof buffer, 0) > 0;
    if (open && sent < size && (p.revents & POLLOUT)) {
      const ssize_t n = ::send(fd, input + sent, size - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) sent += static_cast<size_t>(n);
      if (sent == size) ::shutdown(fd, SHUT_WR);
    }
  }
  ::close(fd);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  test::CoreHarness h;
  h.load_words(counting_program());
  h.core.set_tohost(kTohost);
  debug::GdbServer server(0);
  server.set_kill([] {});  // the default ends the process
  server.add_core(h.core);
  std::thread talk([&] { client(server.port(), data, size); });
  // The program takes about 1,200 cycles; memory writes can make it loop for ever.
  const iss::StopReason reason = h.run(2'000'000);
  server.finish({reason == iss::StopReason::kExited ? hw::ChipOutcome::Result::kExited
                                                    : hw::ChipOutcome::Result::kFault,
                 h.core.exit_status(), ""});
  talk.join();
  return 0;
}

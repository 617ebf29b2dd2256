// A GDB remote-protocol client for tests: framing, checksums and acknowledgements written
// independently of the server's (debug/remote_connection.cpp).
#pragma once

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

namespace ipu::test {

class GdbClient {
 public:
  explicit GdbClient(uint16_t port) : port_(port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    for (int i = 0; i < 100 && ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ~GdbClient() { ::close(fd_); }
  uint16_t port() const { return port_; }

  static std::string frame(const std::string& data) {
    unsigned sum = 0;
    for (const char c : data) sum += static_cast<unsigned char>(c);
    return fmt::format("${}#{:02x}", data, sum & 0xff);
  }
  void raw(const std::string& bytes) { ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL); }
  char byte() {
    char c = 0;
    if (::recv(fd_, &c, 1, 0) != 1) return '\0';
    return c;
  }
  // The next packet (acknowledged); "<closed>" if the server hung up.
  std::string packet() {
    char c;
    do {
      c = byte();
      if (c == '\0') return "<closed>";
    } while (c != '$');
    std::string data;
    while ((c = byte()) != '#') {
      if (c == '\0') return "<closed>";
      data += c;
    }
    byte(), byte();
    raw("+");
    return data;
  }
  // Sends a request and returns the reply, skipping console output packets (O...).
  std::string ask(const std::string& request) {
    raw(frame(request));
    EXPECT_EQ(byte(), '+') << request;
    std::string reply;
    do reply = packet();
    while (reply.size() > 1 && reply[0] == 'O' && reply != "OK");
    return reply;
  }
  // A register of the selected thread, from its little-endian hex.
  uint32_t reg(unsigned n) {
    const std::string hex = ask(fmt::format("p{:x}", n));
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = v << 8 | std::stoul(hex.substr(2 * i, 2), nullptr, 16);
    return v;
  }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

}  // namespace ipu::test

#include "remote_connection.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace ipu::debug {
namespace {

constexpr char kInterrupt = '\x03';

std::runtime_error socket_error(uint16_t port, const char* what) {
  return std::runtime_error(
      fmt::format("GDB server: cannot {} on localhost:{}: {}", what, port, std::strerror(errno)));
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

Listener::Listener(uint16_t port) : port_(port) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw socket_error(port, "open a socket");
  const int one = 1;
  ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    const auto error = socket_error(port, "listen");
    ::close(fd_);
    throw error;
  }
  if (::listen(fd_, 1) != 0) {
    const auto error = socket_error(port, "listen");
    ::close(fd_);
    throw error;
  }
  socklen_t length = sizeof address;
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
  port_ = ntohs(address.sin_port);
}

Listener::~Listener() {
  if (turn_away_.joinable()) {
    ::shutdown(fd_, SHUT_RDWR);  // wakes the thread's accept()
    turn_away_.join();
  }
  if (fd_ >= 0) ::close(fd_);
}

void Listener::turn_away_others(std::string reply) {
  if (turn_away_.joinable()) return;
  turn_away_ = std::thread([fd = fd_, reply = std::move(reply)] {
    for (;;) {
      const int client = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return;  // the listener was shut down
      }
      (void)!::send(client, reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      ::close(client);
    }
  });
}

int Listener::accept_client() {
  for (;;) {
    const int client = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client >= 0) {
      const int one = 1;  // packets are small and answered one by one: no Nagle delay
      ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return client;
    }
    if (errno != EINTR) throw socket_error(port_, "accept a connection");
  }
}

RemoteConnection::~RemoteConnection() {
  if (fd_ >= 0) ::close(fd_);
}

std::optional<char> RemoteConnection::next_byte(bool block) {
  if (read_at_ == buffer_.size()) {
    buffer_.clear();
    read_at_ = 0;
    if (closed_) return std::nullopt;
    char chunk[4096];
    for (;;) {
      const ssize_t n = ::recv(fd_, chunk, sizeof chunk, block ? 0 : MSG_DONTWAIT);
      if (n > 0) {
        buffer_.assign(chunk, static_cast<size_t>(n));
        break;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && !block && (errno == EAGAIN || errno == EWOULDBLOCK)) return std::nullopt;
      closed_ = true;  // end of stream, or an error: either way GDB is gone
      return std::nullopt;
    }
  }
  return buffer_[read_at_++];
}

std::optional<std::string> RemoteConnection::receive() {
  if (interrupt_pending_) {
    interrupt_pending_ = false;
    return std::string(1, kInterrupt);
  }
  for (;;) {
    std::optional<char> c = next_byte(true);
    if (!c) return std::nullopt;
    if (*c == kInterrupt) return std::string(1, kInterrupt);
    if (*c != '$') continue;  // acknowledgements and noise between packets
    std::string data;
    unsigned sum = 0;
    bool escaped = false;
    for (size_t length = 0;; ++length) {
      c = next_byte(true);
      if (!c) return std::nullopt;
      if (*c == '#') break;
      if (length == kMaxPacketBytes) {
        closed_ = true;  // drop a client that overruns the advertised PacketSize
        return std::nullopt;
      }
      sum += static_cast<unsigned char>(*c);
      if (escaped) {
        data += static_cast<char>(*c ^ 0x20);
        escaped = false;
      } else if (*c == '}') {
        escaped = true;
      } else {
        data += *c;
      }
    }
    const std::optional<char> high = next_byte(true), low = next_byte(true);
    if (!high || !low) return std::nullopt;
    const int h = hex_digit(*high), l = hex_digit(*low);
    if (ack_ && (h < 0 || l < 0 || static_cast<unsigned>(h * 16 + l) != (sum & 0xff))) {
      if (::send(fd_, "-", 1, MSG_NOSIGNAL) != 1) closed_ = true;
      continue;  // GDB resends the packet
    }
    if (ack_ && ::send(fd_, "+", 1, MSG_NOSIGNAL) != 1) {
      closed_ = true;
      return std::nullopt;
    }
    return data;
  }
}

std::string frame_packet(std::string_view data) {
  std::string frame = "$";
  unsigned sum = 0;
  for (const char c : data) {
    if (c == '$' || c == '#' || c == '}' || c == '*') {
      frame += '}';
      frame += static_cast<char>(c ^ 0x20);
      sum += '}' + static_cast<unsigned char>(c ^ 0x20);
    } else {
      frame += c;
      sum += static_cast<unsigned char>(c);
    }
  }
  frame += fmt::format("#{:02x}", sum & 0xff);
  return frame;
}

bool RemoteConnection::send(std::string_view data) {
  const std::string frame = frame_packet(data);
  for (;;) {
    size_t sent = 0;
    while (sent < frame.size()) {
      const ssize_t n = ::send(fd_, frame.data() + sent, frame.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        closed_ = true;
        return false;
      }
      sent += static_cast<size_t>(n);
    }
    if (!ack_) return true;
    for (;;) {
      const std::optional<char> c = next_byte(true);
      if (!c) return false;
      if (*c == '+') return true;
      if (*c == '-') break;  // resend
      if (*c == '$') {
        // The client's next packet, sent before its ack of this one: it has this reply, and
        // the packet is kept for receive() (it was dropped).
        --read_at_;
        return true;
      }
      if (*c == kInterrupt) interrupt_pending_ = true;
    }
  }
}

bool RemoteConnection::interrupted() {
  if (interrupt_pending_) {
    interrupt_pending_ = false;
    return true;
  }
  const std::optional<char> c = next_byte(false);
  if (!c) return false;
  if (*c == kInterrupt) return true;
  --read_at_;  // the byte belongs to a packet: keep it for receive()
  return false;
}

std::string to_hex(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) out += fmt::format("{:02x}", static_cast<unsigned char>(c));
  return out;
}

std::optional<std::string> from_hex(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  std::string out;
  out.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int h = hex_digit(hex[i]), l = hex_digit(hex[i + 1]);
    if (h < 0 || l < 0) return std::nullopt;
    out += static_cast<char>(h * 16 + l);
  }
  return out;
}

}  // namespace ipu::debug

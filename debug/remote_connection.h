// One GDB remote-protocol connection over TCP: packet framing ($data#checksum), acknowledgements
// (until GDB asks for no-ack mode), escapes, and the out-of-band interrupt byte (Ctrl-C, 0x03)
// that GDB sends while the target runs. Knows nothing of what the packets mean (gdb_server.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

namespace ipu::debug {

// A listening socket on the loopback interface.
class Listener {
 public:
  // port 0: any free port (see port()). Throws std::runtime_error naming the port and the reason.
  explicit Listener(uint16_t port);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
  uint16_t port() const { return port_; }
  // Blocks until a client connects; returns its socket.
  int accept_client();
  // From now on, answers every other client that connects with `reply` (the bytes as sent) and
  // hangs up, on a thread of its own: the server debugs with one client, and a second one would
  // otherwise wait unanswered in the listen queue.
  void turn_away_others(std::string reply);

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
  std::thread turn_away_;
};

// `data` framed as a packet: $data#checksum, with '$', '#', '}' and '*' escaped.
std::string frame_packet(std::string_view data);

// The largest packet the server takes, in bytes between '$' and '#' as sent (escapes included):
// what qSupported advertises as PacketSize. A longer one drops the connection, so a client that
// never ends a packet cannot grow the simulator's memory without bound.
inline constexpr size_t kMaxPacketBytes = 0x4000;

class RemoteConnection {
 public:
  explicit RemoteConnection(int fd) : fd_(fd) {}
  ~RemoteConnection();
  RemoteConnection(const RemoteConnection&) = delete;
  RemoteConnection& operator=(const RemoteConnection&) = delete;

  // The next packet's data (unescaped, checksum verified and acknowledged; a packet with a bad
  // checksum is refused with '-' and GDB resends it). An interrupt byte on its own returns
  // "\x03". nullopt: the connection closed, or the client sent a packet longer than
  // kMaxPacketBytes (the connection is then closed).
  std::optional<std::string> receive();
  // Sends one packet and, in ack mode, waits for GDB's '+' (resending on '-'). false: closed.
  bool send(std::string_view data);
  // true if GDB sent the interrupt byte since the last call (never blocks). Packet bytes that
  // arrive meanwhile are kept for receive().
  bool interrupted();
  void set_no_ack() { ack_ = false; }
  bool closed() const { return closed_; }

 private:
  std::optional<char> next_byte(bool block);

  int fd_;
  bool ack_ = true;
  bool closed_ = false;
  bool interrupt_pending_ = false;
  std::string buffer_;  // bytes read but not used yet
  size_t read_at_ = 0;
};

std::string to_hex(std::string_view bytes);
// nullopt when `hex` has an odd length or a character that is not a hex digit.
std::optional<std::string> from_hex(std::string_view hex);

}  // namespace ipu::debug

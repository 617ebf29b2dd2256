#include "python/src/device_server.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "base/parameters.h"
#include "python/src/fd_io.h"
#include "sdk/runtime/device.h"

namespace ipu::python {
namespace {

// Reads exactly `size` bytes; false at the end of the stream. `wait` is called before each
// read (the parent polls for Ctrl-C there).
bool read_all(int fd, char* data, size_t size, const std::function<void()>& wait) {
  for (size_t done = 0; done < size;) {
    if (wait) wait();
    const ssize_t n = ::read(fd, data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// A message: the header's length and the blobs' count and lengths (u64 each), then the header
// and the blobs.
bool send(int fd, const std::string& header, const std::vector<std::string>& blobs) {
  std::vector<uint64_t> sizes{header.size(), blobs.size()};
  for (const std::string& b : blobs) sizes.push_back(b.size());
  const uint64_t count = sizes.size();
  if (!write_all(fd, reinterpret_cast<const char*>(&count), sizeof count) ||
      !write_all(fd, reinterpret_cast<const char*>(sizes.data()),
                 sizes.size() * sizeof(uint64_t)) ||
      !write_all(fd, header.data(), header.size()))
    return false;
  for (const std::string& b : blobs)
    if (!write_all(fd, b.data(), b.size())) return false;
  return true;
}

bool receive(int fd, std::string& header, std::vector<std::string>& blobs,
             const std::function<void()>& wait) {
  uint64_t count = 0;
  if (!read_all(fd, reinterpret_cast<char*>(&count), sizeof count, wait) || count < 2 ||
      count > (1u << 20))
    return false;
  std::vector<uint64_t> sizes(count);
  if (!read_all(fd, reinterpret_cast<char*>(sizes.data()), count * sizeof(uint64_t), wait))
    return false;
  if (sizes[1] != count - 2) return false;
  header.resize(sizes[0]);
  if (!read_all(fd, header.data(), header.size(), wait)) return false;
  blobs.assign(sizes[1], std::string());
  for (size_t i = 0; i < blobs.size(); ++i) {
    blobs[i].resize(sizes[i + 2]);
    if (!read_all(fd, blobs[i].data(), blobs[i].size(), wait)) return false;
  }
  return true;
}

// The child: one Device, serving requests until the parent closes the socket.
[[noreturn]] void serve(int fd, const sdk::Executable& exe, const sdk::DeviceOptions& options) {
  std::unique_ptr<sdk::Device> device;
  try {
    device = std::make_unique<sdk::Device>(exe, options);
    send(fd, nlohmann::json{{"ready", true}}.dump(), {});
  } catch (const std::exception& e) {
    send(fd, nlohmann::json{{"error", "device"}, {"message", e.what()}}.dump(), {});
    ::_exit(0);
  }
  // Every stream's buffer for every replica, kept from run to run.
  std::map<std::pair<std::string, unsigned>, std::string> buffers;
  for (const auto& [name, info] : exe.streams)
    for (unsigned r = 0; r < exe.replicas; ++r) {
      std::string& b = buffers[{name, r}];
      b.assign(info.elements * sdk::dtype_size(info.type), '\0');
      device->connect_stream(name, r, b.data(), b.size());
    }
  std::string text;
  std::vector<std::string> blobs;
  while (receive(fd, text, blobs, nullptr)) {
    nlohmann::json reply = nlohmann::json::object();
    std::vector<std::string> out;
    try {
      const nlohmann::json request = nlohmann::json::parse(text);
      const std::string cmd = request.at("cmd");
      if (cmd == "write_tensor") {
        device->write_tensor(request.at("name").get<std::string>(),
                             request.at("replica").get<unsigned>(), blobs.at(0).data(),
                             blobs.at(0).size());
      } else if (cmd == "read_tensor") {
        const std::string name = request.at("name");
        const auto info = exe.tensor_info.find(name);
        if (info == exe.tensor_info.end())
          throw std::invalid_argument("the executable has no tensor '" + name + "'");
        std::string data(info->second.elements * sdk::dtype_size(info->second.type), '\0');
        device->read_tensor(name, request.at("replica").get<unsigned>(), data.data(), data.size());
        out.push_back(std::move(data));
      } else if (cmd == "write_remote" || cmd == "read_remote") {
        const std::string name = request.at("name");
        const auto buffer = exe.remote_buffers.find(name);
        if (buffer == exe.remote_buffers.end())
          throw std::invalid_argument("the executable has no remote buffer '" + name + "'");
        const unsigned replica = request.at("replica"), entry = request.at("entry");
        if (cmd == "write_remote") {
          device->write_remote(name, replica, entry, blobs.at(0).data(), blobs.at(0).size());
        } else {
          const sdk::RemoteBufferInfo& info = buffer->second.info;
          std::string data(info.elements * sdk::dtype_size(info.type), '\0');
          device->read_remote(name, replica, entry, data.data(), data.size());
          out.push_back(std::move(data));
        }
      } else if (cmd == "run") {
        // The given host-to-device streams' data (each replica's), then the run, then every
        // device-to-host stream's data.
        const nlohmann::json& inputs = request.at("inputs");
        for (size_t i = 0; i < inputs.size(); ++i) {
          const auto key = std::make_pair(inputs[i].at("name").get<std::string>(),
                                          inputs[i].at("replica").get<unsigned>());
          const auto b = buffers.find(key);
          if (b == buffers.end() || b->second.size() != blobs.at(i).size())
            throw std::invalid_argument("stream " + key.first + ": no such stream, or " +
                                        std::to_string(blobs.at(i).size()) + " bytes");
          std::memcpy(b->second.data(), blobs[i].data(), b->second.size());  // in place: the
                                                                             // device holds it
        }
        const sdk::DeviceReport& r = device->run(request.at("program").get<std::string>());
        reply["cycles"] = r.run.cycles;
        reply["seconds"] = r.run.clock_hz > 0 ? r.run.cycles / r.run.clock_hz : 0.0;
        reply["instructions"] = r.run.instructions;
        reply["flops"] = r.run.flops;
        reply["supersteps"] = r.run.supersteps;
        reply["energy_joules"] = r.energy.joules;
        reply["exchange_bytes"] = 4 * r.run.exchange_words;
        reply["ipulink_bytes"] = r.run.ipulink_bytes;
        reply["streaming_phase_cycles"] = r.run.streaming_phase_cycles;
        reply["cross_chip_phase_cycles"] = r.run.cross_chip_phase_cycles;
        nlohmann::json outputs = nlohmann::json::array();
        for (const auto& [name, info] : exe.streams) {
          if (info.direction != sdk::StreamDirection::kDeviceToHost) continue;
          for (unsigned rep = 0; rep < exe.replicas; ++rep) {
            outputs.push_back({{"name", name}, {"replica", rep}});
            out.push_back(buffers[{name, rep}]);
          }
        }
        reply["outputs"] = outputs;
      } else if (cmd == "stats") {
        std::ostringstream stats;
        device->write_stats(stats);
        out.push_back(stats.str());
      } else if (cmd == "console") {
        out.push_back(device->console());
      } else {
        throw std::invalid_argument("unknown request '" + cmd + "'");
      }
    } catch (const sdk::DeviceError& e) {
      reply = {{"error", "device"}, {"message", e.what()}};
      if (e.outcome()) reply["outcome"] = hw::outcome_name(e.outcome()->result);
      out.clear();
    } catch (const std::invalid_argument& e) {
      reply = {{"error", "value"}, {"message", e.what()}};
      out.clear();
    } catch (const std::exception& e) {
      reply = {{"error", "runtime"}, {"message", e.what()}};
      out.clear();
    }
    if (!send(fd, reply.dump(), out)) break;
  }
  ::_exit(0);
}

}  // namespace

DeviceClient::DeviceClient(std::shared_ptr<const sdk::Executable> executable,
                           const std::map<std::string, std::string>& given) {
  sdk::DeviceOptions options;
  for (const auto& [name, text] : given)
    base::set_parameter(static_cast<hw::RunOptions&>(options), name, text);
  hw::validate(static_cast<const hw::RunOptions&>(options));
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    throw std::runtime_error(fmt::format("cannot start a device: {}", std::strerror(errno)));
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) {
    ::close(fds[0]), ::close(fds[1]);
    throw std::runtime_error(fmt::format("cannot start a device: fork: {}", std::strerror(errno)));
  }
  if (pid_ == 0) {
    ::close(fds[0]);
    ::signal(SIGINT, SIG_IGN);  // the parent decides what Ctrl-C does
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    serve(fds[1], *executable, options);
  }
  ::close(fds[1]);
  fd_ = fds[0];
  std::string header;
  std::vector<std::string> blobs;
  if (!receive(fd_, header, blobs, nullptr)) {
    kill_child();
    throw std::runtime_error("the device's process ended while loading");
  }
  const nlohmann::json ready = nlohmann::json::parse(header);
  if (ready.contains("error")) {
    kill_child();
    throw std::runtime_error(ready.at("message").get<std::string>());
  }
}

DeviceClient::~DeviceClient() { close(); }

void DeviceClient::kill_child() {
  if (fd_ >= 0) ::close(fd_), fd_ = -1;
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
}

void DeviceClient::close() {
  if (fd_ >= 0) ::close(fd_), fd_ = -1;  // the child's receive ends, and it exits
  if (pid_ > 0) {
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
}

std::pair<std::string, std::vector<std::string>> DeviceClient::call(
    const std::string& header, const std::vector<std::string>& blobs,
    const std::function<void()>& check_interrupt) {
  if (fd_ < 0) throw std::runtime_error("the device is closed (or was stopped by Ctrl-C)");
  std::pair<std::string, std::vector<std::string>> reply;
  // Waits for the child's bytes in 50 ms slices, checking for Ctrl-C between them.
  auto wait = [&] {
    for (;;) {
      pollfd p{fd_, POLLIN, 0};
      const int ready = ::poll(&p, 1, 50);
      check_interrupt();
      if (ready > 0) return;
    }
  };
  bool answered = false;
  try {
    answered = send(fd_, header, blobs) && receive(fd_, reply.first, reply.second, wait);
  } catch (...) {
    kill_child();  // Ctrl-C: the device is gone with its state
    throw;
  }
  if (!answered) {
    kill_child();
    throw std::runtime_error("the device's process ended (it crashed or was killed)");
  }
  return reply;
}

}  // namespace ipu::python

// An SDK Device in a child process, driven over a socket. SystemC elaborates one design a
// process, and a Python session makes many devices: each DeviceClient forks a child that holds
// the Device (with the executable it inherited) and serves the parent's requests until closed.
// A request and its reply are a JSON header and raw byte blobs (tensor and stream data).
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sdk/compiler/compiler.h"

namespace ipu::python {

class DeviceClient {
 public:
  // Forks the child and waits until its Device is loaded; throws std::invalid_argument for a
  // bad option and std::runtime_error with the Device's reason when it cannot load.
  DeviceClient(std::shared_ptr<const sdk::Executable> executable,
               const std::map<std::string, std::string>& options);
  ~DeviceClient();
  DeviceClient(const DeviceClient&) = delete;
  DeviceClient& operator=(const DeviceClient&) = delete;

  // One request: {"cmd": "write_tensor"|"read_tensor"|"run"|"stats"|"console", ...} and its
  // blobs; the reply's header and blobs. check_interrupt is called about every 50 ms while the
  // child works; when it throws, the child is killed (the device is gone) and the exception
  // goes on. Throws std::runtime_error once the child is gone.
  std::pair<std::string, std::vector<std::string>> call(
      const std::string& header, const std::vector<std::string>& blobs,
      const std::function<void()>& check_interrupt);
  void close();

 private:
  void kill_child();
  int fd_ = -1;
  pid_t pid_ = -1;
};

}  // namespace ipu::python

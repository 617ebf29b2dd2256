// Writing a whole buffer to a pipe or socket, as the child processes of runs and devices
// (forked_run.cpp, device_server.cpp) answer their parent.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstddef>

namespace ipu::python {

// Writes all `size` bytes, retrying after signals; false when the other end has gone.
inline bool write_all(int fd, const char* data, size_t size) {
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace ipu::python

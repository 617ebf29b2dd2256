// For the command-line tools (ipu-sim, ipu-image, the examples): a program started with its
// standard output or error closed would have its first message throw (fmt::print reports the
// failed write) and end as an uncaught exception or abort, losing its exit status. Pointing a
// closed one at /dev/null first keeps every error path and exit status as they are.
#pragma once

#include <fcntl.h>
#include <unistd.h>

namespace ipu::sdk {

inline void open_closed_standard_streams() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) != -1) continue;
    const int null = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    if (null >= 0 && null != fd) {  // open takes the lowest free descriptor: normally fd itself
      dup2(null, fd);
      close(null);
    }
  }
}

}  // namespace ipu::sdk

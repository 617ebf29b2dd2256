// Helpers the benchmarks share: --help, and running this program again in a child process.
#pragma once

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <type_traits>

namespace ipu::bench {

// True (after printing "usage: NAME USAGE" and `about`) when the command line asks for help.
inline bool print_help(int argc, char** argv, const char* usage, const char* about) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      const char* name = std::strrchr(argv[0], '/');
      fmt::print("usage: {} {}\n{}\n", name ? name + 1 : argv[0], usage, about);
      return true;
    }
  return false;
}

// Runs this program again as `PROGRAM ARG FD` in a child process (SystemC elaborates one design
// per process, and each run gets its own peak RSS) and reads the figures the child writes to
// file descriptor FD as one T. False when the child fails or writes no whole T.
template <typename T>
bool run_self_in_child(const char* arg, T& figures) {
  static_assert(std::is_trivially_copyable_v<T>, "figures cross a pipe as bytes");
  int fds[2];
  if (pipe(fds) != 0) return false;
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    const std::string fd = std::to_string(fds[1]);
    execl("/proc/self/exe", "/proc/self/exe", arg, fd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  const bool got = read(fds[0], &figures, sizeof figures) == static_cast<ssize_t>(sizeof figures);
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  return got && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace ipu::bench

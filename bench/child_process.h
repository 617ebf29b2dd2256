// A bench part run in a child process of its own: this program again, with arguments added,
// its figures sent back over a pipe as the bytes of a fixed-size record. A process holds one
// simulated Device (SystemC elaborates one design), and an executable too large to share a
// tile's memory with another part compiles alone.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <string>
#include <type_traits>
#include <vector>

namespace ipu::bench {

// Runs /proc/self/exe with argv's arguments, then `extra`, then "--figures-fd N"; fills `out`
// from what the child writes to that descriptor. False when the child fails or sends less;
// `why` (if given) then says how it ended: its exit status, or the signal that killed it (SIGKILL
// is most often the kernel's OOM killer).
template <typename Figures>
bool run_child(int argc, char** argv, const std::vector<std::string>& extra, Figures& out,
               std::string* why = nullptr) {
  static_assert(std::is_trivially_copyable_v<Figures>);
  int fds[2];
  if (pipe(fds) != 0) return false;
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    std::vector<std::string> args(argv, argv + argc);
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--figures-fd", std::to_string(fds[1])});
    std::vector<char*> raw;
    for (std::string& a : args) raw.push_back(a.data());
    raw.push_back(nullptr);
    execv("/proc/self/exe", raw.data());
    _exit(127);
  }
  close(fds[1]);
  size_t got = 0;
  auto* bytes = reinterpret_cast<char*>(&out);
  for (ssize_t n; got < sizeof out && (n = read(fds[0], bytes + got, sizeof out - got)) > 0;)
    got += static_cast<size_t>(n);
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  const bool ok = got == sizeof out && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!ok && why != nullptr) {
    *why = WIFSIGNALED(status)
               ? "killed by signal " + std::to_string(WTERMSIG(status)) +
                     (WTERMSIG(status) == SIGKILL ? " (SIGKILL: out of memory?)" : "")
           : WIFEXITED(status) && WEXITSTATUS(status) != 0
               ? "exit status " + std::to_string(WEXITSTATUS(status))
               : "sent " + std::to_string(got) + " of " + std::to_string(sizeof out) +
                     " bytes of its figures";
  }
  return ok;
}

// The child's side: writes `figures` to the parent's descriptor. False when it could not.
template <typename Figures>
bool send_figures(int fd, const Figures& figures) {
  static_assert(std::is_trivially_copyable_v<Figures>);
  const auto* bytes = reinterpret_cast<const char*>(&figures);
  size_t put = 0;
  for (ssize_t n; put < sizeof figures && (n = write(fd, bytes + put, sizeof figures - put)) > 0;)
    put += static_cast<size_t>(n);
  return put == sizeof figures;
}

}  // namespace ipu::bench

#include "python/src/forked_run.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <systemc>

#include "hw/energy/energy.h"
#include "hw/machine/platform.h"
#include "python/src/fd_io.h"
#include "report/run_statistics.h"
#include "report/text_report.h"
#include "sdk/compiler/executable_io.h"
#include "sdk/image/elf_reader.h"
#include "sdk/image/program.h"
#include "sdk/image/symbolizer.h"

namespace ipu::python {

std::string run_here(const RunRequest& request) {
  nlohmann::json out;
  try {
    hw::validate(request.machine);
    hw::validate(request.options);
    const sdk::ElfImage image = sdk::read_elf(request.image);
    if (sdk::has_runtime_section(image))
      throw std::invalid_argument(fmt::format(
          "{} is an image the SDK saved (with a {} section), which the SDK runtime runs; "
          "Machine.run runs firmware images",
          request.image, sdk::kRuntimeSection));
    sc_core::sc_set_time_resolution(1, sc_core::SC_FS);
    // Reports name the function and source line of the pcs they mention, as ipu-sim's do.
    auto symbolizer = std::make_shared<const sdk::Symbolizer>(request.image);
    hw::PlatformOptions options;
    static_cast<hw::RunOptions&>(options) = request.options;
    options.machine = request.machine;
    options.locate_pc = [symbolizer](uint32_t pc) { return symbolizer->locate(pc); };
    options.locate_data = [symbolizer](uint32_t address) { return symbolizer->data(address); };
    options.profile_workers = request.records;
    options.keep_records = request.records;
    std::ostringstream console;
    hw::Platform platform(options, sdk::load_program(image, options.machine), console, console);
    const hw::RunReport run = platform.run();
    std::ostringstream report, stats;
    report::print_report(report, run, hw::price_energy(options.machine, run));
    report::StatsSource source;
    source.image = request.image;
    source.image_checksum = sdk::image_checksum(image);
    source.function_name = [symbolizer](uint32_t pc) { return symbolizer->function(pc); };
    source.program = &platform.program();
    source.outcome = run.outcome;
    report::write_stats_json(stats, platform.machine(), source);
    out = {{"console", console.str()}, {"report", report.str()}, {"stats", stats.str()}};
  } catch (const sdk::ImageError& e) {
    out = {{"error", "image"}, {"message", e.what()}};
  } catch (const std::invalid_argument& e) {
    out = {{"error", "value"}, {"message", e.what()}};
  } catch (const std::exception& e) {
    out = {{"error", "runtime"}, {"message", e.what()}};
  }
  return out.dump();
}

namespace {

// Kills and reaps the child when the parent stops waiting for it early (an exception).
struct Child {
  pid_t pid;
  bool reaped = false;
  ~Child() {
    if (reaped) return;
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
};

}  // namespace

std::string run_in_child(const RunRequest& request, const std::function<void()>& check_interrupt) {
  int fds[2];
  if (::pipe(fds) != 0)
    throw std::runtime_error(fmt::format("cannot start a run: pipe: {}", std::strerror(errno)));
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]), ::close(fds[1]);
    throw std::runtime_error(fmt::format("cannot start a run: fork: {}", std::strerror(errno)));
  }
  if (pid == 0) {  // the child: run, answer, and leave without the parent's exit handlers
    ::close(fds[0]);
    ::signal(SIGINT, SIG_IGN);  // the parent decides what Ctrl-C does to the run
    // A run outlives no parent: a session or sweep worker killed takes its runs with it.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);  // the parent died before prctl
    const std::string answer = run_here(request);
    write_all(fds[1], answer.data(), answer.size());  // false: the parent went away
    ::_exit(0);
  }
  ::close(fds[1]);
  Child child{pid};
  std::string answer;
  char buffer[65536];
  for (bool open = true; open;) {
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, 50);
    try {
      check_interrupt();
    } catch (...) {
      ::close(fds[0]);
      throw;
    }
    if (ready <= 0) continue;  // a timeout, or a signal: check_interrupt() has seen to it
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      open = false;
    else
      answer.append(buffer, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  child.reaped = true;
  if (WIFSIGNALED(status))
    throw std::runtime_error(fmt::format("the run of {} died of signal {} ({})", request.image,
                                         WTERMSIG(status), strsignal(WTERMSIG(status))));
  if (answer.empty())
    throw std::runtime_error(fmt::format("the run of {} ended (status {}) without an answer",
                                         request.image,
                                         WIFEXITED(status) ? WEXITSTATUS(status) : -1));
  return answer;
}

}  // namespace ipu::python

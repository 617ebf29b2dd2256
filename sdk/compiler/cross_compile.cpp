// The first stage: the codelets and the tile runtime built into one firmware ELF by the cross
// compiler (diagnostics with file and line), read back as the image every tile starts from.
#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "sdk/compiler/compilation.h"
#include "sdk/compiler/stack_usage.h"
#include "sdk/graph/sdk_paths.h"
#include "sdk/image/elf_reader.h"

namespace ipu::sdk {
namespace {

// Runs `argv` (argv[0] a path, or a name found on PATH) without a shell, its standard error to
// `log`; returns its wait status, and throws CompileError naming the program and the reason when
// it cannot start. Nothing in a name or path is ever parsed as a command.
int run_without_shell(const std::vector<std::string>& argv, const std::string& log) {
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int error = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0)
    throw CompileError(
        fmt::format("cannot run the cross compiler {}: {}", argv[0], std::strerror(error)));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      throw CompileError(
          fmt::format("lost the cross compiler {}: {}", argv[0], std::strerror(errno)));
  return status;
}

// Builds the firmware with every codelet; returns the ELF path.
std::string build_firmware(const Graph& graph, const std::string& dir) {
  SdkPaths paths;
  try {
    paths = sdk_paths();
  } catch (const SdkPathError& e) {
    throw CompileError(e.what());
  }
  const std::string runtime = paths.runtime_dir();
  std::string elf = dir + "/firmware.elf";
  const std::string log = dir + "/compile.log";
  std::vector<std::string> argv = {
      paths.gcc, "-march=rv32imf", "-mabi=ilp32f", "-O2", "-g", "-Wall", "-ffp-contract=off",
      "-ffunction-sections", "-fdata-sections", "-nostartfiles", "-I" + paths.include_dir(), "-T",
      paths.linker_script(), "-Wl,--gc-sections", "-Wl,--no-warn-rwx-segments",
      // The target's SRAM window, which a machine may change.
      fmt::format("-Wl,--defsym=__sram_base={}", graph.target().chip().tile.sram_base),
      fmt::format("-Wl,--defsym=__sram_bytes={}", graph.target().chip().tile.sram_bytes),
      // No workers' stacks at link time: the compiler sizes them from the code it links
      // (size_stacks) and checks they fit, so a window with less room than the linker script's
      // 48 KiB of them takes a program whose workers need little. The supervisor keeps its
      // default here: a tile whose program header is damaged starts on it, to report that.
      "-Wl,--defsym=__worker_stack_size=0", "--specs=picolibc.specs", runtime + "/crt0.S",
      runtime + "/console.c", runtime + "/bsp_runtime.c", runtime + "/exchange_actions.S"};
  std::set<std::string> files;  // a file may define several codelets: compile it once
  for (const auto& [name, c] : graph.codelets())
    if (files.insert(c.source).second) argv.push_back(c.source);
  // Codelets are reached only through vertex tables. Their names are C identifiers
  // (Graph::add_codelet), and no shell reads this argument vector anyway.
  for (const auto& [name, c] : graph.codelets()) argv.push_back("-Wl,--undefined=" + name);
  argv.insert(argv.end(), {"-o", elf});
  const int status = run_without_shell(argv, log);
  std::ifstream in(log);
  std::string diagnostics((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const std::string ended = WIFEXITED(status)
                                  ? fmt::format("exited with status {}", WEXITSTATUS(status))
                                  : fmt::format("was killed by signal {}", WTERMSIG(status));
    throw CompileError(fmt::format("codelets failed to compile:\n{}",
                                   diagnostics.empty() ? paths.gcc + " " + ended : diagnostics));
  }
  return elf;
}

// The stacks the firmware's code needs: the supervisor's from _start (the control program, and
// printf when it stops a tile), above the workers' context table; a worker's from the deepest
// codelet. Sizes are 16-byte multiples, as the ABI aligns sp. Where the code defeats the
// analysis the linker script's sizes stay, and `why` says so.
FirmwareStacks size_stacks(const Graph& graph, const ElfImage& firmware) {
  const StackUsage usage(firmware);
  FirmwareStacks stacks;
  const auto round_up = [](uint32_t bytes) {
    return std::max<uint32_t>(16, (bytes + 15) / 16 * 16);
  };
  const StackDepth supervisor = usage.deepest({"_start"});
  std::vector<std::string> codelets;
  for (const auto& [name, c] : graph.codelets()) codelets.push_back(name);
  const StackDepth worker = usage.deepest(codelets);
  if (supervisor.known) {
    stacks.supervisor_bytes = round_up(supervisor.bytes) + kWorkerContextTableBytes;
    stacks.supervisor_chain = supervisor.chain;
  } else {
    stacks.why = "supervisor: " + supervisor.unknown_why;
  }
  if (worker.known) {
    stacks.worker_bytes = round_up(worker.bytes);
    stacks.worker_chain = worker.chain;
  } else {
    stacks.why += (stacks.why.empty() ? "" : "; ") + std::string("workers: ") + worker.unknown_why;
  }
  return stacks;
}

}  // namespace

void Compilation::build_firmware_image() {
  std::string dir = options_.work_dir;
  struct Scratch {  // a build directory of our own goes when the compilation does
    std::string path;
    ~Scratch() {
      std::error_code ignored;
      if (!path.empty()) std::filesystem::remove_all(path, ignored);
    }
  } scratch;
  if (dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(tmp != nullptr && *tmp != 0 ? tmp : "/tmp") + "/ipu-compile-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr)
      throw CompileError(fmt::format("cannot create a build directory {}", tmpl));
    dir = scratch.path = tmpl;
  } else {
    mkdir(dir.c_str(), 0755);
  }
  const std::string firmware_path = build_firmware(graph_, dir);
  firmware_ = read_elf(firmware_path);
  {
    // The firmware as linked, with its DWARF: reports on the executable name the codelet's file
    // and line (Symbolizer; the section is not loaded).
    std::ifstream in(firmware_path, std::ios::binary);
    firmware_debug_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const auto symbol = [&](const std::string& name) {
    const auto it = firmware_.symbols.find(name);
    if (it == firmware_.symbols.end())
      throw CompileError(fmt::format("the firmware defines no symbol '{}'", name));
    return it->second;
  };
  heap_start_ = symbol("__heap_start");
  // The stacks take what the code needs, where the linker script gave every program the same
  // 64 KiB: crt0 reads their sizes from the control program's header (ipu_program.h), and the
  // tile's data reaches up to them.
  stacks_ = size_stacks(graph_, firmware_);
  exe_.stacks = stacks_;
  const uint32_t top = symbol("__supervisor_stack_top");
  const uint64_t stack_bytes =
      stacks_.supervisor_bytes + uint64_t{kWorkerContexts} * stacks_.worker_bytes;
  if (uint64_t{heap_start_} + stack_bytes > top)
    throw CompileError(fmt::format(
        "every tile's firmware code and data take {} of its {} bytes of SRAM and leave {} for "
        "its stacks, which need {}: {}",
        heap_start_ - graph_.target().chip().tile.sram_base, graph_.target().chip().tile.sram_bytes,
        top - heap_start_, stack_bytes, stacks_summary(stacks_)));
  heap_end_ = static_cast<uint32_t>(top - stack_bytes);
  // The image's symbols say where the heap ends, for the loader's and the reports' split of a
  // tile's memory (sdk/image/program.cpp).
  firmware_.symbols["__heap_end"] = heap_end_;
  for (const auto& [name, c] : graph_.codelets())
    if (firmware_.symbols.count(name) == 0)
      throw CompileError(fmt::format(
          "codelet '{}': {} defines no function named '{}' (a codelet's name is its C function's)",
          name, c.source, name));
}

}  // namespace ipu::sdk

// The first stage: the codelets and the tile runtime built into one firmware ELF by the cross
// compiler (diagnostics with file and line), read back as the image every tile starts from.
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "sdk/compiler/compilation.h"
#include "sdk/graph/sdk_paths.h"
#include "sdk/image/elf_reader.h"

namespace ipu::sdk {
namespace {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Builds the firmware with every codelet; returns the ELF path.
std::string build_firmware(const Graph& graph, const std::string& dir) {
  std::string sources, keep;
  std::set<std::string> files;  // a file may define several codelets: compile it once
  for (const auto& [name, c] : graph.codelets()) {
    if (files.insert(c.source).second) sources += " " + shell_quote(c.source);
    keep += " -Wl,--undefined=" + name;  // codelets are reached only through vertex tables
  }
  SdkPaths paths;
  try {
    paths = sdk_paths();
  } catch (const SdkPathError& e) {
    throw CompileError(e.what());
  }
  const std::string runtime = paths.runtime_dir();
  std::string elf = dir + "/firmware.elf";
  const std::string log = dir + "/compile.log";
  const std::string command = fmt::format(
      "{} -march=rv32imf -mabi=ilp32f -O2 -g -Wall -ffp-contract=off -ffunction-sections "
      "-fdata-sections -nostartfiles "
      "-I{} -T {} -Wl,--gc-sections -Wl,--no-warn-rwx-segments --specs=picolibc.specs "
      "{}/crt0.S {}/console.c {}/bsp_runtime.c{}{} -o {} 2>{}",
      shell_quote(paths.gcc), shell_quote(paths.include_dir()), shell_quote(paths.linker_script()),
      shell_quote(runtime), shell_quote(runtime), shell_quote(runtime), sources, keep,
      shell_quote(elf), shell_quote(log));
  const int status = std::system(command.c_str());
  std::ifstream in(log);
  std::string diagnostics((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (status != 0)
    throw CompileError(fmt::format("codelets failed to compile:\n{}",
                                   diagnostics.empty() ? command : diagnostics));
  return elf;
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
  heap_end_ = symbol("__heap_end");
  for (const auto& [name, c] : graph_.codelets())
    if (firmware_.symbols.count(name) == 0)
      throw CompileError(fmt::format(
          "codelet '{}': {} defines no function named '{}' (a codelet's name is its C function's)",
          name, c.source, name));
}

}  // namespace ipu::sdk

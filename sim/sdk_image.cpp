#include "sim/sdk_image.h"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <stdexcept>

#include "hw/machine/platform.h"
#include "sdk/compiler/executable_io.h"
#include "sdk/tools/output_path.h"

namespace ipu::sim {
namespace {

constexpr int kExitFault = 4, kExitCycleLimit = 5, kExitDeadlock = 6;

struct StreamFile {
  std::string path;
  const sdk::StreamInfo* stream = nullptr;
  std::vector<uint8_t> data;  // replicas x elements x element size
};

std::string stream_names(const sdk::Executable& exe) {
  std::vector<std::string> names;
  for (const auto& [name, s] : exe.streams)
    names.push_back(fmt::format(
        "{} ({})", name,
        s.direction == sdk::StreamDirection::kHostToDevice ? "to the device" : "from the device"));
  return names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "));
}

std::string program_names(const sdk::Executable& exe) {
  std::vector<std::string> names;
  for (const sdk::ProgramInfo& p : exe.programs) names.push_back("'" + p.name + "'");
  return fmt::format("{}", fmt::join(names, ", "));
}

// The programs to run, in order: --program's, or the executable's only one.
std::vector<const sdk::ProgramInfo*> chosen_programs(const sdk::Executable& exe,
                                                     const std::vector<std::string>& names) {
  if (names.empty()) {
    if (exe.programs.size() != 1)
      throw std::invalid_argument(fmt::format(
          "the image has {} programs ({}): name those to run, in order, with --program NAME",
          exe.programs.size(), program_names(exe)));
    return {&exe.programs.front()};
  }
  std::vector<const sdk::ProgramInfo*> chosen;
  for (const std::string& name : names) {
    const auto p = std::find_if(exe.programs.begin(), exe.programs.end(),
                                [&](const sdk::ProgramInfo& q) { return q.name == name; });
    if (p == exe.programs.end())
      throw std::invalid_argument(fmt::format(
          "--program {}: the image has no such program (it has {})", name, program_names(exe)));
    chosen.push_back(&*p);
  }
  return chosen;
}

// --stream NAME=FILE for every stream the programs use, each file checked before anything runs:
// an input's holds exactly the stream's bytes for every replica.
std::map<std::string, StreamFile> stream_files(const sdk::Executable& exe,
                                               const std::vector<const sdk::ProgramInfo*>& programs,
                                               const std::vector<std::string>& options) {
  std::set<std::string> used;
  for (const sdk::ProgramInfo* p : programs)
    for (unsigned id : p->host_transfers) used.insert(exe.host_transfers.at(id).stream);
  std::map<std::string, StreamFile> files;
  for (const std::string& option : options) {
    const size_t eq = option.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == option.size())
      throw std::invalid_argument(fmt::format(
          "--stream {}: give NAME=FILE (the image's streams: {})", option, stream_names(exe)));
    const std::string name = option.substr(0, eq), path = option.substr(eq + 1);
    const auto s = exe.streams.find(name);
    if (s == exe.streams.end())
      throw std::invalid_argument(
          fmt::format("--stream {}: the image has no stream '{}' (it has {})", option, name,
                      stream_names(exe)));
    if (used.count(name) == 0)
      throw std::invalid_argument(
          fmt::format("--stream {}: stream '{}' is not used by the program{} run", option, name,
                      programs.size() == 1 ? "" : "s"));
    if (files.count(name) != 0)
      throw std::invalid_argument(
          fmt::format("--stream {}: stream '{}' is given twice", option, name));
    StreamFile& f = files[name];
    f.path = path;
    f.stream = &s->second;
    const size_t bytes = exe.replicas * s->second.elements * sdk::dtype_size(s->second.type);
    const std::string layout =
        fmt::format("{}{} {}", exe.replicas == 1 ? "" : fmt::format("{} replicas x ", exe.replicas),
                    s->second.elements, sdk::dtype_name(s->second.type));
    if (s->second.direction == sdk::StreamDirection::kHostToDevice) {
      std::ifstream in(path, std::ios::binary);
      if (!in)
        throw std::invalid_argument(fmt::format("--stream {}: cannot read {}", option, path));
      f.data.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      if (in.bad())
        throw std::invalid_argument(fmt::format("--stream {}: cannot read {}", option, path));
      if (f.data.size() != bytes)
        throw std::invalid_argument(fmt::format(
            "--stream {}: {} holds {} bytes, but stream '{}' carries {} ({}, little-endian)",
            option, path, f.data.size(), name, bytes, layout));
    } else {
      // Written once every program has run: a path that cannot be is found now, not then.
      if (!sdk::can_write_file(path))
        throw std::invalid_argument(fmt::format("--stream {}: cannot write {}", option, path));
      f.data.assign(bytes, 0);
    }
  }
  std::vector<std::string> missing;
  for (const std::string& name : used)
    if (files.count(name) == 0) missing.push_back(name);
  if (!missing.empty())
    throw std::invalid_argument(fmt::format(
        "the program{} use{} stream{} {} with no file: give each with --stream NAME=FILE (the "
        "image's streams: {})",
        programs.size() == 1 ? "" : "s", programs.size() == 1 ? "s" : "",
        missing.size() == 1 ? "" : "s", fmt::join(missing, ", "), stream_names(exe)));
  return files;
}

int exit_status(const hw::ChipOutcome& outcome) {
  switch (outcome.result) {
    case hw::ChipOutcome::Result::kExited:
      return outcome.exit_status == 0 ? kExitFault : outcome.exit_status & 0xff;
    case hw::ChipOutcome::Result::kCycleLimit: return kExitCycleLimit;
    case hw::ChipOutcome::Result::kDeadlock: return kExitDeadlock;
    case hw::ChipOutcome::Result::kFault: return kExitFault;
  }
  return kExitFault;
}

}  // namespace

int run_sdk_image(const sdk::ElfImage& image, const hw::MachineConfig& machine,
                  const SdkImageRun& run, std::ostream& out) {
  const sdk::Executable exe = sdk::read_executable(image, machine);
  const auto programs = chosen_programs(exe, run.programs);
  std::map<std::string, StreamFile> files = stream_files(exe, programs, run.streams);

  sdk::Device device(exe, run.device);
  for (auto& [name, f] : files) device.connect_stream(name, f.data.data(), f.data.size());
  size_t console_shown = 0;
  for (const sdk::ProgramInfo* p : programs) {
    try {
      const sdk::DeviceReport& report = device.run(p->name);
      const std::string& console = device.console();
      out << console.substr(std::min(console_shown, console.size()));
      console_shown = console.size();
      fmt::print(out, "\n== program '{}' ({} of {}) ==", p->name, device.runs(), programs.size());
      hw::print_report(out, report.run);
      fmt::print(out,
                 "host streams         {} bytes to the device, {} bytes from it; {} tile "
                 "cycles in host syncs\n",
                 report.host_to_device_bytes, report.device_to_host_bytes,
                 report.host_transfer_cycles);
    } catch (const sdk::DeviceError& e) {
      if (!e.outcome()) throw;
      out.flush();
      fmt::print(stderr, "ipu-sim: program '{}': {}\n", p->name, e.what());
      if (!files.empty())
        fmt::print(stderr, "ipu-sim: no stream file written: program '{}' did not end\n", p->name);
      return exit_status(*e.outcome());
    }
  }
  // Every program ran to its end: the streams from the device hold their last data.
  for (const auto& [name, f] : files) {
    if (f.stream->direction != sdk::StreamDirection::kDeviceToHost) continue;
    std::ofstream file(f.path, std::ios::binary);
    file.write(reinterpret_cast<const char*>(f.data.data()),
               static_cast<std::streamsize>(f.data.size()));
    file.close();
    if (!file)
      throw std::invalid_argument(
          fmt::format("--stream {}={}: cannot write {}", name, f.path, f.path));
    fmt::print(out, "stream {:<13} {} bytes written to {}\n", name, f.data.size(), f.path);
  }
  return 0;
}

}  // namespace ipu::sim

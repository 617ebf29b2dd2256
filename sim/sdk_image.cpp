#include "sim/sdk_image.h"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include "base/input_file.h"
#include "base/printable.h"
#include "hw/machine/platform.h"
#include "report/text_report.h"
#include "sdk/compiler/executable_io.h"
#include "sdk/image/program.h"
#include "sdk/tools/output_path.h"
#include "sdk/tools/parse_count.h"
#include "sim/exit_status.h"

namespace ipu::sim {
namespace {

// A file given for a stream or a tensor: its data is the stream's or tensor's bytes for every
// replica, replica after replica.
struct DataFile {
  std::string option;  // "--stream a_in=a.bin", for messages
  std::string path;
  bool input = true;  // read before the run (false: written after it)
  std::vector<uint8_t> data;
  size_t batch = 0;  // a stream's bytes for one run of a program (every replica's)
  // A stream's runs take batch after batch of the file; an input of one batch gives it to every
  // run. A tensor is written before, or read after, the run `at` of the runs (its program's
  // first or last).
  size_t at = 0;
  // The next batch's offset.
  size_t offset(size_t use) const { return data.size() == batch ? 0 : use * batch; }
};

// NAME=FILE of --stream, --write-tensor and --read-tensor.
std::pair<std::string, std::string> binding(const char* option, const std::string& text,
                                            const std::string& known) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw std::invalid_argument(fmt::format("{} {}: give NAME=FILE ({})", option, text, known));
  return {text.substr(0, eq), text.substr(eq + 1)};
}

// The file's data: an input's read whole (exactly `bytes` of them, or `or_bytes` when given and
// the file holds that many), an output's path checked now, so that a path that cannot be
// written is found before the run, not after it.
void open_data_file(DataFile& f, size_t bytes, const std::string& what, size_t or_bytes = 0) {
  if (!f.input) {
    if (!sdk::can_write_file(f.path))
      throw std::invalid_argument(fmt::format("{}: cannot write {}", f.option, f.path));
    f.data.assign(bytes, 0);
    return;
  }
  // The size is checked before anything is read, and only a regular file is read (no FIFO,
  // device or file that grows): the bounded reader images and configurations use.
  struct stat info {};
  if (stat(f.path.c_str(), &info) != 0)
    throw std::invalid_argument(fmt::format("{}: cannot read {}", f.option, f.path));
  const bool regular = S_ISREG(info.st_mode);
  if (regular && or_bytes != 0 && static_cast<uint64_t>(info.st_size) == or_bytes) bytes = or_bytes;
  if (regular && static_cast<uint64_t>(info.st_size) != bytes)
    throw std::invalid_argument(
        fmt::format("{}: {} holds {} bytes, but {}", f.option, f.path, info.st_size, what));
  try {
    f.data = base::read_input_file(f.path, bytes, "stream or tensor file");
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(fmt::format("{}: {}", f.option, e.what()));
  }
}

void write_data_file(const DataFile& f) {
  std::ofstream file(f.path, std::ios::binary);
  file.write(reinterpret_cast<const char*>(f.data.data()),
             static_cast<std::streamsize>(f.data.size()));
  file.close();
  if (!file) throw std::invalid_argument(fmt::format("{}: cannot write {}", f.option, f.path));
}

// The bytes of a stream's or tensor's file: every replica's elements.
size_t file_bytes(const sdk::Executable& exe, size_t elements, sdk::DType type) {
  return exe.replicas * elements * sdk::dtype_size(type);
}

// "768 bytes (2 replicas x 96 f32, little-endian)", or "... (96 f32, ...)" for one replica.
std::string layout(const sdk::Executable& exe, size_t elements, sdk::DType type) {
  return fmt::format("{} bytes ({}{} {}, little-endian)", file_bytes(exe, elements, type),
                     exe.replicas == 1 ? "" : fmt::format("{} replicas x ", exe.replicas), elements,
                     sdk::dtype_name(type));
}

const char* toward(const sdk::StreamInfo& s) {
  return s.direction == sdk::StreamDirection::kHostToDevice ? "to the device" : "from the device";
}

std::string stream_names(const sdk::Executable& exe) {
  std::vector<std::string> names;
  for (const auto& [name, s] : exe.streams)
    names.push_back(fmt::format("{} ({})", name, toward(s)));
  return fmt::format("the image's streams: {}",
                     names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", ")));
}

std::string program_names(const sdk::Executable& exe) {
  std::vector<std::string> names;
  for (const sdk::ProgramInfo& p : exe.programs) names.push_back("'" + p.name + "'");
  return fmt::format("{}", fmt::join(names, ", "));
}

// The runs, in order: each --program NAME, or NAME:N for N runs of it; or the executable's only
// program, once.
std::vector<const sdk::ProgramInfo*> chosen_programs(const sdk::Executable& exe,
                                                     const std::vector<std::string>& names) {
  if (names.empty()) {
    if (exe.programs.size() != 1)
      throw std::invalid_argument(fmt::format(
          "the image has {} programs ({}): name those to run, in order, with --program NAME "
          "(NAME:N runs it N times)",
          exe.programs.size(), program_names(exe)));
    return {&exe.programs.front()};
  }
  std::vector<const sdk::ProgramInfo*> chosen;
  for (const std::string& option : names) {
    // NAME, or NAME:N when NAME alone is no program of the image and N a count.
    std::string name = option;
    uint64_t times = 1;
    const auto named = [&exe](const std::string& n) {
      return std::find_if(exe.programs.begin(), exe.programs.end(),
                          [&](const sdk::ProgramInfo& q) { return q.name == n; });
    };
    const size_t colon = option.rfind(':');
    if (named(option) == exe.programs.end() && colon != std::string::npos) {
      name = option.substr(0, colon);
      times = sdk::parse_count("--program " + name, option.substr(colon + 1), 1, 1'000'000);
    }
    const auto p = named(name);
    if (p == exe.programs.end())
      throw std::invalid_argument(fmt::format(
          "--program {}: the image has no such program (it has {})", name, program_names(exe)));
    chosen.insert(chosen.end(), times, &*p);
  }
  return chosen;
}

// The runs' program names, a run of one program written NAME:N.
std::vector<std::string> run_names(const std::vector<const sdk::ProgramInfo*>& runs) {
  std::vector<std::string> names;
  for (size_t i = 0; i < runs.size();) {
    size_t n = 1;
    while (i + n < runs.size() && runs[i + n] == runs[i]) ++n;
    names.push_back(n == 1 ? runs[i]->name : fmt::format("{}:{}", runs[i]->name, n));
    i += n;
  }
  return names;
}

// --stream NAME=FILE for every stream the programs use, each file checked before anything runs.
std::map<std::string, DataFile> stream_files(const sdk::Executable& exe,
                                             const std::vector<const sdk::ProgramInfo*>& programs,
                                             const std::vector<std::string>& options) {
  std::map<std::string, size_t> used;  // stream -> the runs that use it
  for (const sdk::ProgramInfo* p : programs) {
    std::set<std::string> in_run;
    for (unsigned id : p->host_transfers) in_run.insert(exe.host_transfers.at(id).stream);
    for (const std::string& name : in_run) ++used[name];
  }
  std::map<std::string, DataFile> files;
  for (const std::string& option : options) {
    const auto [name, path] = binding("--stream", option, stream_names(exe));
    const std::string label = "--stream " + option;
    const auto s = exe.streams.find(name);
    if (s == exe.streams.end())
      throw std::invalid_argument(
          fmt::format("{}: the image has no stream '{}' ({})", label, name, stream_names(exe)));
    if (used.count(name) == 0)
      throw std::invalid_argument(fmt::format("{}: stream '{}' is not used by the program{} run",
                                              label, name, programs.size() == 1 ? "" : "s"));
    if (files.count(name) != 0)
      throw std::invalid_argument(fmt::format("{}: stream '{}' is given twice", label, name));
    DataFile& f = files[name];
    f.option = label;
    f.path = path;
    f.input = s->second.direction == sdk::StreamDirection::kHostToDevice;
    f.batch = file_bytes(exe, s->second.elements, s->second.type);
    // An input holds one batch for every run, or a batch for each run in turn; an output gets a
    // batch from each run.
    const size_t runs = used[name];
    const std::string carries = fmt::format("stream '{}' carries {} a run", name,
                                            layout(exe, s->second.elements, s->second.type));
    if (f.input && runs > 1)
      open_data_file(f, f.batch,
                     fmt::format("{}: one batch for every run ({} bytes) or one for each of its {} "
                                 "runs ({} bytes)",
                                 carries, f.batch, runs, f.batch * runs),
                     f.batch * runs);
    else
      open_data_file(f, f.batch * runs,
                     runs == 1 ? carries : fmt::format("{}, {} runs", carries, runs));
  }
  std::vector<std::string> missing;
  for (const auto& [name, runs] : used)
    if (files.count(name) == 0) missing.push_back(name);
  if (!missing.empty())
    throw std::invalid_argument(fmt::format(
        "the program{} use{} stream{} {} with no file: give each with --stream NAME=FILE ({})",
        programs.size() == 1 ? "" : "s", programs.size() == 1 ? "s" : "",
        missing.size() == 1 ? "" : "s", fmt::join(missing, ", "), stream_names(exe)));
  return files;
}

// --write-tensor (input) or --read-tensor (output) NAME=FILE: the tensor of every replica,
// written before the first run or read after the last; NAME@PROGRAM=FILE: before PROGRAM's
// first run, or after its last.
std::vector<std::pair<std::string, DataFile>> tensor_files(
    const sdk::Executable& exe, const std::vector<const sdk::ProgramInfo*>& runs,
    const std::vector<std::string>& options, bool input) {
  const char* option_name = input ? "--write-tensor" : "--read-tensor";
  std::vector<std::pair<std::string, DataFile>> files;
  for (const std::string& option : options) {
    auto [name, path] = binding(option_name, option, "the tensor's name and a file");
    size_t at = input ? 0 : runs.size() - 1;
    const size_t sign = name.rfind('@');
    if (exe.tensor_info.count(name) == 0 && sign != std::string::npos) {
      const std::string program = name.substr(sign + 1);
      name.resize(sign);
      const auto is = [&program](const sdk::ProgramInfo* p) { return p->name == program; };
      const auto first = std::find_if(runs.begin(), runs.end(), is);
      if (first == runs.end())
        throw std::invalid_argument(fmt::format("{} {}: no program '{}' runs (the runs: {})",
                                                option_name, option, program,
                                                fmt::join(run_names(runs), ", ")));
      at = static_cast<size_t>(input ? first - runs.begin()
                                     : runs.rend() - 1 -
                                           std::find_if(runs.rbegin(), runs.rend(), is));
    }
    const auto t = exe.tensor_info.find(name);
    if (t == exe.tensor_info.end())
      throw std::invalid_argument(fmt::format("{} {}: the image has no tensor '{}' ({} tensors)",
                                              option_name, option, name, exe.tensor_info.size()));
    DataFile f;
    f.option = fmt::format("{} {}", option_name, option);
    f.path = path;
    f.input = input;
    f.at = at;
    open_data_file(
        f, file_bytes(exe, t->second.elements, t->second.type),
        fmt::format("tensor '{}' holds {}", name, layout(exe, t->second.elements, t->second.type)));
    files.emplace_back(name, std::move(f));
  }
  return files;
}

// Every output is a file of its own: not the image, not an input (read before the run and then
// written over) and not another output. Paths are compared as the file system resolves them.
void check_output_paths(const SdkImageRun& run, const std::map<std::string, DataFile>& streams,
                        const std::vector<std::pair<std::string, DataFile>>& tensors_in,
                        const std::vector<std::pair<std::string, DataFile>>& tensors_out) {
  struct File {
    std::string option, path;
    bool output;
  };
  std::vector<File> files;
  if (!run.image_path.empty()) files.push_back({"the image", run.image_path, false});
  for (const auto& [name, f] : streams) files.push_back({f.option, f.path, !f.input});
  for (const auto& [name, f] : tensors_in) files.push_back({f.option, f.path, false});
  for (const auto& [name, f] : tensors_out) files.push_back({f.option, f.path, true});
  const report::OutputOptions& o = run.device;
  for (const auto& [option, path] : {std::pair{"--stats", o.stats}, std::pair{"--trace", o.trace},
                                     std::pair{"--report", o.report}})
    if (!path.empty()) files.push_back({fmt::format("{} {}", option, path), path, true});
  const auto resolved = [](const std::string& path) {
    std::error_code error;
    const std::filesystem::path p = std::filesystem::weakly_canonical(path, error);
    return error ? std::filesystem::absolute(path).lexically_normal() : p;
  };
  for (size_t i = 0; i < files.size(); ++i) {
    if (!files[i].output) continue;
    for (size_t j = 0; j < files.size(); ++j)
      if (j != i && (j > i || !files[j].output) &&
          resolved(files[i].path) == resolved(files[j].path))
        throw std::invalid_argument(
            fmt::format("{}: {} is also {}: an output must be a file of its own", files[i].option,
                        files[i].path,
                        files[j].option == "the image" ? "the image"
                        : files[j].output ? fmt::format("written by {}", files[j].option)
                                          : fmt::format("read by {}", files[j].option)));
  }
}

}  // namespace

int run_sdk_image(const sdk::ElfImage& image, const hw::MachineConfig& machine,
                  const SdkImageRun& run, std::ostream& out) {
  const sdk::Executable exe = sdk::read_executable(image, machine);
  const auto programs = chosen_programs(exe, run.programs);
  std::map<std::string, DataFile> streams = stream_files(exe, programs, run.streams);
  auto tensors_in = tensor_files(exe, programs, run.write_tensors, true);
  auto tensors_out = tensor_files(exe, programs, run.read_tensors, false);
  check_output_paths(run, streams, tensors_in, tensors_out);

  // Programs may run again and again (--program repeated): the device keeps per-superstep
  // records only for the statistics, trace or report asked for.
  sdk::DeviceOptions options = run.device;
  options.keep_records = false;
  sdk::Device device(exe, options);
  // Replica r's part of a tensor's file: bytes [r x each, (r + 1) x each).
  const auto each = [&](const DataFile& f) { return f.data.size() / exe.replicas; };
  std::map<std::string, size_t> uses;  // stream -> the runs that used it so far
  size_t console_shown = 0;
  for (size_t i = 0; i < programs.size(); ++i) {
    const sdk::ProgramInfo* p = programs[i];
    for (auto& [name, f] : tensors_in)
      if (f.at == i)
        for (unsigned r = 0; r < exe.replicas; ++r)
          device.write_tensor(name, r, f.data.data() + r * each(f), each(f));
    // Each stream this run uses gets its next batch.
    std::set<std::string> used;
    for (unsigned id : p->host_transfers) used.insert(exe.host_transfers.at(id).stream);
    for (const std::string& name : used) {
      DataFile& f = streams.at(name);
      device.connect_stream(name, f.data.data() + f.offset(uses[name]++), f.batch);
    }
    try {
      const sdk::DeviceReport& report = device.run(p->name);
      const std::string& console = device.console();
      out << console.substr(std::min(console_shown, console.size()));
      console_shown = console.size();
      fmt::print(out, "\n== program '{}' ({} of {}) ==", p->name, device.runs(), programs.size());
      report::print_report(out, report.run, report.energy);
      fmt::print(out,
                 "host streams         {} bytes to the device ({} of them sent ahead while the "
                 "tiles ran on), {} bytes from it; {} tile cycles in host syncs\n",
                 report.host_to_device_bytes, report.prefetched_bytes, report.device_to_host_bytes,
                 report.host_transfer_cycles);
    } catch (const sdk::DeviceError& e) {
      if (!e.outcome()) throw;
      out.flush();
      fmt::print(stderr, "ipu-sim: program '{}': {}\n", p->name, e.what());
      if (!tensors_out.empty() || std::any_of(streams.begin(), streams.end(),
                                              [](const auto& s) { return !s.second.input; }))
        fmt::print(stderr, "ipu-sim: no output file written: program '{}' did not end\n", p->name);
      // A program that ended its tiles instead of coming back to the host failed, status 0 or not.
      const int status = exit_status(*e.outcome());
      return status == 0 ? kExitFault : status;
    }
    for (auto& [name, f] : tensors_out)
      if (f.at == i)
        for (unsigned r = 0; r < exe.replicas; ++r)
          device.read_tensor(name, r, f.data.data() + r * each(f), each(f));
  }
  // Every program ran to its end: the streams from the device hold a batch from each run.
  for (const auto& [name, f] : streams) {
    if (f.input) continue;
    write_data_file(f);
    fmt::print(out, "stream {:<13} {} bytes written to {}\n", name, f.data.size(), f.path);
  }
  for (auto& [name, f] : tensors_out) {
    write_data_file(f);
    fmt::print(out, "tensor {:<13} {} bytes written to {}\n", name, f.data.size(), f.path);
  }
  return 0;
}

void print_run_hint(const sdk::ElfImage& image, std::ostream& out) {
  const std::optional<sdk::ManifestTarget> target = sdk::manifest_target(image);
  if (!sdk::has_runtime_section(image) || !target) return;
  if (target->preset.empty())
    throw sdk::ImageError(
        fmt::format("{}: the .ipu.manifest's target names no preset", image.path));
  // The machine it was built for: its preset, with the tiles and clock it was built with.
  const hw::MachineConfig defaults = hw::configure_machine(target->preset, "", {});
  std::vector<std::pair<std::string, std::string>> overrides;
  if (target->tiles != defaults.chip.tiles)
    overrides.emplace_back("chip.tiles", std::to_string(target->tiles));
  if (target->clock_hz != defaults.chip.tile.clock_hz)
    overrides.emplace_back("tile.clock-hz", fmt::format("{}", target->clock_hz));
  const sdk::Executable exe =
      sdk::read_executable(image, hw::configure_machine(target->preset, "", overrides));
  // The command is meant to be pasted: every word from the image is shell-quoted, and every
  // name printed has its control bytes escaped.
  std::vector<std::string> programs,
      run{"ipu-sim run " + shell_word(image.path), "--preset " + shell_word(target->preset)};
  for (const auto& [name, value] : overrides) run.push_back(fmt::format("--{} {}", name, value));
  for (const sdk::ProgramInfo& p : exe.programs)
    programs.push_back(fmt::format("'{}' ({} superstep{})", printable(p.name), p.supersteps,
                                   p.supersteps == 1 ? "" : "s"));
  fmt::print(out, "programs             {}\n", fmt::join(programs, ", "));
  if (exe.programs.size() > 1) run.push_back("--program NAME ...");
  const char* label = "stream files         ";
  for (const auto& [name, s] : exe.streams) {
    fmt::print(out, "{}{}: {}, {}\n", label, printable(name), toward(s),
               layout(exe, s.elements, s.type));
    label = "                     ";
    run.push_back(fmt::format("--stream {}FILE", shell_word(name + "=")));
  }
  fmt::print(out, "run it with          {}\n", fmt::join(run, " "));
}

}  // namespace ipu::sim

#include "sim/sweep.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <boost/program_options.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hw/machine/machine_config.h"
#include "sim/exit_status.h"
#include "sim/sweep_points.h"

namespace ipu::sim {
namespace {

namespace fs = std::filesystem;
namespace po = boost::program_options;
using Json = nlohmann::ordered_json;

struct Axis {
  std::string name;
  std::vector<std::string> values;
};

// "NAME=V1,V2,...": a known parameter (or "preset") and at least one value, each accepted by
// the parameter's own parser, or a known preset (so a typo fails before any point runs).
Axis parse_axis(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw std::invalid_argument(fmt::format("--vary '{}': expected NAME=V1,V2,...", text));
  Axis axis{text.substr(0, eq), {}};
  std::string values = text.substr(eq + 1);
  for (size_t begin = 0;;) {
    const size_t comma = values.find(',', begin);
    const std::string value = values.substr(begin, comma - begin);
    if (value.empty())
      throw std::invalid_argument(fmt::format("--vary '{}': an empty value", text));
    hw::MachineConfig probe;
    try {
      // "preset" varies the machine a point starts from (--preset), before its parameters.
      if (axis.name == "preset")
        hw::machine_preset(value);
      else
        base::set_parameter(probe, axis.name, value);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("--vary '{}': {}", text, e.what()));
    }
    axis.values.push_back(value);
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return axis;
}

struct Point {
  std::vector<std::string> values;  // one per axis
  int exit_status = -1;
  std::string error;   // the first line the program wrote to stderr, when it failed
  std::string output;  // the last line it wrote to stdout, when it failed
  Json summary;        // from its statistics

  // What the table's status column says of a failed point: the stderr headline, and the last
  // stdout line beside it (a program may print its reason there, after a warning on stderr).
  std::string reason() const {
    if (error.empty()) return output;
    if (output.empty() || output == error) return error;
    return fmt::format("{} (stdout: {})", error, output);
  }
};

// A CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

// The headline of what a failed point wrote to stderr (its first line: the error itself; a
// usage text or a report's detail follows it).
std::string first_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) return line;
  return "";
}

// The last non-empty line a point wrote to stdout: the reason of a program that prints its
// errors there (the examples' "loss did not fall").
std::string last_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last;
}

// Starts `argv` with stdout and stderr into files; returns the child's pid.
pid_t spawn(const std::vector<std::string>& argv, const fs::path& out, const fs::path& err) {
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    const int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0) _exit(127);
    execvp(args[0], args.data());
    dprintf(2, "ipu-sim sweep: cannot run %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  return pid;
}

}  // namespace

int run_sweep(int argc, char** argv) {
  std::vector<std::string> vary, command;
  std::string csv, json_file, out_dir;
  unsigned jobs = 1;
  po::options_description options("Options of ipu-sim sweep");
  options.add_options()("help,h", "print this help and exit")(
      "vary", po::value<std::vector<std::string>>(&vary),
      "NAME=V1,V2,...: a configuration parameter and its values (once or twice: a grid)")(
      "jobs,j", po::value<unsigned>(&jobs)->default_value(1), "points run at once")(
      "csv", po::value<std::string>(&csv), "also write the table as CSV to this file")(
      "json", po::value<std::string>(&json_file),
      "also write every point's configuration values, exit status and summary as JSON")(
      "out", po::value<std::string>(&out_dir),
      "keep each point's statistics and output in this folder (default: a temporary one)");
  // The sweep's options come first; the first other argument is the IMAGE (its run options
  // follow it), or "--" starts a COMMAND. What follows belongs to them, untouched.
  std::vector<std::string> own;
  bool is_command = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") {
      is_command = true;
      command.assign(argv + i + 1, argv + argc);
      break;
    }
    if (arg.rfind('-', 0) != 0) {
      command.assign(argv + i, argv + argc);
      break;
    }
    own.push_back(arg);
    const bool takes_value = arg != "--help" && arg != "-h" && arg.find('=') == std::string::npos;
    if (takes_value && i + 1 < argc) own.push_back(argv[++i]);
  }
  std::vector<Axis> axes;
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(own).options(options).run(), vm);
    po::notify(vm);
    if (vm.count("help")) {
      std::cout << "Usage: ipu-sim sweep --vary NAME=V1,V2,... [--vary NAME=...] [options] IMAGE "
                   "[run options]\n"
                   "       ipu-sim sweep --vary NAME=V1,V2,... [options] -- COMMAND [ARGS...]\n\n"
                   "Runs the image (ipu-sim run) or the command once per point of the grid, "
                   "adding --NAME VALUE\nfor each varied parameter and --stats FILE, and prints "
                   "a table of each point's figures.\nThe command must take ipu-sim's "
                   "configuration options, --config-dump and --stats (the SDK examples do):\n"
                   "each point's configuration is checked with --config-dump before any point "
                   "runs.\nNAME may be preset (--vary preset=mk2,bow): each point starts from "
                   "that preset.\n\n"
                << options << "\n";
      return 0;
    }
    if (vary.empty() || vary.size() > 2)
      throw std::invalid_argument("give one or two --vary NAME=V1,V2,...");
    for (const std::string& v : vary) axes.push_back(parse_axis(v));
    if (axes.size() == 2 && axes[0].name == axes[1].name)
      throw std::invalid_argument(fmt::format("--vary {} twice", axes[0].name));
    if (command.empty())
      throw std::invalid_argument(is_command ? "nothing after --"
                                             : "no IMAGE or -- COMMAND to sweep");
    if (jobs == 0 || jobs > 256) throw std::invalid_argument("--jobs must be from 1 to 256");
    // A parameter given twice is a usage error in every point: refused once, here.
    for (const Axis& a : axes)
      for (const std::string& arg : command)
        if (arg == "--" + a.name || arg.rfind("--" + a.name + "=", 0) == 0)
          throw std::invalid_argument(
              fmt::format("--vary {0}: the {1} {2}; give {0} in one place", a.name,
                          is_command ? "command also gives" : "image's run options also give",
                          arg.substr(0, a.name.size() + 2)));
  } catch (const std::exception& e) {
    fmt::print(stderr, "ipu-sim sweep: {}\nTry 'ipu-sim sweep --help'.\n", e.what());
    return kExitUsage;
  }
  if (!is_command) {  // an image: `ipu-sim run IMAGE [options]` with this very program
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (ec) {
      fmt::print(stderr, "ipu-sim sweep: cannot find this program: {}\n", ec.message());
      return 1;
    }
    command.insert(command.begin(), {self.string(), "run"});
  }

  fs::path dir = out_dir;
  const bool temporary = out_dir.empty();
  if (temporary) {
    std::string pattern = (fs::temp_directory_path() / "ipu-sweep.XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      fmt::print(stderr, "ipu-sim sweep: cannot make a temporary folder: {}\n",
                 std::strerror(errno));
      return 1;
    }
    dir = pattern;
  } else {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) {
      fmt::print(stderr, "ipu-sim sweep: cannot make {}: {}\n", out_dir, ec.message());
      return kExitUsage;
    }
  }

  // The grid, the first axis slowest.
  std::vector<Point> points;
  for (const std::string& a : axes[0].values) {
    if (axes.size() == 1) {
      points.emplace_back().values = {a};
      continue;
    }
    for (const std::string& b : axes[1].values) points.emplace_back().values = {a, b};
  }

  // A point's command line: the command, then --NAME VALUE for each varied parameter.
  auto point_command = [&](const Point& p) {
    std::vector<std::string> argv_point = command;
    for (size_t a = 0; a < axes.size(); ++a) {
      argv_point.push_back("--" + axes[a].name);
      argv_point.push_back(p.values[a]);
    }
    return argv_point;
  };
  auto remove_temporary = [&] {
    std::error_code ec;
    if (temporary) fs::remove_all(dir, ec);
  };

  // Each point's whole configuration, checked before any point runs: its command with
  // --config-dump (ipu-sim and the examples print the machine they would run on, and exit), so
  // a value its parameter parses but the machine refuses (a range, a rule between parameters)
  // fails the sweep once instead of every point.
  for (const Point& p : points) {
    std::vector<std::string> check = point_command(p);
    check.push_back("--config-dump");
    const fs::path out = dir / "check.out", err = dir / "check.err";
    int status = 0;
    try {
      const pid_t pid = spawn(check, out, err);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
    } catch (const std::exception& e) {
      fmt::print(stderr, "ipu-sim sweep: {}\n", e.what());
      remove_temporary();
      return 1;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::vector<std::string> values;
      for (size_t a = 0; a < axes.size(); ++a)
        values.push_back(fmt::format("{}={}", axes[a].name, p.values[a]));
      const std::string why = first_line(err);
      // An option of the sweep's own after the IMAGE goes to every point, which refuses it.
      std::string hint;
      for (const char* own_option : {"--csv", "--json", "--out", "--jobs", "--vary"})
        if (why.find(fmt::format("'{}'", own_option)) != std::string::npos)
          hint = fmt::format(" ({} is the sweep's: give it before the IMAGE or --)", own_option);
      fmt::print(stderr,
                 "ipu-sim sweep: point {}: {}{}\nNo point was run: each point's configuration is "
                 "checked first (its command with --config-dump).\n",
                 fmt::join(values, " "), why.empty() ? "its configuration is refused" : why, hint);
      remove_temporary();
      return kExitUsage;
    }
  }

  // Run them, `jobs` at a time.
  std::map<pid_t, size_t> running;
  size_t next = 0;
  auto files = [&dir](size_t i) {
    const std::string stem = fmt::format("point{}", i);
    return std::array<fs::path, 3>{dir / (stem + ".stats.json"), dir / (stem + ".out"),
                                   dir / (stem + ".err")};
  };
  while (next < points.size() || !running.empty()) {
    while (next < points.size() && running.size() < jobs) {
      std::vector<std::string> argv_point = point_command(points[next]);
      const auto f = files(next);
      argv_point.push_back("--stats");
      argv_point.push_back(f[0].string());
      fs::remove(f[0]);
      running[spawn(argv_point, f[1], f[2])] = next;
      ++next;
    }
    int status = 0;
    const pid_t done = waitpid(-1, &status, 0);
    if (done < 0) {
      if (errno == EINTR) continue;
      break;
    }
    const auto it = running.find(done);
    if (it == running.end()) continue;
    Point& p = points[it->second];
    running.erase(it);
    p.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    const auto f = files(&p - points.data());
    if (p.exit_status != 0) {
      p.error = first_line(f[2]);
      p.output = last_line(f[1]);
    }
    std::ifstream in(f[0]);
    if (in) {
      // A point's program is any program: its statistics are read as untrusted input.
      PointSummary read = read_point_summary(in);
      p.summary = std::move(read.summary);
      if (!read.error.empty()) {
        if (p.error.empty() && p.output.empty())
          p.error = fmt::format("unreadable statistics: {}", read.error);
        if (p.exit_status == 0) p.exit_status = 1;
      }
    } else if (p.exit_status == 0) {
      p.exit_status = 1;
      p.error = "the program wrote no statistics (does it take --stats?)";
    }
  }

  // The table.
  std::vector<std::string> header;
  header.reserve(axes.size());
  for (const Axis& a : axes) header.push_back(a.name);
  header.insert(header.end(), figure_columns().begin(), figure_columns().end());
  header.push_back("status");
  std::vector<std::vector<std::string>> rows;
  bool all_ok = true;
  for (const Point& p : points) {
    std::vector<std::string> row = p.values;
    const std::vector<std::string> figures = summary_figures(p.summary);
    row.insert(row.end(), figures.begin(), figures.end());
    row.push_back(p.exit_status == 0 ? "ok"
                                     : fmt::format("exit {}: {}", p.exit_status, p.reason()));
    all_ok = all_ok && p.exit_status == 0;
    rows.push_back(std::move(row));
  }
  std::vector<size_t> width(header.size());
  for (size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& r : rows)
      if (c + 1 < header.size()) width[c] = std::max(width[c], r[c].size());
  }
  auto print_row = [&](const std::vector<std::string>& r) {
    std::string line;
    for (size_t c = 0; c < r.size(); ++c)
      line += c + 1 < r.size() ? fmt::format("{:>{}}  ", r[c], width[c]) : r[c];
    fmt::print("{}\n", line);
  };
  print_row(header);
  for (const auto& r : rows) print_row(r);

  bool files_ok = true;
  if (!csv.empty()) {
    std::ofstream out(csv);
    std::vector<std::string> keys = {"cycles",
                                     "seconds",
                                     "tflops",
                                     "flops",
                                     "amp_peak_fraction",
                                     "model_tflops",
                                     "model_flops",
                                     "energy_joules",
                                     "watts",
                                     "watts_per_chip",
                                     "exchange_bytes",
                                     "inter_chip_bytes",
                                     "ipulink_bytes",
                                     "streaming_bytes_written",
                                     "streaming_bytes_read",
                                     "supersteps",
                                     "instructions"};
    for (const Axis& a : axes) out << a.name << ",";
    for (const std::string& k : keys) out << k << ",";
    out << "exit_status,error\n";
    for (const Point& p : points) {
      for (const std::string& v : p.values) out << csv_field(v) << ",";
      for (const std::string& k : keys)
        out << (p.summary.contains(k) ? p.summary[k].dump() : std::string()) << ",";
      out << p.exit_status << "," << csv_field(p.exit_status == 0 ? "" : p.reason()) << "\n";
    }
    if (!out) fmt::print(stderr, "ipu-sim sweep: cannot write {}\n", csv), files_ok = false;
  }
  if (!json_file.empty()) {
    Json j;
    j["command"] = command;
    j["parameters"] = Json::array();
    for (const Axis& a : axes) j["parameters"].push_back({{"name", a.name}, {"values", a.values}});
    j["points"] = Json::array();
    for (const Point& p : points) {
      Json values;
      for (size_t a = 0; a < axes.size(); ++a) values[axes[a].name] = p.values[a];
      j["points"].push_back({{"values", values},
                             {"exit_status", p.exit_status},
                             {"error", p.error},
                             {"stdout", p.output},
                             {"summary", p.summary}});
    }
    std::ofstream out(json_file);
    out << j.dump(2) << "\n";
    if (!out) fmt::print(stderr, "ipu-sim sweep: cannot write {}\n", json_file), files_ok = false;
  }
  remove_temporary();
  if (!files_ok) return kExitUsage;
  return all_ok ? 0 : 1;
}

}  // namespace ipu::sim

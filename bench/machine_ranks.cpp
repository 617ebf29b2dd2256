// A POD16 split over MPI ranks (hw/parallel/ranks.h): `ipu-sim run` in one process against
// `mpirun -np 2 ipu-sim run`, each rank with one host thread, on
//  - the compute-and-exchange superstep loop on all 23,552 tiles (bench/firmware/superstep_loop.c
//    with MACHINE_RING): host seconds per superstep and the speed-up of 2 ranks;
//  - back-to-back external syncs with nothing to compute (bench/firmware/xsync_loop.c): the host
//    cost of a superstep whose sync crosses ranks, against the same superstep in one process.
// Both runs must agree on cycles, instructions and supersteps; the bench says so beside them.
// `machine_ranks pod64` runs the superstep loop on every tile of a POD64 instead (94,208 tiles;
// its image, replicated by the tree's ipu-image into a temporary file, is removed after).
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "bench/bench_help.h"

namespace {

// The figures of ipu-sim's run summary this bench reads ("name   value ...").
struct Summary {
  bool ok = false;
  std::map<std::string, std::string> lines;
  double number(const std::string& name) const {
    const auto it = lines.find(name);
    return it == lines.end() ? 0 : std::strtod(it->second.c_str(), nullptr);
  }
  std::string text(const std::string& name) const {
    const auto it = lines.find(name);
    return it == lines.end() ? "" : it->second;
  }
};

Summary run(const std::string& command) {
  Summary s;
  FILE* out = popen((command + " 2>/dev/null").c_str(), "r");
  if (out == nullptr) return s;
  char line[512];
  while (std::fgets(line, sizeof line, out) != nullptr) {
    const std::string l(line);
    if (l.size() < 22 || l[20] != ' ') continue;  // summary lines: a 20-column name, then values
    std::string name = l.substr(0, 20);
    name.erase(name.find_last_not_of(' ') + 1);
    std::string value = l.substr(21);
    if (!value.empty() && value.back() == '\n') value.pop_back();
    s.lines[name] = value;
  }
  s.ok = pclose(out) != -1 && s.lines.count("tile cycles") == 1;
  return s;
}

// "(rank 0: its tiles' compute 15.668 s, the slowest rank's (rank 1) 16.2 s; swapping results
// with the other ranks 531 times, 1.954 s)"
struct ShareFigures {
  double compute = 0, slowest_compute = 0, swaps = 0, swap_seconds = 0;
};

ShareFigures share_figures(const Summary& s) {
  const std::string t = s.text("MPI ranks");
  ShareFigures f;
  const size_t c = t.find("compute ");
  const size_t slowest = t.find(") ", t.find("slowest"));
  const size_t w = t.find("ranks ", t.find("other"));
  const size_t k = t.find("times, ");
  if (c == std::string::npos || slowest == std::string::npos || w == std::string::npos ||
      k == std::string::npos)
    return f;
  f.compute = std::strtod(t.c_str() + c + 8, nullptr);
  f.slowest_compute = std::strtod(t.c_str() + slowest + 2, nullptr);
  f.swaps = std::strtod(t.c_str() + w + 6, nullptr);
  f.swap_seconds = std::strtod(t.c_str() + k + 7, nullptr);
  return f;
}

bool same_run(const Summary& a, const Summary& b) {
  for (const char* name :
       {"result", "tile cycles", "instructions retired", "supersteps", "exchange", "between chips"})
    if (a.text(name) != b.text(name)) return false;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (ipu::bench::print_help(
          argc, argv, "[pod64]",
          "POD16 on one process against two MPI ranks: host time per superstep, speed-up, and "
          "the host cost of a superstep whose sync crosses ranks; pod64: the superstep loop on "
          "every tile of a POD64"))
    return 0;
  const bool pod64 = argc == 2 && std::string(argv[1]) == "pod64";
  if (argc > 2 || (argc == 2 && !pod64)) {
    fmt::print(stderr, "{}: unknown run '{}' (runs: pod64)\n", argv[0], argv[argc - 1]);
    return 2;
  }
  if (geteuid() == 0) {  // Open MPI refuses root unless told twice
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
  }
  setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 0);  // containers refuse CMA
  const std::string sim = IPU_SIM;
  const std::string mpirun = std::string(MPIEXEC) + " -np 2 ";
  struct Case {
    const char* name;
    const char* image;
  };
  int status = 0;
  const std::string pod64_image = fmt::format("/tmp/machine_ranks_pod64_{}.elf", getpid());
  std::vector<Case> cases = {Case{"superstep loop, 23,552 tiles", SUPERSTEP_POD16},
                             Case{"external syncs only, 16 tiles", XSYNC_16}};
  if (pod64) {
    const std::string replicate = fmt::format("{} replicate {} --tiles 1472 --chips 64 -o {}",
                                              IPU_IMAGE, SUPERSTEP_FW, pod64_image);
    if (std::system(replicate.c_str()) != 0) {
      fmt::print(stderr, "{}: {} failed\n", argv[0], replicate);
      return 1;
    }
    cases = {Case{"superstep loop, 94,208 tiles", pod64_image.c_str()}};
  }
  const char* preset = pod64 ? "pod64" : "pod16";
  for (const Case& c : cases) {
    const std::string args = fmt::format("run {} --preset {} --threads 1", c.image, preset);
    const Summary one = run(sim + " " + args);
    const Summary two = run(mpirun + sim + " " + args);
    if (!one.ok || !two.ok) {
      fmt::print("machine_ranks {} {}: a run failed ({} rank: {}, 2 ranks: {})\n", preset, c.name,
                 1, one.ok ? "ok" : "failed", two.ok ? "ok" : "failed");
      status = 1;
      continue;
    }
    const double supersteps = one.number("supersteps");
    const double t1 = one.number("host time"), t2 = two.number("host time");
    const ShareFigures f = share_figures(two);
    const bool same = same_run(one, two);
    fmt::print(
        "machine_ranks {} {}: {} supersteps, {} tile cycles; 1 rank {:.3f} s host = {:.1f} "
        "us per superstep; 2 ranks {:.3f} s = {:.1f} us per superstep, {:.2f}x; rank 0 computed "
        "{:.3f} s (the slowest rank {:.3f} s) and swapped results {:.0f} times in {:.3f} s ({:.1f} "
        "us each); same cycles, "
        "instructions and traffic on 1 and 2 ranks: {}\n",
        preset, c.name, supersteps, one.text("tile cycles"), t1, 1e6 * t1 / supersteps, t2,
        1e6 * t2 / supersteps, t1 / t2, f.compute, f.slowest_compute, f.swaps, f.swap_seconds,
        f.swaps > 0 ? 1e6 * f.swap_seconds / f.swaps : 0.0, same ? "yes" : "NO");
    if (!same) status = 1;
  }
  if (pod64) std::remove(pod64_image.c_str());
  return status;
}

// --help for the benchmarks: prints what the benchmark measures and how to call it.
#pragma once

#include <fmt/format.h>

#include <cstring>

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

}  // namespace ipu::bench

#include "sdk_paths.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <vector>

namespace ipu::sdk {
namespace {

namespace fs = std::filesystem;

// The file of the binary holding this code: the shared SDK library, or the program it is
// linked into (whose name dladdr may give relative to a directory since left: use
// /proc/self/exe for it).
fs::path own_binary() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&sdk_paths), &info) != 0 && info.dli_fname != nullptr &&
      fs::path(info.dli_fname).is_absolute())
    return info.dli_fname;
  std::error_code ec;
  return fs::read_symlink("/proc/self/exe", ec);
}

SdkPaths find() {
  SdkPaths p;
  const char* gcc = std::getenv("IPU_RISCV_GCC");
  p.gcc = gcc != nullptr && *gcc != '\0' ? gcc : "riscv64-unknown-elf-gcc";
  std::vector<fs::path> tried;
  if (const char* dir = std::getenv("IPU_SDK_DATA_DIR"); dir != nullptr && *dir != '\0') {
    tried.emplace_back(dir);
  } else {
    const fs::path binary = own_binary();
    if (!binary.empty()) {
      std::error_code ec;
      const fs::path real = fs::weakly_canonical(binary, ec);
      // PREFIX/share/virtual-ipu beside PREFIX/bin or PREFIX/lib, or further up for the Python
      // extension (PREFIX/lib/python3.X/site-packages/virtual_ipu; build/python/virtual_ipu).
      fs::path above = (ec ? binary : real).parent_path();
      for (int up = 0; up < 4 && above.has_parent_path() && above != above.parent_path(); ++up) {
        above = above.parent_path();
        tried.push_back(above / "share/virtual-ipu");
      }
    }
  }
  for (const fs::path& dir : tried) {
    std::error_code ec;
    if (fs::is_regular_file(dir / "tile.ld", ec) && fs::is_directory(dir / "include", ec)) {
      p.data_dir = dir.string();
      return p;
    }
  }
  std::string places;
  for (const fs::path& dir : tried) places += (places.empty() ? "" : ", ") + dir.string();
  throw SdkPathError(fmt::format(
      "the SDK's firmware files (tile.ld, include/ipu.h, runtime/, codelets/) are not in {}: set "
      "IPU_SDK_DATA_DIR to the installed share/virtual-ipu",
      places.empty() ? std::string("any place known") : places));
}

}  // namespace

const SdkPaths& sdk_paths() {
  static const SdkPaths paths = find();
  return paths;
}

}  // namespace ipu::sdk

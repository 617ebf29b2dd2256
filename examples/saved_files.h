// What an example saves for `ipu-sim run` of its image (docs/sdk.md, running a saved image):
// raw little-endian arrays, as --stream and --write-tensor read them.
#pragma once

#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "examples/example_options.h"
#include "sdk/tools/output_path.h"

namespace ipu::examples {

// Throws OptionError naming the option and the file for the first (option, file) whose file
// cannot be written (sdk::can_write_file), so that a long run does not end in "cannot write".
inline void require_writable(const std::vector<std::pair<std::string, std::string>>& outputs) {
  for (const auto& [option, path] : outputs)
    if (!sdk::can_write_file(path)) throw OptionError(option + ": cannot write " + path);
}

template <typename T>
void write_binary(const std::string& path, const std::vector<T>& data) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(data.data()),
            static_cast<std::streamsize>(data.size() * sizeof(T)));
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace ipu::examples

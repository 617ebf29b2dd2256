// What an example saves for `ipu-sim run` of its image (docs/sdk.md, running a saved image):
// raw little-endian arrays, as --stream and --write-tensor read them.
#pragma once

#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace ipu::examples {

template <typename T>
void write_binary(const std::string& path, const std::vector<T>& data) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(data.data()),
            static_cast<std::streamsize>(data.size() * sizeof(T)));
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace ipu::examples

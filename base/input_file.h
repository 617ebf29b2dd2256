// Reading a file a user hands the tools (an image, a configuration): only a regular file, and
// only up to a size that bounds the memory it can cost, so that /dev/zero or a FIFO is refused
// with its name instead of being read for ever.
#pragma once

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace ipu::base {

// The file's bytes; throws std::invalid_argument naming the file and what is wrong with it.
inline std::vector<uint8_t> read_input_file(const std::string& path, uint64_t max_bytes,
                                            const char* what) {
  struct stat info {};
  if (stat(path.c_str(), &info) != 0)
    throw std::invalid_argument(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  if (!S_ISREG(info.st_mode))
    throw std::invalid_argument(
        fmt::format("{}: not a regular file (a {} must be one)", path, what));
  if (static_cast<uint64_t>(info.st_size) > max_bytes)
    throw std::invalid_argument(fmt::format("{}: {} bytes, more than a {} may have ({} bytes)",
                                            path, info.st_size, what, max_bytes));
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::invalid_argument(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  std::vector<uint8_t> bytes(static_cast<size_t>(info.st_size));
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (static_cast<size_t>(in.gcount()) != bytes.size() ||
      in.peek() != std::ifstream::traits_type::eof())
    throw std::invalid_argument(fmt::format("{}: changed while it was read", path));
  return bytes;
}

}  // namespace ipu::base

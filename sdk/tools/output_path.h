// Whether a run's output file can be written, asked before the run so that a long simulation
// does not end in "cannot write": true when the file exists and may be written, or does not
// exist and its folder may be written to. Nothing is created or truncated here.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace ipu::sdk {

inline bool can_write_file(const std::string& path) {
  std::error_code error;
  const std::filesystem::path file(path);
  if (path.empty() || std::filesystem::is_directory(file, error)) return false;
  if (std::filesystem::exists(file, error)) return access(path.c_str(), W_OK) == 0;
  const std::filesystem::path folder = file.has_parent_path() ? file.parent_path() : ".";
  return std::filesystem::is_directory(folder, error) && access(folder.c_str(), W_OK) == 0;
}

}  // namespace ipu::sdk

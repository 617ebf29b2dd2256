// A board's streaming memory (its DDR4 DIMMs) stored sparsely: pages are allocated when first
// written, and an unwritten byte reads as zero, so a 256 GB board costs host memory only where
// a program writes it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

namespace ipu::hw {

class StreamingMemory {
 public:
  static constexpr uint64_t kPageBytes = uint64_t{1} << 16;

  explicit StreamingMemory(uint64_t bytes) : bytes_(bytes) {}

  uint64_t size() const { return bytes_; }
  bool contains(uint64_t address, uint64_t bytes) const {
    return address <= bytes_ && bytes <= bytes_ - address;
  }
  // Both throw std::out_of_range naming the range when it is not inside the memory.
  void write(uint64_t address, const void* data, uint64_t bytes);
  void read(uint64_t address, void* data, uint64_t bytes) const;

  uint64_t resident_bytes() const { return pages_.size() * kPageBytes; }

 private:
  void check(uint64_t address, uint64_t bytes) const;

  uint64_t bytes_;
  std::unordered_map<uint64_t, std::unique_ptr<uint8_t[]>> pages_;  // page number -> page
};

}  // namespace ipu::hw

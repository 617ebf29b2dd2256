// Plain bytes for what one simulator process tells the others about a tile (hw/parallel/ranks.h):
// values are copied as they lie in memory, since every process is the same binary on the same
// kind of host. A reader that runs out of bytes throws instead of reading past the end.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace ipu::base {

class ByteWriter {
 public:
  explicit ByteWriter(std::vector<uint8_t>& out) : out_(out) {}
  template <typename T>
  void put(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const uint8_t*>(&value);
    out_.insert(out_.end(), p, p + sizeof value);
  }
  void put(const std::string& s) {
    put(static_cast<uint64_t>(s.size()));
    out_.insert(out_.end(), s.begin(), s.end());
  }
  template <typename T>
  void put(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    put(static_cast<uint64_t>(v.size()));
    const auto* p = reinterpret_cast<const uint8_t*>(v.data());
    out_.insert(out_.end(), p, p + v.size() * sizeof(T));
  }
  size_t size() const { return out_.size(); }

 private:
  std::vector<uint8_t>& out_;
};

class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  template <typename T>
  void get(T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    std::memcpy(&value, take(sizeof value), sizeof value);
  }
  template <typename T>
  T get() {
    T value;
    get(value);
    return value;
  }
  void get(std::string& s) {
    const auto n = get<uint64_t>();
    const uint8_t* p = take(n);
    s.assign(reinterpret_cast<const char*>(p), n);
  }
  template <typename T>
  void get(std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto n = get<uint64_t>();
    if (n > static_cast<uint64_t>(end_ - p_) / sizeof(T)) take(~size_t{0});  // throws
    v.resize(n);
    if (n > 0) std::memcpy(v.data(), take(n * sizeof(T)), n * sizeof(T));
  }
  // A count of items that follow, each at least `min_bytes` long.
  size_t count(size_t min_bytes) {
    const auto n = get<uint64_t>();
    if (n > left() / min_bytes) take(~size_t{0});  // throws
    return static_cast<size_t>(n);
  }
  bool done() const { return p_ == end_; }
  size_t left() const { return static_cast<size_t>(end_ - p_); }

 private:
  const uint8_t* take(size_t n) {
    if (n > static_cast<size_t>(end_ - p_))
      throw std::runtime_error("a tile record from another process ends early");
    const uint8_t* p = p_;
    p_ += n;
    return p;
  }
  const uint8_t* p_;
  const uint8_t* end_;
};

}  // namespace ipu::base

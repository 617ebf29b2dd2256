// An array whose memory comes from the kernel as zero pages on first touch (anonymous mmap),
// so a full chip's 1472 x 624 KiB of SRAM and its predecode caches only become resident where
// a program actually touches them. T must be valid when all its bytes are zero.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <new>
#include <type_traits>

namespace ipu::iss {

template <typename T>
class ZeroPages {
  static_assert(std::is_trivially_copyable_v<T>, "ZeroPages holds plain data");

 public:
  explicit ZeroPages(size_t count) : count_(count), bytes_(count * sizeof(T)) {
    if (bytes_ == 0) return;
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    data_ = static_cast<T*>(p);
  }
  ~ZeroPages() {
    if (data_ != nullptr) munmap(data_, bytes_);
  }
  ZeroPages(const ZeroPages&) = delete;
  ZeroPages& operator=(const ZeroPages&) = delete;

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return count_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }

  // Back to all zeros, releasing the pages (they are zero again on the next touch).
  void clear() {
    if (data_ != nullptr) madvise(data_, bytes_, MADV_DONTNEED);
  }

 private:
  size_t count_ = 0, bytes_ = 0;
  T* data_ = nullptr;
};

}  // namespace ipu::iss

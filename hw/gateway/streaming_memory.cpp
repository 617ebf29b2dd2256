#include "streaming_memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace ipu::hw {

void StreamingMemory::check(uint64_t address, uint64_t bytes) const {
  if (!contains(address, bytes))
    throw std::out_of_range(fmt::format(
        "streaming-memory bytes 0x{:x}..0x{:x} lie outside the board's {} bytes (0x0..0x{:x})",
        address, address + bytes, bytes_, bytes_));
}

void StreamingMemory::write(uint64_t address, const void* data, uint64_t bytes) {
  check(address, bytes);
  const auto* in = static_cast<const uint8_t*>(data);
  while (bytes != 0) {
    const uint64_t offset = address % kPageBytes, n = std::min(bytes, kPageBytes - offset);
    auto& page = pages_[address / kPageBytes];
    if (!page) page = std::make_unique<uint8_t[]>(kPageBytes);  // value-initialised: zeros
    std::memcpy(page.get() + offset, in, n);
    address += n, in += n, bytes -= n;
  }
}

void StreamingMemory::read(uint64_t address, void* data, uint64_t bytes) const {
  check(address, bytes);
  auto* out = static_cast<uint8_t*>(data);
  while (bytes != 0) {
    const uint64_t offset = address % kPageBytes, n = std::min(bytes, kPageBytes - offset);
    const auto page = pages_.find(address / kPageBytes);
    if (page == pages_.end())
      std::memset(out, 0, n);
    else
      std::memcpy(out, page->second.get() + offset, n);
    address += n, out += n, bytes -= n;
  }
}

}  // namespace ipu::hw

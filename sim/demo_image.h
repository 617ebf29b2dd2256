// The demo firmware image (firmware/examples/demo.c), embedded in ipu-sim at build time.
#pragma once

#include <cstdint>
#include <vector>

namespace ipu::sim {
const std::vector<uint8_t>& demo_image();
}

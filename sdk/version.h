// The SDK's version (the project's), for a host program to print or check.
#pragma once

namespace ipu::sdk {

const char* version();

}  // namespace ipu::sdk

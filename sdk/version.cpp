#include "sdk/version.h"

namespace ipu::sdk {

const char* version() { return IPU_SDK_VERSION; }

}  // namespace ipu::sdk

// Where the SDK finds what it compiles codelets with: the RISC-V cross compiler and its data
// directory (include/ with ipu.h and the generated ipu_xipu.h, runtime/ with crt0 and the BSP
// runtime, codelets/ with the SDK's own codelets, tile.ld). Nothing is compiled in but the
// compiler's name: the data directory is found at run time, so an installed SDK works from any
// prefix and refers to no source checkout.
#pragma once

#include <stdexcept>
#include <string>

namespace ipu::sdk {

class SdkPathError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct SdkPaths {
  std::string gcc;       // $IPU_RISCV_GCC, else riscv64-unknown-elf-gcc on the PATH
  std::string data_dir;  // see above
  std::string include_dir() const { return data_dir + "/include"; }
  std::string runtime_dir() const { return data_dir + "/runtime"; }
  std::string codelet_dir() const { return data_dir + "/codelets"; }
  std::string linker_script() const { return data_dir + "/tile.ld"; }
};

// The data directory is $IPU_SDK_DATA_DIR when set, else share/virtual-ipu beside the folder of
// the binary that holds the SDK: PREFIX/lib/libvirtual_ipu_sdk.so after `cmake --install`, or a
// program one folder below the build directory in the tree (build/examples/train finds
// build/share/virtual-ipu). Throws SdkPathError naming every place it looked.
const SdkPaths& sdk_paths();

}  // namespace ipu::sdk

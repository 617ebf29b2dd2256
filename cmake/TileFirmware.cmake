# ipu_add_tile_firmware(NAME SOURCES src... [OPTIMIZE -O2] [DEFINES ...] [NO_RUNTIME])
# Compiles C/assembly sources with Debian's RISC-V cross compiler into NAME.elf, a bare-metal
# RV32IMF image for one tile (tile.ld), as part of the build. Creates a target NAME whose
# property ELF_FILE is the image's path. NO_RUNTIME links without crt0/picolibc (for
# hand-written assembly that provides _start itself).
#
# The same file serves the tree and the installed package (find_package(VirtualIPU)): both set
# IPU_SDK_DATA, the SDK's data directory (include/ with ipu.h and ipu_xipu.h, runtime/, tile.ld),
# before including it. ipu-cc (cmake/ipu-cc.in) compiles with the same flags by hand.
find_program(RISCV_GCC riscv64-unknown-elf-gcc REQUIRED)
if(NOT IPU_SDK_DATA)  # the tree: staged by firmware/CMakeLists.txt, laid out as an install's
  set(IPU_SDK_DATA ${CMAKE_BINARY_DIR}/share/virtual-ipu)
endif()
set(IPU_GENERATED_INCLUDE ${IPU_SDK_DATA}/include)  # ipu_xipu.h, from the Xipu table
set(IPU_FIRMWARE_ARCH -march=rv32imf -mabi=ilp32f)
set(IPU_FIRMWARE_FLAGS -g -Wall -Wextra -ffunction-sections -fdata-sections -nostartfiles
    -I${IPU_SDK_DATA}/include -T ${IPU_SDK_DATA}/tile.ld -Wl,--gc-sections
    -Wl,--no-warn-rwx-segments)  # tile SRAM holds code and data alike
set(IPU_FIRMWARE_RUNTIME ${IPU_SDK_DATA}/runtime/crt0.S ${IPU_SDK_DATA}/runtime/console.c)
set(IPU_FIRMWARE_LIBC --specs=picolibc.specs -DPICOLIBC_DOUBLE_PRINTF_SCANF)

function(ipu_add_tile_firmware name)
  cmake_parse_arguments(FW "NO_RUNTIME" "OPTIMIZE" "SOURCES;DEFINES" ${ARGN})
  if(NOT FW_OPTIMIZE)
    set(FW_OPTIMIZE -O2)
  endif()
  set(output ${CMAKE_CURRENT_BINARY_DIR}/${name}.elf)
  set(sources)
  foreach(src IN LISTS FW_SOURCES)
    get_filename_component(abs ${src} ABSOLUTE)
    list(APPEND sources ${abs})
  endforeach()
  set(defines)
  foreach(d IN LISTS FW_DEFINES)
    list(APPEND defines -D${d})
  endforeach()
  if(FW_NO_RUNTIME)
    set(runtime -nostdlib)
  else()
    set(runtime ${IPU_FIRMWARE_LIBC} ${IPU_FIRMWARE_RUNTIME})
  endif()
  add_custom_command(
    OUTPUT ${output}
    COMMAND ${RISCV_GCC} ${IPU_FIRMWARE_ARCH} ${FW_OPTIMIZE} ${IPU_FIRMWARE_FLAGS} -Werror
            ${defines} ${runtime} ${sources} -o ${output}
    DEPENDS ${sources} ${IPU_FIRMWARE_RUNTIME} ${IPU_SDK_DATA}/tile.ld
            ${IPU_SDK_DATA}/include/ipu.h ${IPU_GENERATED_INCLUDE}/ipu_xipu.h
    COMMENT "Building tile firmware ${name}.elf"
    VERBATIM)
  add_custom_target(${name} ALL DEPENDS ${output})
  if(TARGET xipu_header)  # the tree generates ipu_xipu.h; a package has it installed
    add_dependencies(${name} xipu_header)
  endif()
  set_target_properties(${name} PROPERTIES ELF_FILE ${output})
endfunction()

# ipu_add_spmd_image(NAME FIRMWARE TILES [CHIPS N]): NAME.elf runs firmware target FIRMWARE on
# tiles 0..N-1 (TILES is a count) or on the listed tiles (TILES like "0,64,128"), of chips
# 0..N-1 (1 by default): `ipu-image replicate` as part of the build, the tree's tool or the
# installed package's (VirtualIPU_IPU_IMAGE). The image keeps the firmware's symbols and DWARF.
function(ipu_add_spmd_image name firmware tiles)
  cmake_parse_arguments(SPMD "" "CHIPS" "" ${ARGN})
  get_target_property(source ${firmware} ELF_FILE)
  set(output ${CMAKE_CURRENT_BINARY_DIR}/${name}.elf)
  if(tiles MATCHES ",")
    set(where --at ${tiles})
  else()
    set(where --tiles ${tiles})
  endif()
  if(SPMD_CHIPS)
    list(APPEND where --chips ${SPMD_CHIPS})
  endif()
  if(TARGET ipu-image)  # the tree
    set(tool ipu-image)
    set(tool_target ipu-image)
  else()  # the installed package
    set(tool ${VirtualIPU_IPU_IMAGE})
    set(tool_target)
  endif()
  add_custom_command(
    OUTPUT ${output}
    COMMAND ${tool} replicate ${source} ${where} -o ${output}
    DEPENDS ${source} ${firmware} ${tool_target}
    COMMENT "Building the multi-tile image ${name}.elf"
    VERBATIM)
  add_custom_target(${name} ALL DEPENDS ${output})
  set_target_properties(${name} PROPERTIES ELF_FILE ${output})
endfunction()

# The tree's name for it.
function(add_spmd_image)
  ipu_add_spmd_image(${ARGV})
endfunction()

# add_tile_firmware(NAME SOURCES src... [OPTIMIZE -O2] [DEFINES ...] [NO_RUNTIME])
# Compiles C/assembly sources with Debian's RISC-V cross compiler into NAME.elf, a bare-metal
# RV32IMF image for one tile (firmware/tile.ld), as part of the build. Creates a target NAME
# whose property ELF_FILE is the image's path. NO_RUNTIME links without crt0/picolibc (for
# hand-written assembly tests that provide _start themselves).
find_program(RISCV_GCC riscv64-unknown-elf-gcc REQUIRED)
set(IPU_FIRMWARE_DIR ${CMAKE_CURRENT_LIST_DIR}/../firmware)
set(IPU_FIRMWARE_ARCH -march=rv32imf -mabi=ilp32f)
set(IPU_FIRMWARE_RUNTIME ${IPU_FIRMWARE_DIR}/runtime/crt0.S ${IPU_FIRMWARE_DIR}/runtime/console.c)
# ipu_xipu.h, generated from the Xipu instruction table (firmware/CMakeLists.txt).
set(IPU_GENERATED_INCLUDE ${CMAKE_BINARY_DIR}/firmware/include)

function(add_tile_firmware name)
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
    set(runtime --specs=picolibc.specs -DPICOLIBC_DOUBLE_PRINTF_SCANF ${IPU_FIRMWARE_RUNTIME})
  endif()
  add_custom_command(
    OUTPUT ${output}
    COMMAND ${RISCV_GCC} ${IPU_FIRMWARE_ARCH} ${FW_OPTIMIZE} -g -Wall -Wextra -Werror
            -ffunction-sections -fdata-sections -nostartfiles
            -I${IPU_FIRMWARE_DIR}/include -I${IPU_GENERATED_INCLUDE} ${defines}
            -T ${IPU_FIRMWARE_DIR}/tile.ld -Wl,--gc-sections
            -Wl,--no-warn-rwx-segments  # tile SRAM holds code and data alike
            ${runtime} ${sources} -o ${output}
    DEPENDS ${sources} ${IPU_FIRMWARE_RUNTIME} ${IPU_FIRMWARE_DIR}/tile.ld
            ${IPU_FIRMWARE_DIR}/include/ipu.h ${IPU_GENERATED_INCLUDE}/ipu_xipu.h
    COMMENT "Building tile firmware ${name}.elf"
    VERBATIM)
  add_custom_target(${name} ALL DEPENDS ${output})
  add_dependencies(${name} xipu_header)
  set_target_properties(${name} PROPERTIES ELF_FILE ${output})
endfunction()

# add_spmd_image(NAME FIRMWARE TILES [CHIPS N]): NAME.elf runs firmware target FIRMWARE on
# tiles 0..N-1 (TILES is a count) or on the listed tiles (TILES like "0,64,128"), of chips
# 0..N-1 (1 by default).
function(add_spmd_image name firmware tiles)
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
  add_custom_command(
    OUTPUT ${output}
    COMMAND ipu-image replicate ${source} ${where} -o ${output}
    DEPENDS ${source} ${firmware} ipu-image
    COMMENT "Building the multi-tile image ${name}.elf"
    VERBATIM)
  add_custom_target(${name} ALL DEPENDS ${output})
  set_target_properties(${name} PROPERTIES ELF_FILE ${output})
endfunction()

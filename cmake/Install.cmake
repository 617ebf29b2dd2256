# `cmake --install build --prefix P` (docs/sdk.md, "The installed SDK"):
#   P/bin          ipu-sim, ipu-image, ipu-cc
#   P/lib          libvirtual_ipu_sdk.so, and cmake/VirtualIPU/ (find_package(VirtualIPU))
#   P/include/virtual-ipu   the SDK's public headers, under their paths in this tree
#   P/share/virtual-ipu     the firmware files: include/ (ipu.h, generated ipu_xipu.h),
#                           runtime/ (crt0, console, BSP runtime), codelets/, tile.ld
# Nothing installed refers to this checkout: the library and ipu-cc find share/virtual-ipu
# relative to themselves, the package relative to its own folder.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS ipu-sim ipu-image RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(PROGRAMS ${CMAKE_BINARY_DIR}/sdk/ipu-cc DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS virtual_ipu_sdk EXPORT VirtualIPUTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})

# The public headers: what sdk/runtime/device.h, sdk/compiler/compiler.h and sdk/graph/graph.h
# include, and nothing that pulls in SystemC or the verilated RTL (a test compiles them alone).
set(IPU_PUBLIC_HEADERS
    sdk/version.h sdk/graph/graph.h sdk/graph/codelet_library.h sdk/graph/sdk_paths.h
    sdk/compiler/compiler.h sdk/compiler/stack_usage.h sdk/ops/matmul.h sdk/ops/elementwise.h sdk/ops/steps.h sdk/ops/transformer.h sdk/image/elf_reader.h sdk/image/elf_writer.h sdk/runtime/device.h
    sdk/runtime/debug_options.h sdk/runtime/profile.h iss/worker_profile.h
    hw/machine/machine_config.h hw/machine/run_options.h hw/common/run_report.h hw/common/loaded_program.h
    hw/common/machine_shape.h base/parameters.h base/input_file.h hw/ipu/chip_config.h
    iss/tile_config.h hw/exchange/exchange_config.h hw/sync/sync_config.h
    hw/pcie/pcie_config.h hw/ipulink/ipulink_config.h hw/gateway/gateway_config.h
    hw/energy/energy_config.h hw/energy/energy.h iss/insn_class.h
    tlm/rtl_selection.h report/output_options.h)
foreach(header IN LISTS IPU_PUBLIC_HEADERS)
  get_filename_component(dir ${header} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/${header}
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/virtual-ipu/${dir})
endforeach()

install(DIRECTORY ${IPU_SDK_DATA}/ DESTINATION ${CMAKE_INSTALL_DATADIR}/virtual-ipu)

set(config_dir ${CMAKE_INSTALL_LIBDIR}/cmake/VirtualIPU)
install(EXPORT VirtualIPUTargets NAMESPACE VirtualIPU:: DESTINATION ${config_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/VirtualIPUConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/VirtualIPUConfig.cmake
                              INSTALL_DESTINATION ${config_dir}
                              PATH_VARS CMAKE_INSTALL_DATADIR CMAKE_INSTALL_BINDIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/VirtualIPUConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/VirtualIPUConfig.cmake
              ${CMAKE_BINARY_DIR}/VirtualIPUConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/TileFirmware.cmake
        DESTINATION ${config_dir})

# cmake --install BUILD --prefix P lays out:
#   P/bin/lrrt                          the tool (self-contained: static runtime and libstdc++)
#   P/lib/liblrrt.so.0.1.0 (+ links)    the runtime, C ABI only (SONAME liblrrt.so.0.1)
#   P/lib/liblrrt_bundle.a              manifests, kernel arguments, launch configuration
#   P/include/lrrt/                     lrrt.h (+ c/), lrrt.hpp (+ cpp/), host_kernel_abi.h, bundle.hpp, bundle/
#   P/lib/cmake/lrrt/                   find_package(lrrt): lrrt::lrrt, lrrt::bundle
#   P/lib/pkgconfig/lrrt.pc, lrrt-bundle.pc
#   P/share/lrrt/kernels/               the sample kernels this build made (host, AMD, NVIDIA)
#   P/share/lrrt/manifests/             the sample manifests (@kernels/ finds share/lrrt/kernels)
# Every installed file names other installed files by relative paths: the
# prefix can be moved (tests/package checks).
include(CMakePackageConfigHelpers)

set(LRRT_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/lrrt)
set(LRRT_INSTALL_DATADIR ${CMAKE_INSTALL_DATADIR}/lrrt)

# `from` relative to `to` inside any prefix (both relative to the prefix).
function(lrrt_relative_path out from to)
  file(RELATIVE_PATH rel "/prefix/${from}" "/prefix/${to}")
  string(REGEX REPLACE "/$" "" rel "${rel}")
  if(rel STREQUAL "")
    set(rel ".")
  endif()
  set(${out} "${rel}" PARENT_SCOPE)
endfunction()

# An installed lrrt finds the installed kernels: <exe dir>/<this>, after
# <exe dir>/kernels (the build tree's layout).
lrrt_relative_path(LRRT_KERNEL_DIR_FROM_BIN ${CMAKE_INSTALL_BINDIR} ${LRRT_INSTALL_DATADIR}/kernels)
# (A source property set here would not reach src/cli's target: source
# properties are per directory unless DIRECTORY names the target's.)
set_property(SOURCE ${PROJECT_SOURCE_DIR}/src/cli/common.cpp DIRECTORY ${PROJECT_SOURCE_DIR}/src/cli
  APPEND PROPERTY COMPILE_DEFINITIONS LRRT_INSTALLED_KERNEL_DIR="${LRRT_KERNEL_DIR_FROM_BIN}")

install(TARGETS lrrt_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS lrrt EXPORT lrrtTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS lrrt_bundle EXPORT lrrtBundleTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})

# Public headers, the parts of lrrt.h and lrrt.hpp (c/, cpp/) with them. Not
# installed: native_baseline.hpp (bench-only, not in liblrrt.so) and the
# formats headers (lrrt_formats is inside liblrrt.so behind the C ABI, not a
# library of its own).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/lrrt DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  PATTERN native_baseline.hpp EXCLUDE
  PATTERN formats.hpp EXCLUDE
  PATTERN formats EXCLUDE)

# The CMake package: one export set per target, so lrrt::lrrt does not need
# lrrt::bundle's dependency (nlohmann_json).
install(EXPORT lrrtTargets NAMESPACE lrrt:: DESTINATION ${LRRT_INSTALL_CMAKEDIR})
install(EXPORT lrrtBundleTargets NAMESPACE lrrt:: DESTINATION ${LRRT_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/lrrtConfig.cmake.in
  ${PROJECT_BINARY_DIR}/lrrtConfig.cmake
  INSTALL_DESTINATION ${LRRT_INSTALL_CMAKEDIR}
  PATH_VARS LRRT_INSTALL_DATADIR)
# 0.x: a new minor version may break the ABI (see the SONAME).
write_basic_package_version_file(${PROJECT_BINARY_DIR}/lrrtConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/lrrtConfig.cmake ${PROJECT_BINARY_DIR}/lrrtConfigVersion.cmake
  DESTINATION ${LRRT_INSTALL_CMAKEDIR})

# pkg-config: paths relative to the .pc file's folder (${pcfiledir}).
set(LRRT_PC_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
lrrt_relative_path(LRRT_PC_PREFIX ${LRRT_PC_DIR} "")
foreach(pc lrrt lrrt-bundle)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/${pc}.pc.in ${PROJECT_BINARY_DIR}/${pc}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/${pc}.pc DESTINATION ${LRRT_PC_DIR})
endforeach()

# Sample kernels (whatever this build made) and manifests, and the schema the
# manifests' "$schema" points at (../docs/manifest.schema.json).
install(DIRECTORY ${LRRT_KERNEL_OUTPUT_DIR}/ DESTINATION ${LRRT_INSTALL_DATADIR}/kernels
  FILES_MATCHING PATTERN "*.so" PATTERN "*.hsaco" PATTERN "*.cubin" PATTERN "*.fatbin" PATTERN "*.ptx"
  PATTERN CMakeFiles EXCLUDE)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/manifests/ DESTINATION ${LRRT_INSTALL_DATADIR}/manifests)
install(FILES ${PROJECT_SOURCE_DIR}/docs/manifest.schema.json DESTINATION ${LRRT_INSTALL_DATADIR}/docs)

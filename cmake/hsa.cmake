# hsa backend detection and AMD kernel builds (owned by the hsa backend work).
#
# The backend needs only headers at build time (Debian's libhsa-runtime-dev,
# /usr/include/hsa): libhsa-runtime64 is dlopen'd at run time. The AMDGPU
# code-object reader is in lrrt_formats (src/formats/amdgpu.cpp): it needs
# only msgpack-c (LRRT_MSGPACK_INCLUDE_DIR, found here), so `lrrt inspect`
# reads HSACOs even when the backend itself is skipped.
set(LRRT_HAVE_HSA OFF)

find_path(LRRT_MSGPACK_INCLUDE_DIR msgpack.hpp)
find_path(LRRT_HSA_INCLUDE_DIR hsa/hsa.h PATHS /opt/rocm/include)

set(_lrrt_hsa_skip "")
if(LRRT_ENABLE_HSA STREQUAL "OFF")
  set(_lrrt_hsa_skip "LRRT_ENABLE_HSA=OFF")
elseif(NOT LRRT_MSGPACK_INCLUDE_DIR)
  set(_lrrt_hsa_skip "msgpack.hpp not found (apt install libmsgpack-dev)")
elseif(NOT LRRT_HSA_INCLUDE_DIR)
  set(_lrrt_hsa_skip "hsa/hsa.h not found (apt install libhsa-runtime-dev)")
endif()

if(_lrrt_hsa_skip STREQUAL "")
  set(LRRT_HAVE_HSA ON)
  string(APPEND LRRT_BACKEND_SUMMARY " hsa")
  message(STATUS "lrrt: hsa backend enabled (headers in ${LRRT_HSA_INCLUDE_DIR}; libhsa-runtime64 is loaded at run time)")
else()
  if(LRRT_ENABLE_HSA STREQUAL "ON")
    message(FATAL_ERROR "lrrt: LRRT_ENABLE_HSA=ON but ${_lrrt_hsa_skip}")
  endif()
  message(STATUS "lrrt: hsa backend skipped: ${_lrrt_hsa_skip}")
endif()

# ---------------------------------------------------------------- AMD kernels
find_program(LRRT_CLANG19 NAMES clang-19 PATHS /usr/lib/llvm-19/bin)
find_program(LRRT_LLVM_READELF19 NAMES llvm-readelf-19 PATHS /usr/lib/llvm-19/bin)
# clang runs clang-offload-bundler from its own bin folder to write offload
# bundles (Debian's clang-tools-19, not clang-19): look exactly there, so the
# build never depends on a bundler that happens to be elsewhere on PATH.
if(LRRT_CLANG19)
  get_filename_component(_lrrt_clang_real ${LRRT_CLANG19} REALPATH)
  get_filename_component(_lrrt_clang_bin ${_lrrt_clang_real} DIRECTORY)
  find_program(LRRT_CLANG_OFFLOAD_BUNDLER NAMES clang-offload-bundler
               PATHS ${_lrrt_clang_bin} NO_DEFAULT_PATH)
endif()
set(LRRT_HSA_KERNEL_ARCHS gfx90a gfx942 gfx1030 gfx1100 gfx1201
    CACHE STRING "AMD targets each kernel source is compiled for")
set(LRRT_HSA_BUNDLE_TARGETS "gfx90a:xnack+;gfx90a:xnack-;gfx1100"
    CACHE STRING "targets of the <src>.bundle.hsaco offload bundles")
set(LRRT_HAVE_HSA_KERNELS OFF)
set(LRRT_HAVE_HSA_BUNDLES OFF)

if(LRRT_CLANG19)
  set(LRRT_HAVE_HSA_KERNELS ON)
  if(LRRT_CLANG_OFFLOAD_BUNDLER)
    set(LRRT_HAVE_HSA_BUNDLES ON)
    set(_lrrt_bundle_note " + bundle (${LRRT_CLANG_OFFLOAD_BUNDLER})")
  else()
    set(_lrrt_bundle_note "; offload bundles skipped: no clang-offload-bundler next to ${_lrrt_clang_real} (apt install clang-tools-19)")
  endif()
  # lrrt_add_hsa_kernels(sources): for each kernels/<src>.cpp writes
  #   <src>.<gfx>.hsaco     one per LRRT_HSA_KERNEL_ARCHS (code object v5)
  #   <src>.bundle.hsaco    clang offload bundle of LRRT_HSA_BUNDLE_TARGETS
  #                         (only with clang-offload-bundler: LRRT_HAVE_HSA_BUNDLES)
  #   <src>.gfx1100.v4.hsaco / .v6.hsaco   other code-object versions (tests)
  set(LRRT_HSA_KERNEL_FLAGS -x hip --cuda-device-only -nogpuinc -nogpulib -O2
      -I${PROJECT_SOURCE_DIR}/kernels -I${PROJECT_SOURCE_DIR}/include)
  function(lrrt_add_hsa_kernels sources)
    set(outputs)
    set(common ${LRRT_HSA_KERNEL_FLAGS})
    foreach(src ${sources})
      set(in ${PROJECT_SOURCE_DIR}/kernels/${src}.cpp)
      set(deps ${in} ${PROJECT_SOURCE_DIR}/kernels/lrrt_kernel.h)
      foreach(arch ${LRRT_HSA_KERNEL_ARCHS})
        set(out ${LRRT_KERNEL_OUTPUT_DIR}/${src}.${arch}.hsaco)
        add_custom_command(OUTPUT ${out}
          COMMAND ${LRRT_CLANG19} ${common} --offload-arch=${arch} --no-gpu-bundle-output ${in} -o ${out}
          DEPENDS ${deps} COMMENT "hsaco ${src}.${arch}" VERBATIM)
        list(APPEND outputs ${out})
      endforeach()
      foreach(v 4 6)
        set(out ${LRRT_KERNEL_OUTPUT_DIR}/${src}.gfx1100.v${v}.hsaco)
        add_custom_command(OUTPUT ${out}
          COMMAND ${LRRT_CLANG19} ${common} --offload-arch=gfx1100 -mcode-object-version=${v}
                  -w --no-gpu-bundle-output ${in} -o ${out}
          DEPENDS ${deps} COMMENT "hsaco ${src}.gfx1100 code object v${v}" VERBATIM)
        list(APPEND outputs ${out})
      endforeach()
      if(LRRT_HAVE_HSA_BUNDLES)
        set(arch_flags)
        foreach(t ${LRRT_HSA_BUNDLE_TARGETS})
          list(APPEND arch_flags --offload-arch=${t})
        endforeach()
        set(out ${LRRT_KERNEL_OUTPUT_DIR}/${src}.bundle.hsaco)
        add_custom_command(OUTPUT ${out}
          COMMAND ${LRRT_CLANG19} ${common} ${arch_flags} ${in} -o ${out}
          DEPENDS ${deps} ${LRRT_CLANG_OFFLOAD_BUNDLER} COMMENT "offload bundle ${src}" VERBATIM)
        list(APPEND outputs ${out})
      endif()
    endforeach()
    add_custom_target(kernels_hsa ALL DEPENDS ${outputs})
  endfunction()
  # lrrt_hsa_build(<out-var> <source> <output-dir> <name> <arch>): the rule for
  # <output-dir>/<name>.<arch>.hsaco (code object v5) from any source, e.g.
  # test-only kernels; appends the output to <out-var>.
  function(lrrt_hsa_build out_var source output_dir name arch)
    set(out ${output_dir}/${name}.${arch}.hsaco)
    add_custom_command(OUTPUT ${out}
      COMMAND ${LRRT_CLANG19} ${LRRT_HSA_KERNEL_FLAGS} --offload-arch=${arch} --no-gpu-bundle-output ${source} -o ${out}
      DEPENDS ${source} ${PROJECT_SOURCE_DIR}/kernels/lrrt_kernel.h COMMENT "hsaco ${name}.${arch}" VERBATIM)
    set(${out_var} ${${out_var}} ${out} PARENT_SCOPE)
  endfunction()
  message(STATUS "lrrt: AMD kernels: ${LRRT_HSA_KERNEL_ARCHS} (${LRRT_CLANG19})${_lrrt_bundle_note}")
else()
  message(STATUS "lrrt: AMD kernels skipped: clang-19 not found (apt install clang-19 lld-19)")
endif()

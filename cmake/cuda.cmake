# cuda backend detection and NVIDIA kernel builds (owned by the cuda backend
# work).
#
# The backend needs only the toolkit's headers (cuda.h) at build time:
# libcuda.so.1 is dlopen'd at run time through a symbol table
# (src/runtime/cuda/cuda_symbols.*). Three cases:
#  - cuda.h absent (CI on Debian): the backend is skipped, one message.
#  - cuda.h present, nvcc absent: the backend builds, the kernel builds skip.
#  - both present: the backend builds and every kernels/ source is built for
#    sm_90 (cubin), compute_90 (PTX) and as a fatbin holding both.
#
# The cubin/fatbin/PTX reader is in lrrt_formats (src/formats/nvidia.cpp),
# built everywhere, so `lrrt inspect` reads cubins even where the backend is
# skipped.
set(LRRT_HAVE_CUDA OFF)
set(LRRT_CUDA_ARCH "90" CACHE STRING "SM version the NVIDIA kernels are built for (90 = sm_90)")

find_path(LRRT_CUDA_INCLUDE_DIR cuda.h
  HINTS ENV CUDA_PATH ENV CUDA_HOME
  PATHS /usr/local/cuda/include /usr/local/cuda/targets/x86_64-linux/include /opt/cuda/include
  PATH_SUFFIXES include)
find_program(LRRT_NVCC nvcc
  HINTS ENV CUDA_PATH ENV CUDA_HOME
  PATHS /usr/local/cuda/bin /opt/cuda/bin
  PATH_SUFFIXES bin)

set(_lrrt_cuda_skip "")
if(LRRT_ENABLE_CUDA STREQUAL "OFF")
  set(_lrrt_cuda_skip "LRRT_ENABLE_CUDA=OFF")
elseif(NOT LRRT_CUDA_INCLUDE_DIR)
  set(_lrrt_cuda_skip "cuda.h not found (install the CUDA toolkit headers or set CUDA_PATH)")
endif()

if(_lrrt_cuda_skip STREQUAL "")
  set(LRRT_HAVE_CUDA ON)
  string(APPEND LRRT_BACKEND_SUMMARY " cuda")
  if(LRRT_NVCC)
    message(STATUS "lrrt: cuda backend enabled (cuda.h in ${LRRT_CUDA_INCLUDE_DIR}; libcuda.so.1 is loaded at run time; kernels by ${LRRT_NVCC})")
  else()
    message(STATUS "lrrt: cuda backend enabled (cuda.h in ${LRRT_CUDA_INCLUDE_DIR}; libcuda.so.1 is loaded at run time); NVIDIA kernel builds skipped: nvcc not found")
  endif()
else()
  if(LRRT_ENABLE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "lrrt: LRRT_ENABLE_CUDA=ON but ${_lrrt_cuda_skip}")
  endif()
  message(STATUS "lrrt: cuda backend skipped: ${_lrrt_cuda_skip}")
endif()

# ---------------------------------------------------------------- NVIDIA kernels
# lrrt_nvcc_build(<out-var> <source> <output-dir> <name>): rules for
# <name>.sm_XX.cubin, <name>.ptx and <name>.fatbin (uncompressed, so that
# `lrrt inspect` can read the cubin inside). Appends the outputs to <out-var>.
function(lrrt_nvcc_build out_var source output_dir name)
  set(arch ${LRRT_CUDA_ARCH})
  set(common -x cu -O3 -I${PROJECT_SOURCE_DIR}/kernels -I${PROJECT_SOURCE_DIR}/include)
  set(cubin ${output_dir}/${name}.sm_${arch}.cubin)
  set(ptx ${output_dir}/${name}.ptx)
  set(fatbin ${output_dir}/${name}.fatbin)
  set(deps ${source} ${PROJECT_SOURCE_DIR}/kernels/lrrt_kernel.h)
  add_custom_command(OUTPUT ${cubin}
    COMMAND ${LRRT_NVCC} -cubin -arch=sm_${arch} ${common} -o ${cubin} ${source}
    DEPENDS ${deps} COMMENT "nvcc ${name}.sm_${arch}.cubin" VERBATIM)
  add_custom_command(OUTPUT ${ptx}
    COMMAND ${LRRT_NVCC} -ptx -arch=compute_${arch} ${common} -o ${ptx} ${source}
    DEPENDS ${deps} COMMENT "nvcc ${name}.ptx" VERBATIM)
  add_custom_command(OUTPUT ${fatbin}
    COMMAND ${LRRT_NVCC} -fatbin -no-compress
      "-gencode=arch=compute_${arch},code=[sm_${arch},compute_${arch}]" ${common} -o ${fatbin} ${source}
    DEPENDS ${deps} COMMENT "nvcc ${name}.fatbin" VERBATIM)
  set(${out_var} ${${out_var}} ${cubin} ${ptx} ${fatbin} PARENT_SCOPE)
endfunction()

if(LRRT_HAVE_CUDA AND LRRT_NVCC)
  # Called by kernels/CMakeLists.txt with the list of kernel source names.
  function(lrrt_add_cuda_kernels sources)
    set(outputs)
    foreach(kernel ${sources})
      lrrt_nvcc_build(outputs ${PROJECT_SOURCE_DIR}/kernels/${kernel}.cpp ${LRRT_KERNEL_OUTPUT_DIR} ${kernel})
    endforeach()
    add_custom_target(kernels_cuda ALL DEPENDS ${outputs})
  endfunction()
endif()

# Host binaries carrying GPU code, the way users have kernels (issue 12 /
# docs/code-objects.md): built here by the real toolchains, into
# ${LRRT_BINARY_FIXTURE_DIR}. Every rule is optional: where a toolchain is
# missing its fixtures are not built and the tests that need them say so.
#
# AMD (clang-19, clang-offload-bundler):
#   scale.hip.so / scale.hip.ccob.so   clang -x hip -fPIC -shared of
#                                      tests/binaries/scale.hip, plain and
#                                      --offload-compress (CCOB, zstd)
#   vector_add.bundle.ccob.hsaco       vector_add's bundle, --offload-compress
#   vector_add.hipfatbin.so /          host libraries whose .hip_fatbin holds
#   vector_add.hipfatbin.ccob.so       the two bundles above (the stand-in
#                                      runs their kernels)
#   two_bundles.hipfatbin.so           two bundles (vector_add, saxpy) in one
#                                      .hip_fatbin, as two translation units
#   same_kernels.hipfatbin.so          two bundles defining the same kernels
#                                      (a template instantiated in two
#                                      translation units: the same symbols)
# NVIDIA (nvcc):
#   vector_add.cuda.so                 nvcc -shared: .nv_fatbin, sm_XX + PTX
#   vector_add.cuda.zstd.so            ... -Xfatbin -compress-all (zstd)
#   vector_add.cuda.lz4.so             ... --compress-mode=speed (LZ4)
#   vector_add.ptx80.fatbin            compute_80 PTX and sm_80 SASS only
#   vector_add.sm_XXa.cubin            the arch-specific target
#   vector_add.sm_100f.cubin           a family-specific target
set(LRRT_BINARY_FIXTURE_DIR ${CMAKE_BINARY_DIR}/tests/binaries)
file(MAKE_DIRECTORY ${LRRT_BINARY_FIXTURE_DIR})
set(_fixtures)
set(_dir ${LRRT_BINARY_FIXTURE_DIR})
set(_src ${PROJECT_SOURCE_DIR}/tests/binaries)

if(LRRT_CLANG19 AND LRRT_HAVE_HSA_BUNDLES)
  set(_hip -x hip -nogpuinc -nogpulib -O2 --offload-arch=gfx90a --offload-arch=gfx1100)
  foreach(variant plain ccob)
    set(flag)
    set(suffix)
    if(variant STREQUAL "ccob")
      set(flag --offload-compress)
      set(suffix .ccob)
    endif()
    add_custom_command(OUTPUT ${_dir}/scale.hip${suffix}.so
      COMMAND ${LRRT_CLANG19} ${_hip} ${flag} -fPIC -c ${_src}/scale.hip -o ${_dir}/scale.hip${suffix}.o
      COMMAND ${LRRT_CLANG19} -shared -fPIC ${_dir}/scale.hip${suffix}.o -o ${_dir}/scale.hip${suffix}.so
      DEPENDS ${_src}/scale.hip ${LRRT_CLANG_OFFLOAD_BUNDLER} COMMENT "host binary scale.hip${suffix}.so" VERBATIM)
    list(APPEND _fixtures ${_dir}/scale.hip${suffix}.so)
  endforeach()
  set(bundle_flags)
  foreach(t ${LRRT_HSA_BUNDLE_TARGETS})
    list(APPEND bundle_flags --offload-arch=${t})
  endforeach()
  add_custom_command(OUTPUT ${_dir}/vector_add.bundle.ccob.hsaco
    COMMAND ${LRRT_CLANG19} ${LRRT_HSA_KERNEL_FLAGS} ${bundle_flags} --offload-compress
            ${PROJECT_SOURCE_DIR}/kernels/vector_add.cpp -o ${_dir}/vector_add.bundle.ccob.hsaco
    DEPENDS ${PROJECT_SOURCE_DIR}/kernels/vector_add.cpp ${PROJECT_SOURCE_DIR}/kernels/lrrt_kernel.h
    COMMENT "compressed offload bundle vector_add" VERBATIM)
  list(APPEND _fixtures ${_dir}/vector_add.bundle.ccob.hsaco)
  foreach(pair "plain;${LRRT_KERNEL_OUTPUT_DIR}/vector_add.bundle.hsaco" "ccob;${_dir}/vector_add.bundle.ccob.hsaco")
    list(GET pair 0 variant)
    list(GET pair 1 bundle)
    set(out ${_dir}/vector_add.hipfatbin.so)
    if(variant STREQUAL "ccob")
      set(out ${_dir}/vector_add.hipfatbin.ccob.so)
    endif()
    add_custom_command(OUTPUT ${out}
      COMMAND ${CMAKE_C_COMPILER} -shared -fPIC -DLRRT_BUNDLE=${bundle} ${_src}/embed_hip_fatbin.c -o ${out}
      DEPENDS ${_src}/embed_hip_fatbin.c ${bundle} COMMENT "host binary with .hip_fatbin (${variant})" VERBATIM)
    list(APPEND _fixtures ${out})
  endforeach()
  # Two translation units, two bundles in one .hip_fatbin (hipcc without
  # -fgpu-rdc): vector_add's and saxpy's kernels, each in its own bundle.
  set(out ${_dir}/two_bundles.hipfatbin.so)
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_C_COMPILER} -fPIC -c -DLRRT_BUNDLE=${LRRT_KERNEL_OUTPUT_DIR}/vector_add.bundle.hsaco
            ${_src}/embed_hip_fatbin.c -o ${_dir}/two_bundles.a.o
    COMMAND ${CMAKE_C_COMPILER} -fPIC -c -DLRRT_EMBED_ONLY -DLRRT_BUNDLE=${_dir}/vector_add.bundle.ccob.hsaco
            ${_src}/embed_hip_fatbin.c -o ${_dir}/two_bundles.b.o
    COMMAND ${CMAKE_C_COMPILER} -fPIC -c -DLRRT_EMBED_ONLY -DLRRT_BUNDLE=${LRRT_KERNEL_OUTPUT_DIR}/saxpy.bundle.hsaco
            ${_src}/embed_hip_fatbin.c -o ${_dir}/two_bundles.c.o
    COMMAND ${CMAKE_C_COMPILER} -shared ${_dir}/two_bundles.a.o ${_dir}/two_bundles.c.o -o ${out}
    DEPENDS ${_src}/embed_hip_fatbin.c ${_dir}/vector_add.bundle.ccob.hsaco
    COMMENT "host binary with two bundles in .hip_fatbin" VERBATIM)
  list(APPEND _fixtures ${out})
  # Two translation units whose bundles define the same kernel symbols.
  set(out ${_dir}/same_kernels.hipfatbin.so)
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_C_COMPILER} -fPIC -c -DLRRT_EMBED_ONLY -DLRRT_BUNDLE=${LRRT_KERNEL_OUTPUT_DIR}/vector_add.bundle.hsaco
            ${_src}/embed_hip_fatbin.c -o ${_dir}/same_kernels.b.o
    COMMAND ${CMAKE_C_COMPILER} -shared ${_dir}/two_bundles.a.o ${_dir}/same_kernels.b.o -o ${out}
    DEPENDS ${_dir}/two_bundles.hipfatbin.so
    COMMENT "host binary with two bundles of the same kernels in .hip_fatbin" VERBATIM)
  list(APPEND _fixtures ${out})
endif()

if(LRRT_HAVE_CUDA AND LRRT_NVCC)
  set(arch ${LRRT_CUDA_ARCH})
  set(_cu -x cu -O3 -I${PROJECT_SOURCE_DIR}/kernels -I${PROJECT_SOURCE_DIR}/include -shared -Xcompiler -fPIC
      "-gencode=arch=compute_${arch},code=[sm_${arch},compute_${arch}]")
  set(_va ${PROJECT_SOURCE_DIR}/kernels/vector_add.cpp)
  set(_va_deps ${_va} ${PROJECT_SOURCE_DIR}/kernels/lrrt_kernel.h)
  foreach(spec "cuda;--compress-mode=none" "cuda.zstd;-Xfatbin;-compress-all"
               "cuda.lz4;-Xfatbin;-compress-all;--compress-mode=speed")
    list(POP_FRONT spec name)
    add_custom_command(OUTPUT ${_dir}/vector_add.${name}.so
      COMMAND ${LRRT_NVCC} ${_cu} ${spec} -o ${_dir}/vector_add.${name}.so ${_va}
      DEPENDS ${_va_deps} COMMENT "nvcc vector_add.${name}.so" VERBATIM)
    list(APPEND _fixtures ${_dir}/vector_add.${name}.so)
  endforeach()
  add_custom_command(OUTPUT ${_dir}/vector_add.ptx80.fatbin
    COMMAND ${LRRT_NVCC} -fatbin -x cu -O3 -I${PROJECT_SOURCE_DIR}/kernels -I${PROJECT_SOURCE_DIR}/include
            "-gencode=arch=compute_80,code=[sm_80,compute_80]" -o ${_dir}/vector_add.ptx80.fatbin ${_va}
    DEPENDS ${_va_deps} COMMENT "nvcc vector_add.ptx80.fatbin" VERBATIM)
  add_custom_command(OUTPUT ${_dir}/vector_add.sm_${arch}a.cubin
    COMMAND ${LRRT_NVCC} -cubin -x cu -O3 -I${PROJECT_SOURCE_DIR}/kernels -I${PROJECT_SOURCE_DIR}/include
            -arch=sm_${arch}a -o ${_dir}/vector_add.sm_${arch}a.cubin ${_va}
    DEPENDS ${_va_deps} COMMENT "nvcc vector_add.sm_${arch}a.cubin" VERBATIM)
  # A family-specific target (CUDA 12.9+): sm_100f runs on sm_100 and sm_103.
  add_custom_command(OUTPUT ${_dir}/vector_add.sm_100f.cubin
    COMMAND ${LRRT_NVCC} -cubin -x cu -O3 -I${PROJECT_SOURCE_DIR}/kernels -I${PROJECT_SOURCE_DIR}/include
            -arch=sm_100f -o ${_dir}/vector_add.sm_100f.cubin ${_va}
    DEPENDS ${_va_deps} COMMENT "nvcc vector_add.sm_100f.cubin" VERBATIM)
  list(APPEND _fixtures ${_dir}/vector_add.ptx80.fatbin ${_dir}/vector_add.sm_${arch}a.cubin ${_dir}/vector_add.sm_100f.cubin)
endif()

add_custom_target(binary_fixtures ALL DEPENDS ${_fixtures})
if(TARGET kernels_hsa)
  add_dependencies(binary_fixtures kernels_hsa)  # vector_add.bundle.hsaco
endif()

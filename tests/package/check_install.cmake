# ctest package_consumer: lrrt as another project sees it.
#   1. cmake --install the build into STAGE, then move STAGE elsewhere (the
#      installed files must not name the build, the source or the prefix
#      they were installed to);
#   2. the installed lrrt runs a sample manifest with its installed kernels;
#   3. tests/package (this folder) is configured by a fresh cmake with only
#      CMAKE_PREFIX_PATH, built, and its tests run (C, C++ and lrrt::bundle);
#   4. the C and the bundle program are built again with pkg-config alone.
# cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DGENERATOR=...
#       -DLIBDIR=lib -DPKG_CONFIG=... -DCC=... -DCXX=... [-DSANITIZE_FLAGS=-fsanitize=...]
#       -P check_install.cmake
# SANITIZE_FLAGS: the sanitizer build's -fsanitize, for every consumer program
# (an instrumented liblrrt.so needs the sanitizer runtime in the program).
foreach(v BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR LIBDIR CC CXX)
  if(NOT DEFINED ${v} OR "${${v}}" STREQUAL "")
    message(FATAL_ERROR "check_install.cmake: -D${v}= is required")
  endif()
endforeach()
if(NOT PKG_CONFIG)
  message(FATAL_ERROR "pkg-config not found (scripts/setup installs it)")
endif()

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${what}: ok")
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(stage ${WORK_DIR}/stage)
set(prefix ${WORK_DIR}/moved/prefix)

# 1. Install, move, and look for paths that would break the move.
run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${stage})
file(MAKE_DIRECTORY ${WORK_DIR}/moved)
file(RENAME ${stage} ${prefix})
foreach(f bin/lrrt include/lrrt/lrrt.h include/lrrt/lrrt.hpp include/lrrt/bundle.hpp include/lrrt/bundle/manifest.hpp
          ${LIBDIR}/liblrrt_bundle.a ${LIBDIR}/cmake/lrrt/lrrtConfig.cmake ${LIBDIR}/cmake/lrrt/lrrtConfigVersion.cmake
          ${LIBDIR}/pkgconfig/lrrt.pc ${LIBDIR}/pkgconfig/lrrt-bundle.pc share/lrrt/kernels/saxpy.host.so
          share/lrrt/manifests/saxpy.json share/lrrt/docs/manifest.schema.json)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()
# lrrt.h and lrrt.hpp are umbrellas over one header per concept: every part
# is installed beside them.
file(GLOB abi_parts RELATIVE ${SOURCE_DIR} ${SOURCE_DIR}/include/lrrt/c/*.h ${SOURCE_DIR}/include/lrrt/cpp/*.hpp)
if(NOT abi_parts)
  message(FATAL_ERROR "no include/lrrt/c/*.h or include/lrrt/cpp/*.hpp in ${SOURCE_DIR}")
endif()
foreach(f ${abi_parts})
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()
foreach(f include/lrrt/native_baseline.hpp include/lrrt/formats.hpp include/lrrt/formats)
  if(EXISTS ${prefix}/${f})
    message(FATAL_ERROR "installed but not public: ${f}")
  endif()
endforeach()
file(GLOB so_files ${prefix}/${LIBDIR}/liblrrt.so*)
list(LENGTH so_files n)
if(NOT n EQUAL 3)
  message(FATAL_ERROR "expected liblrrt.so, its SONAME link and the versioned file, found: ${so_files}")
endif()
file(GLOB_RECURSE text_files ${prefix}/${LIBDIR}/cmake/*.cmake ${prefix}/${LIBDIR}/pkgconfig/*.pc)
foreach(f ${text_files})
  file(READ ${f} text)
  foreach(p ${BUILD_DIR} ${SOURCE_DIR} ${stage})
    string(FIND "${text}" "${p}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "${f} names ${p}: the installed package is not relocatable")
    endif()
  endforeach()
endforeach()

# 2. The installed binary finds the installed kernels by itself.
run("installed lrrt run" ${CMAKE_COMMAND} -E env --unset=LRRT_KERNEL_DIR
    ${prefix}/bin/lrrt run --backend host --iterations 1 --warmup 0 -q --format json
    ${prefix}/share/lrrt/manifests/vector_add_i32.json)
string(JSON status GET "${last_output}" runs 0 verification status)
if(NOT status STREQUAL "passed")
  message(FATAL_ERROR "installed lrrt run: verification ${status}")
endif()

# 3. A fresh cmake: only CMAKE_PREFIX_PATH (and the compilers of this build).
# A C program links only the C part of UBSan's runtime; liblrrt.so's C++
# checks (vptr) need the C++ part, which needs libstdc++.
set(consumer_flags)
set(c_sanitize_flags)
if(SANITIZE_FLAGS)
  set(c_sanitize_flags ${SANITIZE_FLAGS} -fsanitize-link-c++-runtime -lstdc++)
  set(consumer_flags "-DCMAKE_C_FLAGS=${SANITIZE_FLAGS}" "-DCMAKE_CXX_FLAGS=${SANITIZE_FLAGS}"
      "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize-link-c++-runtime -lstdc++")
endif()
run("configure the consumer" ${CMAKE_COMMAND} -S ${CMAKE_CURRENT_LIST_DIR} -B ${WORK_DIR}/consumer -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_C_COMPILER=${CC} -DCMAKE_CXX_COMPILER=${CXX} ${consumer_flags})
run("build the consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/consumer)
run("the consumer's tests" ${CMAKE_CTEST_COMMAND} --test-dir ${WORK_DIR}/consumer --output-on-failure)
message("${last_output}")

# 4. pkg-config: the C program against lrrt.pc, the bundle program against
#    lrrt-bundle.pc; liblrrt.so found through LD_LIBRARY_PATH.
set(pc_env PKG_CONFIG_PATH=${prefix}/${LIBDIR}/pkgconfig)
run("pkg-config lrrt" ${CMAKE_COMMAND} -E env ${pc_env} ${PKG_CONFIG} --cflags --libs lrrt)
separate_arguments(c_flags UNIX_COMMAND "${last_output}")
run("pkg-config lrrt-bundle" ${CMAKE_COMMAND} -E env ${pc_env} ${PKG_CONFIG} --cflags --libs lrrt-bundle)
separate_arguments(bundle_flags UNIX_COMMAND "${last_output}")
run("cc with pkg-config" ${CC} ${c_sanitize_flags} ${CMAKE_CURRENT_LIST_DIR}/c_consumer.c ${c_flags}
    -o ${WORK_DIR}/c_consumer_pc)
run("c++ with pkg-config" ${CXX} ${SANITIZE_FLAGS} -std=c++20 ${CMAKE_CURRENT_LIST_DIR}/bundle_consumer.cpp
    ${bundle_flags} -o ${WORK_DIR}/bundle_consumer_pc)
set(run_env LD_LIBRARY_PATH=${prefix}/${LIBDIR})
run("c_consumer (pkg-config)" ${CMAKE_COMMAND} -E env ${run_env} ${WORK_DIR}/c_consumer_pc ${prefix}/share/lrrt/kernels)
run("bundle_consumer (pkg-config)" ${CMAKE_COMMAND} -E env ${run_env} ${WORK_DIR}/bundle_consumer_pc
    ${prefix}/share/lrrt/manifests ${prefix}/share/lrrt/kernels)

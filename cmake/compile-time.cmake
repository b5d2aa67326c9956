# Compile time (docs/testing.md, "CI's time"). CI builds the whole tree twice
# from nothing on 2 cores (gcc, then clang with the sanitizers), so what each
# translation unit re-parses and re-instantiates is paid four times a run.
#
# LRRT_PRECOMPILE_HEADERS: the header-only libraries most files include
# (nlohmann/json, fmt, doctest, CLI11) and the standard headers they pull in
# are precompiled once per target instead of parsed in every file.
# LRRT_UNITY_BUILD: the test executables and the tool library compile their
# sources in a few batches (CMake's unity build), so nlohmann::json's and
# doctest's templates are instantiated once per batch instead of once per file.
# Both only change how the same sources are compiled; turn them off to check
# that every file includes what it uses (a file that compiles only thanks to a
# precompiled header or a batch neighbour is a bug).
option(LRRT_PRECOMPILE_HEADERS "Precompile the heavy header-only libraries per target" ON)
option(LRRT_UNITY_BUILD "Compile the tests and the tool library in unity batches" ON)

set(LRRT_PCH_STANDARD
  <algorithm> <array> <atomic> <chrono> <cstdint> <cstring> <functional> <map> <memory>
  <mutex> <optional> <set> <span> <string> <string_view> <thread> <unordered_map> <utility>
  <variant> <vector>)

# lrrt_precompile(TARGET [FMT] [JSON] [DOCTEST] [CLI11] [SKIP file...]): precompile
# the standard headers, plus fmt (FMT), nlohmann/json and fmt (JSON), doctest
# (DOCTEST) and CLI11 (CLI11) for TARGET. SKIP: sources that must see a library's headers
# for the first time themselves (doctest's DOCTEST_CONFIG_IMPLEMENT file).
function(lrrt_precompile target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "FMT;JSON;DOCTEST;CLI11" "" "SKIP")
  if(NOT LRRT_PRECOMPILE_HEADERS)
    return()
  endif()
  set(headers ${LRRT_PCH_STANDARD})
  if(arg_JSON)
    list(APPEND headers <nlohmann/json.hpp> <fmt/format.h>)
  elseif(arg_FMT)
    list(APPEND headers <fmt/format.h>)
  endif()
  if(arg_DOCTEST)
    list(APPEND headers <doctest/doctest.h>)
  endif()
  if(arg_CLI11)
    list(APPEND headers <CLI/CLI.hpp>)
  endif()
  target_precompile_headers(${target} PRIVATE ${headers})
  if(arg_SKIP)
    set_source_files_properties(${arg_SKIP} TARGET_DIRECTORY ${target}
      PROPERTIES SKIP_PRECOMPILE_HEADERS ON SKIP_UNITY_BUILD_INCLUSION ON)
  endif()
endfunction()

# lrrt_unity(TARGET BATCH [SKIP file...]): compile TARGET's sources BATCH at a
# time. SKIP: sources kept out of the batches (see lrrt_precompile).
function(lrrt_unity target batch)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "" "SKIP")
  if(NOT LRRT_UNITY_BUILD)
    return()
  endif()
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${batch})
  if(arg_SKIP)
    set_source_files_properties(${arg_SKIP} TARGET_DIRECTORY ${target}
      PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
  endif()
endfunction()

# Initial cache (cmake -C) of the one clang-19 build that serves both
# scripts/sanitize (the whole suite under ASan + LSan + UBSan) and
# scripts/fuzz (the libFuzzer targets): build-sanitize by default.
#
# The fuzzers need every library they link compiled with
# -fsanitize=fuzzer-no-link (coverage counters and comparison hooks), the
# suite needs ASan + UBSan everywhere; one tree with both flags builds every
# object once instead of twice (docs/testing.md, "CI's time"). The hooks are
# inert outside a fuzzer: the ASan runtime provides them.
set(CMAKE_BUILD_TYPE RelWithDebInfo CACHE STRING "Build type")
set(CMAKE_C_COMPILER clang-19 CACHE FILEPATH "C compiler")
set(CMAKE_CXX_COMPILER clang++-19 CACHE FILEPATH "C++ compiler")
set(LRRT_SANITIZE "address;undefined" CACHE STRING "Sanitizers for every target")
set(LRRT_BUILD_FUZZERS ON CACHE BOOL "Build the libFuzzer targets in tests/fuzz")
# -O1 and line tables only: what sanitizer reports need (function, file and
# line of every frame, inlined ones too) at a fraction of the compile time of
# -O2 -g, whose full debug info for nlohmann::json-heavy files is most of
# their object size. -O1 is the level the sanitizers' documentation
# recommends. A developer debugging in gdb can set CMAKE_CXX_FLAGS_RELWITHDEBINFO.
set(CMAKE_C_FLAGS_RELWITHDEBINFO "-O1 -gline-tables-only -DNDEBUG" CACHE STRING "C flags of the sanitizer build")
set(CMAKE_CXX_FLAGS_RELWITHDEBINFO "-O1 -gline-tables-only -DNDEBUG" CACHE STRING "C++ flags of the sanitizer build")

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

# Initial cache (cmake -C) of the ThreadSanitizer build, scripts/tsan:
# build-tsan by default. clang-19, -fsanitize=thread on every target (the
# runtime, the tests, the host kernel libraries the tests dlopen, the hsa
# stand-in), -O1 with line tables only (what a report needs: function, file
# and line of every frame, at a fraction of -O2 -g's compile time). Only what
# the TSan run needs is built (scripts/tsan names the targets); nothing here
# builds the CLI, the benchmarks or the fuzzers.
#
# -O1, not -O2: clang-19 at -O2 with -fsanitize=thread miscompiles an
# exception path in the printf-record formatter (format_printf_record dies in
# _Unwind_Resume; fine at -O1 and in plain builds, issue 26). -O1 is also the
# level the sanitizers' documentation recommends.
set(CMAKE_BUILD_TYPE RelWithDebInfo CACHE STRING "Build type")
set(CMAKE_C_COMPILER clang-19 CACHE FILEPATH "C compiler")
set(CMAKE_CXX_COMPILER clang++-19 CACHE FILEPATH "C++ compiler")
set(LRRT_SANITIZE "thread" CACHE STRING "Sanitizers for every target")
set(CMAKE_C_FLAGS_RELWITHDEBINFO "-O1 -gline-tables-only -DNDEBUG" CACHE STRING "C flags of the TSan build")
set(CMAKE_CXX_FLAGS_RELWITHDEBINFO "-O1 -gline-tables-only -DNDEBUG" CACHE STRING "C++ flags of the TSan build")

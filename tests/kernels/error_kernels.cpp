// Test-only kernels for the error paths: one that never returns (a hang) and
// one that writes to an address it is given (a fault).
#include "lrrt_kernel.h"

LRRT_KERNEL(spin_forever, (const volatile uint32_t*, flag)) {
  LRRT_FOR_EACH_THREAD {
    if (LRRT_GLOBAL_ID_X == 0)
      while (*flag == 0) {
      }
  }
}

LRRT_KERNEL(write_to_address, (uint64_t, address)) {
  LRRT_FOR_EACH_THREAD {
    if (LRRT_GLOBAL_ID_X == 0) *(volatile uint32_t*)address = 1;  // 64-bit targets only
  }
}

// Host build only: a constructor with a visible side effect, so tests can
// tell whether a tool loaded this library (`lrrt inspect` must not: it reads
// the file only).
#if !defined(__CUDACC__) && !defined(__HIP__)
#include <cstdio>
#include <cstdlib>

__attribute__((constructor)) static void lrrt_test_mark_loaded() {
  if (const char* path = std::getenv("LRRT_TEST_LOAD_MARKER"))
    if (FILE* f = std::fopen(path, "w")) std::fclose(f);
}
#endif

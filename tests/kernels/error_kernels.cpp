// Test-only kernels for the error paths: one that never returns (a hang) and
// one that writes to an address it is given (a fault); and one that shows two
// dispatches running at the same time (a rendezvous).
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

// Finishes its wait only while another dispatch runs at the same time: raises
// its own flag (mine[0]), spins until the partner's flag (mine[partner], a
// word offset) is up or spin_limit polls passed, and writes 1 (met) or 2
// (gave up) to mine[1]. The partner's word is reached through an offset so
// that a graph can declare each dispatch's own words only (no edge).
LRRT_KERNEL(rendezvous, (volatile uint32_t*, mine), (int32_t, partner), (uint32_t, spin_limit)) {
  LRRT_FOR_EACH_THREAD {
    if (LRRT_GLOBAL_ID_X == 0) {
      mine[0] = 1;
      uint32_t polls = 0;
      while (mine[partner] == 0 && polls < spin_limit) ++polls;
      mine[1] = mine[partner] != 0 ? 1 : 2;
    }
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

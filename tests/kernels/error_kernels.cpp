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

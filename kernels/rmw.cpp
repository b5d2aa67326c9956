// Read-modify-write steps for chains of dependent kernels, the programmatic
// dependent launch cases of `lrrt bench replay` and the cuda PDL tests:
// counter[i] += 1, with `spin` dependent LCG steps between the read and the
// write (a window in which an overlapping step would lose an update; spin below
// 0xFFFFFFFF). After a chain of k steps every counter is its start + k.
//  - rmw_plain: no programmatic launch control;
//  - rmw_wait: waits for its producer first (correct under the flag);
//  - rmw_trigger_wait: lets its dependents start, then waits (correct: the
//    dependents wait for this grid's completion before they touch memory);
//  - rmw_no_wait: lets its dependents start and never waits: the negative
//    control, wrong under LR_KERNEL_WAITS_FOR_PRODUCER (why the flag is opt-in).
#include "lrrt_kernel.h"

// v + 1 for any spin below 0xFFFFFFFF; the test of x keeps the loop (and its
// time) in the code.
LRRT_DEVICE_FN uint32_t rmw_step(uint32_t v, uint32_t spin) {
  uint32_t x = v;
  for (uint32_t k = 0; k < spin; ++k) x = x * 1664525u + 1013904223u;
  return v + 1 + (spin == 0xFFFFFFFFu && x == 0 ? 1u : 0u);
}

LRRT_KERNEL(rmw_plain, (uint32_t*, counter), (uint32_t, n), (uint32_t, spin)) {
  LRRT_FOR_EACH_THREAD {
    uint32_t i = LRRT_GLOBAL_ID_X;
    if (i < n) counter[i] = rmw_step(counter[i], spin);
  }
}

LRRT_KERNEL(rmw_wait, (uint32_t*, counter), (uint32_t, n), (uint32_t, spin)) {
  LRRT_FOR_EACH_THREAD {
    LRRT_WAIT_FOR_PRODUCER();
    uint32_t i = LRRT_GLOBAL_ID_X;
    if (i < n) counter[i] = rmw_step(counter[i], spin);
  }
}

LRRT_KERNEL(rmw_trigger_wait, (uint32_t*, counter), (uint32_t, n), (uint32_t, spin)) {
  LRRT_FOR_EACH_THREAD {
    LRRT_LAUNCH_DEPENDENTS();
    LRRT_WAIT_FOR_PRODUCER();
    uint32_t i = LRRT_GLOBAL_ID_X;
    if (i < n) counter[i] = rmw_step(counter[i], spin);
  }
}

LRRT_KERNEL(rmw_no_wait, (uint32_t*, counter), (uint32_t, n), (uint32_t, spin)) {
  LRRT_FOR_EACH_THREAD {
    LRRT_LAUNCH_DEPENDENTS();
    uint32_t i = LRRT_GLOBAL_ID_X;
    if (i < n) counter[i] = rmw_step(counter[i], spin);
  }
}

// GPU work per element for the double-buffer sweep (lrrt bench double-buffer):
// y[i] = x[i] put through `iterations` dependent multiply-adds, so the
// kernel's time scales with the work asked for while it reads the input the
// copy brought (the loop cannot be dropped: its result is stored).
#include "lrrt_kernel.h"

LRRT_KERNEL(mix, (uint32_t, iterations), (const float*, x), (float*, y), (uint32_t, n)) {
  LRRT_FOR_EACH_THREAD {
    uint32_t i = LRRT_GLOBAL_ID_X;
    if (i < n) {
      float v = x[i];
      for (uint32_t k = 0; k < iterations; ++k) v = v * 0.999f + 0.001f;
      y[i] = v;
    }
  }
}

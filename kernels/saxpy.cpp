// y[i] = a * x[i] + y[i]
#include "lrrt_kernel.h"

LRRT_KERNEL(saxpy, (float, a), (const float*, x), (float*, y), (uint32_t, n)) {
  LRRT_FOR_EACH_THREAD {
    uint32_t i = LRRT_GLOBAL_ID_X;
    if (i < n) y[i] = a * x[i] + y[i];
  }
}

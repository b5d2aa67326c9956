// c[i] = a[i] + b[i] for float and for 32-bit integers (wrapping).
#include "lrrt_kernel.h"

LRRT_KERNEL(vector_add_f32, (const float*, a), (const float*, b), (float*, c), (uint32_t, n)) {
  LRRT_FOR_EACH_THREAD {
    uint32_t i = LRRT_GLOBAL_ID_X;
    if (i < n) c[i] = a[i] + b[i];
  }
}

LRRT_KERNEL(vector_add_i32, (const int32_t*, a), (const int32_t*, b), (int32_t*, c), (uint32_t, n)) {
  LRRT_FOR_EACH_THREAD {
    uint32_t i = LRRT_GLOBAL_ID_X;
    if (i < n) c[i] = (int32_t)((uint32_t)a[i] + (uint32_t)b[i]);
  }
}

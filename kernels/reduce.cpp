// Per-workgroup sum: partial[g] = sum of in[g*B .. g*B+B) for B = workgroup
// size (a power of two, at most 1024), by a tree in static shared memory.
#include "lrrt_kernel.h"

LRRT_KERNEL(reduce_sum_f32, (const float*, in), (float*, partial), (uint32_t, n)) {
  LRRT_SHARED float scratch[1024];
  LRRT_FOR_EACH_THREAD {
    uint32_t i = LRRT_GLOBAL_ID_X;
    scratch[LRRT_LOCAL_ID_X] = i < n ? in[i] : 0.0f;
  }
  LRRT_BARRIER;
  for (uint32_t stride = LRRT_GROUP_SIZE_X / 2; stride > 0; stride /= 2) {
    LRRT_FOR_EACH_THREAD {
      if (LRRT_LOCAL_ID_X < stride) scratch[LRRT_LOCAL_ID_X] += scratch[LRRT_LOCAL_ID_X + stride];
    }
    LRRT_BARRIER;
  }
  LRRT_FOR_EACH_THREAD {
    if (LRRT_LOCAL_ID_X == 0) partial[LRRT_GROUP_ID_X] = scratch[0];
  }
}

// Host builds of the committed Triton entries' kernels (tests/triton/entries),
// for the hsa stand-in only: it runs a dispatch of an hsaco with the host
// kernel of the same name, so `lrrt init` on a Triton gfx1100 entry followed
// by `lrrt run --backend hsa` runs end to end without an AMD GPU. The
// parameters are Triton's launch layout: the user's, then the hidden global
// and profile scratch pointers lrrt appends. Not Triton's semantics beyond
// "out = x + y for i < n" (the BLOCK_SIZE constexpr is not a parameter).
#include "lrrt_kernel.h"

LRRT_KERNEL(add_kernel, (const float*, x_ptr), (const float*, y_ptr), (float*, out_ptr), (int32_t, n),
            (void*, global_scratch), (void*, profile_scratch)) {
  LRRT_FOR_EACH_THREAD {
    const uint64_t i = LRRT_GLOBAL_ID_X;
    if (i < (uint64_t)(n < 0 ? 0 : n)) out_ptr[i] = x_ptr[i] + y_ptr[i];
  }
}

// mixed_kernel of the AMD entries: an fp16 scale (its bits) and an fp64 bias,
// the unit stride and `one` specialised away. Copies x to out (fp16 bits):
// enough to run the layout end to end.
LRRT_KERNEL(mixed_kernel, (const uint16_t*, x_ptr), (uint16_t*, out_ptr), (uint16_t, scale), (double, bias), (int32_t, n),
            (void*, global_scratch), (void*, profile_scratch)) {
  LRRT_FOR_EACH_THREAD {
    const uint64_t i = LRRT_GLOBAL_ID_X;
    if (i < (uint64_t)(n < 0 ? 0 : n)) out_ptr[i] = x_ptr[i];
  }
}

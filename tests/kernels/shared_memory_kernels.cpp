// Test-only kernel for the conformance suite's dynamic shared memory cases.
// Each workgroup fills the whole dynamic shared region it was given (`words`
// 32-bit values) from its own slice of `in`, then writes the region back
// reversed into the same slice of `out`. The result is right only when the
// region holds at least `words` values and no other workgroup shares it.
#include "lrrt_kernel.h"

LRRT_KERNEL(shared_reverse_u32, (const uint32_t*, in), (uint32_t*, out), (uint32_t, words)) {
  LRRT_DYNAMIC_SHARED(uint32_t, region);
  LRRT_FOR_EACH_THREAD {
    const uint64_t base = (uint64_t)LRRT_GROUP_ID_X * words;
    for (uint32_t i = LRRT_LOCAL_ID_X; i < words; i += LRRT_GROUP_SIZE_X) region[i] = in[base + i];
  }
  LRRT_BARRIER;
  LRRT_FOR_EACH_THREAD {
    const uint64_t base = (uint64_t)LRRT_GROUP_ID_X * words;
    for (uint32_t i = LRRT_LOCAL_ID_X; i < words; i += LRRT_GROUP_SIZE_X) out[base + i] = region[words - 1 - i];
  }
}

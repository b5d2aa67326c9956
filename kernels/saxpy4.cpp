#include "lrrt_kernel.h"

// y[i] = a * x[i] + y[i], as kernels/saxpy.cpp, four elements per work-item
// (launch ceil(n / 4) work-items: global_size {"count_of": "y", "divided_by": 4}).
// Work-item t of workgroup g takes g*4*G + t + k*G for k = 0..3 (G the
// workgroup size), so each of the four loads is coalesced across the
// workgroup and all four are in flight at once. One element per work-item
// keeps too few bytes in flight to reach a large GPU's bandwidth: the H200
// held saxpy at about 71% of its peak.
LRRT_KERNEL(saxpy4, (float, a), (const float*, x), (float*, y), (uint32_t, n)) {
  LRRT_FOR_EACH_THREAD {
    const uint64_t group = LRRT_GROUP_SIZE_X;
    const uint64_t first = static_cast<uint64_t>(LRRT_GROUP_ID_X) * group * 4 + LRRT_LOCAL_ID_X;
    float xs[4] = {}, ys[4] = {};
    for (int k = 0; k < 4; ++k) {
      const uint64_t i = first + k * group;
      if (i < n) {
        xs[k] = x[i];
        ys[k] = y[i];
      }
    }
    for (int k = 0; k < 4; ++k) {
      const uint64_t i = first + k * group;
      if (i < n) y[i] = a * xs[k] + ys[k];
    }
  }
}

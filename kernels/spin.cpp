// Runs for a fixed, measurable time: `iterations` dependent steps of a linear
// congruential generator per work-item, then out[global id] = the result (so
// the loop cannot be dropped). The replay benchmark's fan-out uses it to show
// independent dispatches overlapping. Result: x = seed + id, then
// x = x * 1664525 + 1013904223 (mod 2^32) `iterations` times.
#include "lrrt_kernel.h"

LRRT_KERNEL(spin, (uint32_t, iterations), (uint32_t, seed), (uint32_t*, out)) {
  LRRT_FOR_EACH_THREAD {
    uint32_t id = LRRT_GLOBAL_ID_X;
    uint32_t x = seed + id;
    for (uint32_t i = 0; i < iterations; ++i) x = x * 1664525u + 1013904223u;
    out[id] = x;
  }
}

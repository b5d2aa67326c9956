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

// Holds its queue until the host writes a non-zero word to flag[0], or until
// `limit` polls have passed (then flag[1] = 1): `lrrt run` enqueues a round
// of timed samples behind it and then lets go, so the samples run back to
// back as the device reaches them, not as the host submits them (nvbench's
// blocking kernel). The limit bounds a hold the host cannot release (a
// submission that blocks behind the held queue). One work-item.
LRRT_KERNEL(hold_queue, (uint32_t*, flag), (uint32_t, limit)) {
  LRRT_FOR_EACH_THREAD {
    if (LRRT_GLOBAL_ID_X == 0) {
      uint32_t polls = 0;
      while (LRRT_LOAD_ACQUIRE_U32(flag) == 0 && ++polls < limit) LRRT_POLL_PAUSE(polls);
      if (polls >= limit) LRRT_STORE_RELEASE_U32(flag + 1, 1u);
    }
  }
}

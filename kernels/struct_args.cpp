// A kernel whose argument is a struct passed by value: two buffer pointers, a
// scalar and a nested struct (manifests/struct_args.json, docs/manifest.md
// "Struct and bytes arguments"). y[i] = x[i] * inner.scale + bias for
// i < inner.n. The layout is C's: x 0, y 8, bias 16, inner 24 (scale 24,
// n 32), size 40, alignment 8.
#include "lrrt_kernel.h"

#if defined(__CUDACC__)
// A by-value struct read in place from the parameter space, not copied to
// each thread's local memory.
#define LRRT_GRID_CONSTANT __grid_constant__
#else
#define LRRT_GRID_CONSTANT
#endif

struct StructArgsInner {
  double scale;
  uint32_t n;
};

struct StructArgsParams {
  const float* x;
  float* y;
  float bias;
  StructArgsInner inner;
};

LRRT_KERNEL(struct_args, (const LRRT_GRID_CONSTANT StructArgsParams, p)) {
  LRRT_FOR_EACH_THREAD {
    uint32_t i = LRRT_GLOBAL_ID_X;
    if (i < p.inner.n) p.y[i] = static_cast<float>(p.x[i] * p.inner.scale) + p.bias;
  }
}

// Test-only kernels for derived access (docs/access.md), built for host and
// gfx1100 (clang-19) side by side in build/tests/kernels:
//  - acc_add / acc_scale: `const T* __restrict__` inputs and a
//    `T* __restrict__` output, so clang records .actual_access read_only and
//    write_only in the AMDGPU metadata; acc_add_plain: the same without
//    qualifiers (no access recorded: read-write by default).
//  - neg_*: host builds of the Triton negative controls of
//    tests/triton/access (make_access_fixtures.py), with Triton's launch
//    layout (the parameters, then the global and profile scratch pointers):
//    the hsa stand-in runs a dispatch of their gfx1100 code object with these,
//    and the graph derives their accesses from the Triton IR
//    (lr_kernel_set_triton_ir). Each writes through a pointer in a way the
//    analysis must not miss; the semantics are Triton's kernel's, one
//    element per work-item.
#include "lrrt_kernel.h"

LRRT_KERNEL(acc_add, (const float* __restrict__, a), (const float* __restrict__, b), (float* __restrict__, out),
            (uint32_t, n)) {
  LRRT_FOR_EACH_THREAD {
    const uint64_t i = LRRT_GLOBAL_ID_X;
    if (i < n) out[i] = a[i] + b[i];
  }
}

LRRT_KERNEL(acc_scale, (float, s), (const float* __restrict__, x), (float* __restrict__, y), (uint32_t, n)) {
  LRRT_FOR_EACH_THREAD {
    const uint64_t i = LRRT_GLOBAL_ID_X;
    if (i < n) y[i] = s * x[i];
  }
}

LRRT_KERNEL(acc_add_plain, (float*, a), (float*, b), (float*, out), (uint32_t, n)) {
  LRRT_FOR_EACH_THREAD {
    const uint64_t i = LRRT_GLOBAL_ID_X;
    if (i < n) out[i] = a[i] + b[i];
  }
}

// acc_copy_qual: y = x. Its gfx1100 code object with .access (read_only,
// write_only) comes from access_qual.ll; this is its host build.
LRRT_KERNEL(acc_copy_qual, (float*, x), (float*, y), (int32_t, n)) {
  LRRT_FOR_EACH_THREAD {
    const uint64_t i = LRRT_GLOBAL_ID_X;
    if (i < (uint64_t)(n < 0 ? 0 : n)) y[i] = x[i];
  }
}

#define NEG_INDEX_OK(i, n) ((i) < (uint64_t)((n) < 0 ? 0 : (n)))

// Stores out + 1 through a pointer selected between a and b (arith.select).
LRRT_KERNEL(neg_select, (float*, a_ptr), (float*, b_ptr), (float*, out_ptr), (int32_t, flag), (int32_t, n),
            (void*, global_scratch), (void*, profile_scratch)) {
  LRRT_FOR_EACH_THREAD {
    const uint64_t i = LRRT_GLOBAL_ID_X;
    float* dst = flag != 0 ? a_ptr : b_ptr;
    if (NEG_INDEX_OK(i, n)) dst[i] = out_ptr[i] + 1.0f;
  }
}

// Stores 2 * src through a pointer chosen by scf.if (block arguments merging a and b).
LRRT_KERNEL(neg_if_merge, (float*, a_ptr), (float*, b_ptr), (float*, src_ptr), (int32_t, flag), (int32_t, n),
            (void*, global_scratch), (void*, profile_scratch)) {
  LRRT_FOR_EACH_THREAD {
    const uint64_t i = LRRT_GLOBAL_ID_X;
    float* dst = flag != 0 ? a_ptr : b_ptr;
    if (NEG_INDEX_OK(i, n)) dst[i] = src_ptr[i] * 2.0f;
  }
}

// Stores out + 3 through x's address turned into an integer and back.
LRRT_KERNEL(neg_ptr_to_int, (float*, x_ptr), (float*, out_ptr), (int32_t, n), (void*, global_scratch),
            (void*, profile_scratch)) {
  LRRT_FOR_EACH_THREAD {
    const uint64_t i = LRRT_GLOBAL_ID_X;
    if (NEG_INDEX_OK(i, n)) x_ptr[i] = out_ptr[i] + 3.0f;
  }
}

// Stores src + 1 through a pointer carried around a loop of `steps` blocks of 256.
LRRT_KERNEL(neg_loop_carried, (float*, x_ptr), (float*, src_ptr), (int32_t, n), (int32_t, steps),
            (void*, global_scratch), (void*, profile_scratch)) {
  LRRT_FOR_EACH_THREAD {
    const uint64_t i = LRRT_GLOBAL_ID_X;
    if (NEG_INDEX_OK(i, n) && i < (uint64_t)(steps < 0 ? 0 : steps) * 256u) x_ptr[i] = src_ptr[i] + 1.0f;
  }
}

// Stores 1.0 through x in inline assembly (every work-item of the grid).
LRRT_KERNEL(neg_inline_asm, (float*, x_ptr), (float*, src_ptr), (int32_t, n), (void*, global_scratch),
            (void*, profile_scratch)) {
  LRRT_FOR_EACH_THREAD {
    const uint64_t i = LRRT_GLOBAL_ID_X;
    x_ptr[i] = 1.0f;
  }
}

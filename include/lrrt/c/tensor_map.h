/* lrrt C ABI: tensor maps (TMA descriptors).
 * One concept of lrrt/lrrt.h, the header to include; its opening comment
 * states the rules every function follows (status codes, errors, threads). */
#ifndef LRRT_C_TENSOR_MAP_H_
#define LRRT_C_TENSOR_MAP_H_

#include "lrrt/c/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Tensor maps (TMA descriptors; cuda, compute capability 9.0+) -------
 * A tensor map is the 128-byte opaque descriptor a Hopper kernel's TMA
 * copies read (CUtensorMap): a tiled view of a tensor in device memory. It is
 * passed to a kernel by value (a `const __grid_constant__ CUtensorMap`
 * parameter: 128 bytes at a 64-byte aligned offset). The enums' values are
 * CUDA's (CUtensorMapDataType, ...), so they mean what the CUDA driver API
 * documents. Dimension 0 is the innermost (contiguous) one. */
#define LR_TENSOR_MAP_BYTES 128
#define LR_TENSOR_MAP_ALIGN 64
#define LR_TENSOR_MAP_MAX_RANK 5

typedef enum lr_tensor_map_dtype_t {
  LR_TENSOR_MAP_U8 = 0,
  LR_TENSOR_MAP_U16 = 1,
  LR_TENSOR_MAP_U32 = 2,
  LR_TENSOR_MAP_I32 = 3,
  LR_TENSOR_MAP_U64 = 4,
  LR_TENSOR_MAP_I64 = 5,
  LR_TENSOR_MAP_F16 = 6,
  LR_TENSOR_MAP_F32 = 7,
  LR_TENSOR_MAP_F64 = 8,
  LR_TENSOR_MAP_BF16 = 9,
  LR_TENSOR_MAP_F32_FTZ = 10,
  LR_TENSOR_MAP_TF32 = 11,
  LR_TENSOR_MAP_TF32_FTZ = 12
} lr_tensor_map_dtype_t;

typedef enum lr_tensor_map_interleave_t {
  LR_TENSOR_MAP_INTERLEAVE_NONE = 0,
  LR_TENSOR_MAP_INTERLEAVE_16B = 1,
  LR_TENSOR_MAP_INTERLEAVE_32B = 2
} lr_tensor_map_interleave_t;

typedef enum lr_tensor_map_swizzle_t {
  LR_TENSOR_MAP_SWIZZLE_NONE = 0,
  LR_TENSOR_MAP_SWIZZLE_32B = 1,
  LR_TENSOR_MAP_SWIZZLE_64B = 2,
  LR_TENSOR_MAP_SWIZZLE_128B = 3
} lr_tensor_map_swizzle_t;

typedef enum lr_tensor_map_l2_promotion_t {
  LR_TENSOR_MAP_L2_PROMOTION_NONE = 0,
  LR_TENSOR_MAP_L2_PROMOTION_64B = 1,
  LR_TENSOR_MAP_L2_PROMOTION_128B = 2,
  LR_TENSOR_MAP_L2_PROMOTION_256B = 3
} lr_tensor_map_l2_promotion_t;

typedef enum lr_tensor_map_oob_fill_t {
  LR_TENSOR_MAP_OOB_FILL_ZERO = 0, /* out-of-bounds elements read as zero */
  LR_TENSOR_MAP_OOB_FILL_NAN = 1   /* ... as NaN (float types only) */
} lr_tensor_map_oob_fill_t;

typedef struct lr_tensor_map_desc_t {
  uint32_t dtype; /* lr_tensor_map_dtype_t */
  uint32_t rank;  /* 1..5 (3..5 with interleave) */
  /* A device pointer (lr_malloc), 16-byte aligned (32 with 32B interleave). */
  void *global_address;
  uint64_t global_dims[LR_TENSOR_MAP_MAX_RANK];      /* elements, 1..2^32 */
  uint64_t global_strides[LR_TENSOR_MAP_MAX_RANK - 1]; /* bytes, of dims 1..rank-1 */
  uint32_t box_dims[LR_TENSOR_MAP_MAX_RANK];         /* elements, 1..256 */
  uint32_t element_strides[LR_TENSOR_MAP_MAX_RANK];  /* 1..8 */
  uint32_t interleave;   /* lr_tensor_map_interleave_t */
  uint32_t swizzle;      /* lr_tensor_map_swizzle_t */
  uint32_t l2_promotion; /* lr_tensor_map_l2_promotion_t */
  uint32_t oob_fill;     /* lr_tensor_map_oob_fill_t */
} lr_tensor_map_desc_t;

/* Writes the LR_TENSOR_MAP_BYTES-byte descriptor of `desc` to out128 (any
 * alignment; copy it into the kernel's arguments at a 64-byte aligned
 * offset). LR_ERROR_INVALID_ARGUMENT naming the field when desc breaks one of
 * the CUDA driver's rules (checked on every backend, before the device is
 * asked); LR_ERROR_NOT_SUPPORTED on host and hsa ("tensor maps are a CUDA
 * sm_90+ feature"), on a cuda device below compute capability 9.0, and with a
 * driver without cuTensorMapEncodeTiled. */
/* The same rules without a device (no lr_init needed): LR_SUCCESS, or
 * LR_ERROR_INVALID_ARGUMENT with a message naming the field ("tensor map
 * box_dims[0]: ..."). Manifest parsers check a descriptor with it before any
 * device is opened. */
LRRT_API lr_status_t lr_tensor_map_validate(const lr_tensor_map_desc_t *desc);

LRRT_API lr_status_t lr_tensor_map_encode(lr_device_t device,
                                          const lr_tensor_map_desc_t *desc,
                                          void *out128);

#ifdef __cplusplus
}
#endif

#endif /* LRRT_C_TENSOR_MAP_H_ */

#include "tensor_map.hpp"

#include <fmt/format.h>

#include "error.hpp"

namespace lrrt::rt {

uint32_t tensor_map_element_bytes(uint32_t dtype) {
  switch (dtype) {
    case LR_TENSOR_MAP_U8: return 1;
    case LR_TENSOR_MAP_U16:
    case LR_TENSOR_MAP_F16:
    case LR_TENSOR_MAP_BF16: return 2;
    case LR_TENSOR_MAP_U32:
    case LR_TENSOR_MAP_I32:
    case LR_TENSOR_MAP_F32:
    case LR_TENSOR_MAP_F32_FTZ:
    case LR_TENSOR_MAP_TF32:
    case LR_TENSOR_MAP_TF32_FTZ: return 4;
    case LR_TENSOR_MAP_U64:
    case LR_TENSOR_MAP_I64:
    case LR_TENSOR_MAP_F64: return 8;
    default: return 0;
  }
}

bool tensor_map_dtype_is_float(uint32_t dtype) {
  return dtype >= LR_TENSOR_MAP_F16 && dtype <= LR_TENSOR_MAP_TF32_FTZ;
}

void tensor_maps_not_supported(std::string_view backend) {
  LRRT_THROW(LR_ERROR_NOT_SUPPORTED, "tensor maps are a CUDA sm_90+ feature (this device is a {} device)", backend);
}

namespace {

[[noreturn]] void bad(const std::string& field, const std::string& why) {
  LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "tensor map {}: {}", field, why);
}

uint32_t swizzle_span(uint32_t swizzle) { return swizzle == 0 ? 0 : 16u << swizzle; }  // 32, 64, 128

}  // namespace

void validate_tensor_map(const lr_tensor_map_desc_t& d) {
  const uint32_t esize = tensor_map_element_bytes(d.dtype);
  if (!esize) bad("dtype", fmt::format("{} is not an lr_tensor_map_dtype_t (0 to 12)", d.dtype));
  if (d.interleave > LR_TENSOR_MAP_INTERLEAVE_32B)
    bad("interleave", fmt::format("{} is not an lr_tensor_map_interleave_t (0 none, 1 16B, 2 32B)", d.interleave));
  if (d.swizzle > LR_TENSOR_MAP_SWIZZLE_128B)
    bad("swizzle", fmt::format("{} is not an lr_tensor_map_swizzle_t (0 none, 1 32B, 2 64B, 3 128B)", d.swizzle));
  if (d.l2_promotion > LR_TENSOR_MAP_L2_PROMOTION_256B)
    bad("l2_promotion", fmt::format("{} is not an lr_tensor_map_l2_promotion_t (0 none, 1 64B, 2 128B, 3 256B)", d.l2_promotion));
  if (d.oob_fill > LR_TENSOR_MAP_OOB_FILL_NAN)
    bad("oob_fill", fmt::format("{} is not an lr_tensor_map_oob_fill_t (0 zero, 1 nan)", d.oob_fill));
  if (d.oob_fill == LR_TENSOR_MAP_OOB_FILL_NAN && !tensor_map_dtype_is_float(d.dtype))
    bad("oob_fill", "NaN fill needs a floating-point dtype");
  const bool interleaved = d.interleave != LR_TENSOR_MAP_INTERLEAVE_NONE;
  if (d.rank < 1 || d.rank > LR_TENSOR_MAP_MAX_RANK) bad("rank", fmt::format("{} is not 1 to 5", d.rank));
  if (interleaved && d.rank < 3) bad("rank", fmt::format("{} with interleave: an interleaved tensor map has rank 3 to 5", d.rank));
  const uint64_t address = reinterpret_cast<uintptr_t>(d.global_address);
  const uint64_t address_align = d.interleave == LR_TENSOR_MAP_INTERLEAVE_32B ? 32 : 16;
  if (!address) bad("global_address", "is null");
  if (address % address_align)
    bad("global_address", fmt::format("{:#x} is not {}-byte aligned{}", address, address_align,
                                      address_align == 32 ? " (32B interleave)" : ""));
  for (uint32_t i = 0; i < d.rank; ++i)
    if (d.global_dims[i] == 0 || d.global_dims[i] > (uint64_t(1) << 32))
      bad(fmt::format("global_dims[{}]", i), fmt::format("{} is not 1 to 2^32", d.global_dims[i]));
  // The strides of dimensions 1.. in bytes. An outer stride below the
  // innermost row's bytes would make rows overlap.
  const uint64_t stride_align = d.interleave == LR_TENSOR_MAP_INTERLEAVE_32B ? 32 : 16;
  const uint64_t row_bytes = d.global_dims[0] * esize;
  for (uint32_t i = 0; i + 1 < d.rank; ++i) {
    const uint64_t s = d.global_strides[i];
    const std::string f = fmt::format("global_strides[{}]", i);
    if (s % stride_align) bad(f, fmt::format("{} is not a multiple of {} bytes", s, stride_align));
    if (s >= (uint64_t(1) << 40)) bad(f, fmt::format("{} is not below 2^40 bytes", s));
    if (s < row_bytes)
      bad(f, fmt::format("{} bytes is less than global_dims[0] x {} bytes = {} (rows would overlap)", s, esize, row_bytes));
  }
  for (uint32_t i = 0; i < d.rank; ++i) {
    if (d.box_dims[i] == 0 || d.box_dims[i] > 256)
      bad(fmt::format("box_dims[{}]", i), fmt::format("{} is not 1 to 256", d.box_dims[i]));
    if (d.element_strides[i] == 0 || d.element_strides[i] > 8)
      bad(fmt::format("element_strides[{}]", i), fmt::format("{} is not 1 to 8", d.element_strides[i]));
  }
  const uint64_t inner_bytes = uint64_t(d.box_dims[0]) * esize;
  if (!interleaved) {
    if (inner_bytes % 16)
      bad("box_dims[0]", fmt::format("{} elements x {} bytes = {} bytes is not a multiple of 16", d.box_dims[0], esize, inner_bytes));
    if (const uint32_t span = swizzle_span(d.swizzle); span && inner_bytes > span)
      bad("box_dims[0]", fmt::format("{} elements x {} bytes = {} bytes exceed the {}B swizzle span", d.box_dims[0], esize,
                                     inner_bytes, span));
  } else if (d.interleave == LR_TENSOR_MAP_INTERLEAVE_32B && d.swizzle != LR_TENSOR_MAP_SWIZZLE_32B) {
    bad("swizzle", "32B interleave needs the 32B swizzle");
  }
}

}  // namespace lrrt::rt

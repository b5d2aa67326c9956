// Tensor maps (lr_tensor_map_encode): the CUDA driver's rules for a tiled
// TMA descriptor, checked without a device so that every backend reports a
// malformed descriptor the same way, naming the field, before a driver is
// asked (cuTensorMapEncodeTiled answers only CUDA_ERROR_INVALID_VALUE).
#pragma once

#include <cstdint>
#include <string_view>

#include "lrrt/lrrt.h"

namespace lrrt::rt {

// Bytes per element of a tensor map dtype; 0 when the value is not one.
uint32_t tensor_map_element_bytes(uint32_t dtype);
bool tensor_map_dtype_is_float(uint32_t dtype);

// Throws lrrt::Error(LR_ERROR_INVALID_ARGUMENT) naming the first field that
// breaks a rule ("box_dims[0]: ..."), following the CUDA driver API's
// documentation of cuTensorMapEncodeTiled.
void validate_tensor_map(const lr_tensor_map_desc_t& desc);

// What host and hsa answer: LR_ERROR_NOT_SUPPORTED.
[[noreturn]] void tensor_maps_not_supported(std::string_view backend);

}  // namespace lrrt::rt

// A kernel argument that is a tensor map (docs/manifest.md, "Tensor maps"):
// the 128-byte TMA descriptor of a tiled view of one buffer, encoded on the
// device (lr_tensor_map_encode, cuda sm_90+) when the arguments are packed,
// since it holds the buffer's device address.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "lrrt/lrrt.h"

namespace lrrt::bundle {

struct TensorMapSpec {
  // Everything but global_address, in CUDA's order (dimension 0 innermost);
  // the manifest writes dims, strides and box outermost first, like a shape.
  lr_tensor_map_desc_t desc{};
};

// The descriptor of `spec` over the buffer at `address`, written to out128
// by the device. Throws lrrt::Error from the runtime.
void encode_tensor_map(lr_device_t device, const TensorMapSpec& spec, uint64_t address, std::byte* out128);

// Whether a device can take tensor maps: "" when it can, else why not
// ("a tensor map needs the cuda backend on sm_90+ (this device is host, x86_64)").
std::string tensor_map_unsupported_reason(const lr_device_properties_t& p);

}  // namespace lrrt::bundle

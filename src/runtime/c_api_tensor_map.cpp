// The C ABI's tensor maps (lr_tensor_map_encode, lr_tensor_map_validate):
// cuTensorMapEncodeTiled's rules checked on every backend (tensor_map.hpp),
// the encoding by the device's backend. Shared helpers: c_api_support.hpp.
#include <cstddef>
#include <cstring>

#include "c_api_support.hpp"
#include "tensor_map.hpp"

using namespace lrrt::c_api;

lr_status_t lr_tensor_map_encode(lr_device_t device, const lr_tensor_map_desc_t* desc, void* out128) {
  return guard("lr_tensor_map_encode", [&] {
    require(desc, "desc");
    require(out128, "out128");
    // The rules first, on every backend: a malformed descriptor is the
    // caller's to fix wherever it is encoded.
    lrrt::rt::validate_tensor_map(*desc);
    Runtime& r = rt();
    // Aligned as cuda.h declares CUtensorMap (128; the driver needs 64).
    alignas(128) std::byte bytes[LR_TENSOR_MAP_BYTES] = {};
    r.opened(r.device(device)).encode_tensor_map(*desc, bytes);
    std::memcpy(out128, bytes, sizeof(bytes));
  });
}

lr_status_t lr_tensor_map_validate(const lr_tensor_map_desc_t* desc) {
  return guard("lr_tensor_map_validate", [&] {
    require(desc, "desc");
    lrrt::rt::validate_tensor_map(*desc);
  });
}

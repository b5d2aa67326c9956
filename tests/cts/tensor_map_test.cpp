// Tensor maps (lr_tensor_map_encode): a 128-byte descriptor on cuda sm_90+,
// LR_ERROR_NOT_SUPPORTED naming the feature everywhere else; a malformed
// descriptor is refused naming its field on every backend.
#include <cstdlib>

#include "cts.hpp"

namespace lrrt::cts {
namespace {

bool device_has_tensor_maps(const Session& s) {
  if (!backend().expectations().tensor_maps_from_sm90) return false;
  const std::string arch = s.device().properties().arch;  // "sm_90"
  return arch.rfind("sm_", 0) == 0 && std::atoi(arch.c_str() + 3) >= 90;
}

TEST_SUITE("tensor_maps") {
  TEST_CASE("a 2-D f32 tensor map: encoded on sm_90+, NOT_SUPPORTED elsewhere") {
    Session s;
    CTS_RANDOM(random);
    const uint64_t rows = 1 + random.engine()() % 300, cols = 4 * (1 + random.engine()() % 100);
    lrrt::DeviceBuffer buffer(s.device(), rows * cols * sizeof(float));
    lr_tensor_map_desc_t d{};
    d.dtype = LR_TENSOR_MAP_F32;
    d.rank = 2;
    d.global_address = buffer.data();
    d.global_dims[0] = cols;
    d.global_dims[1] = rows;
    d.global_strides[0] = cols * sizeof(float);
    d.box_dims[0] = 32;
    d.box_dims[1] = 8;
    d.element_strides[0] = d.element_strides[1] = 1;
    d.swizzle = LR_TENSOR_MAP_SWIZZLE_128B;
    unsigned char out[LR_TENSOR_MAP_BYTES];
    std::memset(out, 0xAB, sizeof(out));
    if (device_has_tensor_maps(s)) {
      CTS_OK(lr_tensor_map_encode(s.get(), &d, out));
      bool written = false;
      for (unsigned char b : out) written |= b != 0xAB;
      CHECK(written);
    } else {
      CTS_FAILS(lr_tensor_map_encode(s.get(), &d, out), LR_ERROR_NOT_SUPPORTED, "tensor maps are a CUDA sm_90+ feature");
      for (unsigned char b : out) CHECK(b == 0xAB);
    }
    d.box_dims[1] = 257;
    CTS_FAILS(lr_tensor_map_encode(s.get(), &d, out), LR_ERROR_INVALID_ARGUMENT, "box_dims[1]", "1 to 256");
  }
}

}  // namespace
}  // namespace lrrt::cts

// Tensor map validation (src/runtime/tensor_map.cpp): every rule of the CUDA
// driver's cuTensorMapEncodeTiled refused naming its field, random valid
// descriptors accepted, and the host backend's LR_ERROR_NOT_SUPPORTED
// through the C ABI.
#include <doctest/doctest.h>

#include <functional>
#include <random>
#include <string>

#include "error.hpp"
#include "lrrt/lrrt.hpp"
#include "tensor_map.hpp"

namespace {

using lrrt::rt::tensor_map_element_bytes;
using lrrt::rt::validate_tensor_map;

// A random descriptor that meets every rule: rank 1-5, a random dtype, dense
// or padded strides, box and swizzle chosen to fit.
lr_tensor_map_desc_t random_valid(std::mt19937_64& rng) {
  auto pick = [&](uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng); };
  lr_tensor_map_desc_t d{};
  d.dtype = static_cast<uint32_t>(pick(0, 12));
  const uint32_t e = tensor_map_element_bytes(d.dtype);
  d.interleave = pick(0, 3) == 0 ? static_cast<uint32_t>(pick(1, 2)) : 0;
  d.rank = static_cast<uint32_t>(d.interleave ? pick(3, 5) : pick(1, 5));
  d.global_address = reinterpret_cast<void*>(uintptr_t(pick(1, 1u << 20)) * 32);
  for (uint32_t i = 0; i < d.rank; ++i) {
    d.global_dims[i] = pick(1, i == 0 ? 4096 : 64);  // outer strides stay below 2^40
    d.element_strides[i] = static_cast<uint32_t>(pick(1, 8));
    d.box_dims[i] = static_cast<uint32_t>(pick(1, 256));
  }
  if (d.interleave == 0) {
    // The inner box: a multiple of 16 bytes, within the swizzle span.
    d.swizzle = static_cast<uint32_t>(pick(0, 3));
    const uint32_t max_bytes = d.swizzle ? (16u << d.swizzle) : std::min<uint32_t>(256 * e, 4096);
    const uint32_t chunks = static_cast<uint32_t>(pick(1, std::min<uint32_t>(max_bytes, 256 * e) / 16));
    d.box_dims[0] = chunks * 16 / e;
  } else {
    d.swizzle = d.interleave == LR_TENSOR_MAP_INTERLEAVE_32B ? LR_TENSOR_MAP_SWIZZLE_32B : static_cast<uint32_t>(pick(0, 3));
  }
  const uint64_t align = d.interleave == LR_TENSOR_MAP_INTERLEAVE_32B ? 32 : 16;
  uint64_t stride = (d.global_dims[0] * e + align - 1) / align * align + align * pick(0, 3);
  for (uint32_t i = 0; i + 1 < d.rank; ++i) {
    d.global_strides[i] = stride;
    stride *= d.global_dims[i + 1];
  }
  d.l2_promotion = static_cast<uint32_t>(pick(0, 3));
  d.oob_fill = lrrt::rt::tensor_map_dtype_is_float(d.dtype) ? static_cast<uint32_t>(pick(0, 1)) : 0;
  return d;
}

// The error's message, or "" when the descriptor is accepted.
std::string refusal(const lr_tensor_map_desc_t& d) {
  try {
    validate_tensor_map(d);
    return "";
  } catch (const lrrt::Error& e) {
    CHECK(e.status() == LR_ERROR_INVALID_ARGUMENT);
    return e.what();
  }
}

}  // namespace

TEST_CASE("tensor map: random valid descriptors are accepted") {
  const uint64_t seed = std::random_device{}();
  INFO("seed ", seed);
  std::mt19937_64 rng(seed);
  for (int n = 0; n < 2000; ++n) {
    const auto d = random_valid(rng);
    INFO("dtype ", d.dtype, " rank ", d.rank, " interleave ", d.interleave, " swizzle ", d.swizzle, " box0 ", d.box_dims[0]);
    CHECK(refusal(d) == "");
  }
}

TEST_CASE("tensor map: each rule is refused naming its field") {
  const uint64_t seed = std::random_device{}();
  INFO("seed ", seed);
  std::mt19937_64 rng(seed);
  struct Rule {
    const char* field;
    std::function<bool(lr_tensor_map_desc_t&)> breaks;  // false: not applicable to this descriptor
  };
  const std::vector<Rule> rules = {
      {"dtype", [](auto& d) { return d.dtype = 13, true; }},
      {"interleave", [](auto& d) { return d.interleave = 3, true; }},
      {"swizzle", [](auto& d) { return d.swizzle = 4, true; }},
      {"l2_promotion", [](auto& d) { return d.l2_promotion = 4, true; }},
      {"oob_fill", [](auto& d) { return d.oob_fill = 2, true; }},
      {"oob_fill", [](auto& d) { return d.dtype = LR_TENSOR_MAP_I32, d.oob_fill = LR_TENSOR_MAP_OOB_FILL_NAN, true; }},
      {"rank", [](auto& d) { return d.rank = 0, true; }},
      {"rank", [](auto& d) { return d.rank = 6, true; }},
      {"rank", [](auto& d) { return d.interleave && (d.rank = 2, true); }},
      {"global_address", [](auto& d) { return d.global_address = nullptr, true; }},
      {"global_address", [](auto& d) { return d.global_address = static_cast<char*>(d.global_address) + 8, true; }},
      {"global_address",
       [](auto& d) {
         return d.interleave == LR_TENSOR_MAP_INTERLEAVE_32B && (d.global_address = static_cast<char*>(d.global_address) + 16, true);
       }},
      {"global_dims[", [](auto& d) { return d.global_dims[d.rank - 1] = 0, true; }},
      {"global_dims[", [](auto& d) { return d.global_dims[0] = (uint64_t(1) << 32) + 1, true; }},
      {"global_strides[", [](auto& d) { return d.rank > 1 && (d.global_strides[0] += 8, true); }},
      {"global_strides[", [](auto& d) { return d.rank > 1 && (d.global_strides[d.rank - 2] = uint64_t(1) << 40, true); }},
      {"global_strides[0]",
       [](auto& d) {
         const uint64_t row = d.global_dims[0] * tensor_map_element_bytes(d.dtype);
         return d.rank > 1 && row > 32 && (d.global_strides[0] = row / 32 * 16, true);
       }},
      {"box_dims[", [](auto& d) { return d.box_dims[d.rank - 1] = 0, true; }},
      {"box_dims[", [](auto& d) { return d.box_dims[d.rank - 1] = 257, true; }},
      {"element_strides[", [](auto& d) { return d.element_strides[d.rank - 1] = 0, true; }},
      {"element_strides[", [](auto& d) { return d.element_strides[0] = 9, true; }},
      {"box_dims[0]",
       [](auto& d) { return !d.interleave && d.dtype == LR_TENSOR_MAP_U8 && d.box_dims[0] < 256 && (d.box_dims[0] += 1, true); }},
      {"box_dims[0]",  // 48 bytes: a multiple of 16, wider than the 32B swizzle
       [](auto& d) {
         if (d.interleave) return false;
         d.swizzle = LR_TENSOR_MAP_SWIZZLE_32B;
         d.box_dims[0] = 48 / tensor_map_element_bytes(d.dtype);
         return true;
       }},
      {"swizzle", [](auto& d) { return d.interleave == LR_TENSOR_MAP_INTERLEAVE_32B && (d.swizzle = LR_TENSOR_MAP_SWIZZLE_64B, true); }},
  };
  for (size_t r = 0; r < rules.size(); ++r) {
    int applied = 0;
    for (int n = 0; n < 4000 && applied < 20; ++n) {
      auto d = random_valid(rng);
      if (!rules[r].breaks(d)) continue;
      ++applied;
      const std::string why = refusal(d);
      INFO("rule ", r, " (", rules[r].field, "): ", why);
      CHECK(why.find(std::string("tensor map ") + rules[r].field) != std::string::npos);
    }
    INFO("rule ", r, " (", rules[r].field, ")");
    CHECK(applied > 0);
  }
}

TEST_CASE("tensor map: the host backend answers NOT_SUPPORTED through the C ABI") {
  lrrt::Runtime runtime;
  auto device = lrrt::Device::select("host");
  std::mt19937_64 rng(std::random_device{}());
  const auto d = random_valid(rng);
  unsigned char out[LR_TENSOR_MAP_BYTES];
  std::fill(std::begin(out), std::end(out), 0xAB);
  CHECK(lr_tensor_map_encode(device.get(), &d, out) == LR_ERROR_NOT_SUPPORTED);
  CHECK(std::string(lr_last_error_message()).find("tensor maps are a CUDA sm_90+ feature") != std::string::npos);
  for (unsigned char b : out) CHECK(b == 0xAB);  // nothing written
  // A malformed descriptor is refused as such on every backend, naming the field.
  auto bad = d;
  bad.box_dims[0] = 0;
  CHECK(lr_tensor_map_encode(device.get(), &bad, out) == LR_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(lr_last_error_message()).find("box_dims[0]") != std::string::npos);
  CHECK(lr_tensor_map_encode(device.get(), nullptr, out) == LR_ERROR_INVALID_ARGUMENT);
  CHECK(lr_tensor_map_encode(device.get(), &d, nullptr) == LR_ERROR_INVALID_ARGUMENT);
  // The C++ wrapper throws lrrt::Error with the same status.
  try {
    (void)device.tensor_map(d);
    FAIL("no error");
  } catch (const lrrt::Error& e) {
    CHECK(e.status() == LR_ERROR_NOT_SUPPORTED);
  }
}

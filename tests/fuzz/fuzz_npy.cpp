// libFuzzer target: the .npy reader. Accepted files must hold exactly the
// bytes their header's shape and dtype need.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "lrrt/bundle.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lrrt::bundle;
  try {
    NpyArray a = parse_npy(std::span(reinterpret_cast<const std::byte*>(data), size), "fuzz.npy");
    if (a.data.size() != a.count() * dtype_size(a.type)) std::abort();
  } catch (const InputError&) {
  }
  return 0;
}

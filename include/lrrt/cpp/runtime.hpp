// lrrt C++ wrapper: Runtime (lr_init/lr_shutdown), backends and the device count.
// One concept of lrrt/lrrt.hpp, the header to include.
#pragma once

#include <cstdint>
#include <vector>

#include "lrrt/c/device.h"
#include "lrrt/c/runtime.h"
#include "lrrt/cpp/error.hpp"

namespace lrrt {

// Owns lr_init/lr_shutdown. One per process at a time.
class Runtime {
 public:
  Runtime() { check(lr_init(), "lr_init"); }
  ~Runtime() { (void)lr_shutdown(); }
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  static std::vector<lr_backend_info_t> backends() {
    uint32_t n = 0;
    check(lr_backend_count(&n), "lr_backend_count");
    std::vector<lr_backend_info_t> out(n);
    for (uint32_t i = 0; i < n; ++i) check(lr_backend_get_info(i, &out[i]), "lr_backend_get_info");
    return out;
  }
  static uint32_t device_count() {
    uint32_t n = 0;
    check(lr_device_count(&n), "lr_device_count");
    return n;
  }
};

}  // namespace lrrt

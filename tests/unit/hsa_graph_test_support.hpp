// Shared by the hsa graph tests on the stand-in (test_hsa_graph*.cpp): the
// stand-in's test hooks, the runtime on the stand-in with its kernels, the
// plan of an exec as JSON, and running a body in both orders. Included only
// where LRRT_TEST_HSA and LRRT_TEST_AMD_KERNELS are defined.
#pragma once

#include <dlfcn.h>
#include <doctest/doctest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lrrt/lrrt.hpp"
#include "replay_test_support.hpp"
#include "standin_hooks.h"

namespace lrrt::test::hsa_graph {

inline std::vector<std::byte> read_kernel(const std::string& source, const std::string& arch = "gfx1100") {
  return read_file(std::string(LRRT_TEST_KERNEL_DIR) + "/" + source + "." + arch + ".hsaco");
}

// The stand-in's test hooks (the library lrrt loaded).
struct Standin {
  void* lib = nullptr;
  lrrt_hsa_standin_set_worst_order_fn set_worst_order = nullptr;
  lrrt_hsa_standin_counter_fn counter = nullptr;
  lrrt_hsa_standin_dispatch_count_fn dispatch_count = nullptr;
  lrrt_hsa_standin_get_dispatch_fn get_dispatch = nullptr;
  lrrt_hsa_standin_reset_fn reset = nullptr;
  Standin() {
    lib = dlopen(LRRT_TEST_HSA_STANDIN, RTLD_NOW | RTLD_NOLOAD);
    REQUIRE_MESSAGE(lib, "the stand-in is not loaded");
    set_worst_order =
        reinterpret_cast<lrrt_hsa_standin_set_worst_order_fn>(dlsym(lib, "lrrt_hsa_standin_set_worst_order"));
    counter = reinterpret_cast<lrrt_hsa_standin_counter_fn>(dlsym(lib, "lrrt_hsa_standin_counter"));
    dispatch_count = reinterpret_cast<lrrt_hsa_standin_dispatch_count_fn>(dlsym(lib, "lrrt_hsa_standin_dispatch_count"));
    get_dispatch = reinterpret_cast<lrrt_hsa_standin_get_dispatch_fn>(dlsym(lib, "lrrt_hsa_standin_get_dispatch"));
    reset = reinterpret_cast<lrrt_hsa_standin_reset_fn>(dlsym(lib, "lrrt_hsa_standin_reset"));
    REQUIRE(bool(set_worst_order));
    REQUIRE(bool(counter));
    REQUIRE(bool(get_dispatch));
    REQUIRE(bool(reset));
    set_worst_order(0);  // each test picks its order (also under LRRT_TEST_WORST_ORDER=1)
  }
  ~Standin() {
    set_worst_order(0);
    dlclose(lib);
  }
  std::vector<uint16_t> dispatch_headers() {
    std::vector<uint16_t> out;
    for (size_t i = 0; i < dispatch_count(); ++i) {
      lrrt_hsa_standin_dispatch_t d{};
      REQUIRE(get_dispatch(i, &d) == 0);
      out.push_back(d.header);
    }
    return out;
  }
};

// The runtime on the stand-in, its kernels, and the stand-in's hooks.
struct Setup {
  lrrt::Runtime runtime;
  lrrt::Device device;
  lrrt::Module saxpy_module, add_module, reduce_module;
  lrrt::Kernel saxpy, add, reduce;
  Standin standin;
  static lrrt::Runtime start() {
    setenv("LRRT_HSA_LIBRARY", LRRT_TEST_HSA_STANDIN, 1);
    setenv("LRRT_HSA_STANDIN_KERNEL_DIR", lrrt::test::kernel_dir().c_str(), 1);
    setenv("LRRT_WAIT_TIMEOUT_MS", "20000", 1);
    return lrrt::Runtime();
  }
  // `arch`: the code objects' target, the stand-in's ISA (LRRT_HSA_STANDIN_ISA).
  explicit Setup(const std::string& arch = "gfx1100")
      : runtime(start()),
        device(lrrt::Device::select("hsa")),
        saxpy_module(device, read_kernel("saxpy", arch)),
        add_module(device, read_kernel("vector_add", arch)),
        reduce_module(device, read_kernel("reduce", arch)),
        saxpy(saxpy_module.kernel("saxpy")),
        add(add_module.kernel("vector_add_f32")),
        reduce(reduce_module.kernel("reduce_sum_f32")) {}
};

inline nlohmann::json plan_of(const lrrt::GraphExec& exec) { return nlohmann::json::parse(exec.plan_json()); }

// Runs `body` in the default order and in the worst order.
template <typename Body>
inline void in_both_orders(Setup& s, Body&& body) {
  for (int worst : {0, 1}) {
    CAPTURE(worst);
    s.standin.set_worst_order(worst);
    body(worst != 0);
  }
  s.standin.set_worst_order(0);
}

}  // namespace lrrt::test::hsa_graph

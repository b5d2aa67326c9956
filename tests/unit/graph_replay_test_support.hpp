// Shared by the graph replay tests that run one graph on every backend
// (test_graph_replay*.cpp): the backends the replay runs on here, a device
// with its kernels, and the plan of an exec as JSON.
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lrrt/lrrt.hpp"
#include "replay_test_support.hpp"

namespace lrrt::test::graph_replay {

// Backends the replay runs on here: host always, the hsa stand-in when the
// AMD kernels were built, cuda on a machine with an NVIDIA GPU and the PTX
// kernels (the lead's GPU runs). With LRRT_TEST_REQUIRE_CUDA=1 (the gpu-labelled
// ctest cuda_gpu_graph_replay) a missing cuda is a failure, not a skip. Call
// with the runtime initialised.
inline std::vector<std::string> replay_backends() {
  std::vector<std::string> out{"host"};
#if defined(LRRT_TEST_HSA) && defined(LRRT_TEST_AMD_KERNELS)
  // A pack made without the stand-in (scripts/gpu-pack from a build without
  // it) runs the other backends' cases and says why hsa is left out.
  if (std::ifstream(hsa_standin()).good())
    out.push_back("hsa");
  else
    MESSAGE("hsa replay cases skipped: no stand-in at ", hsa_standin(), " (set LRRT_TEST_HSA_STANDIN)");
#endif
  lr_device_t cuda{};
  const bool device = lr_device_select("cuda", 0, &cuda) == LR_SUCCESS;
  const std::string why = device ? "" : lr_last_error_message();
  const bool kernels = std::ifstream(kernel_file("cuda", "saxpy")).good();
  if (device && kernels) out.push_back("cuda");
  if (const char* require = std::getenv("LRRT_TEST_REQUIRE_CUDA"); require && std::string(require) == "1")
    REQUIRE_MESSAGE((device && kernels), "LRRT_TEST_REQUIRE_CUDA=1 but cuda cannot run the replay cases: ",
                    device ? "no PTX kernel " + kernel_file("cuda", "saxpy") : "no cuda device (" + why + ")");
  return out;
}

// A device and its kernels (the Gate that holds its default queue back is in
// test_graph_replay_running.cpp).
struct Setup {
  std::string backend;
  lrrt::Device device;
  lrrt::Module saxpy_module, add_module, reduce_module;
  lrrt::Kernel saxpy, add, reduce;
  explicit Setup(const std::string& b)
      : backend(b),
        device(lrrt::Device::select(b)),
        saxpy_module(device, read_file(kernel_file(b, "saxpy"))),
        add_module(device, read_file(kernel_file(b, "vector_add"))),
        reduce_module(device, read_file(kernel_file(b, "reduce"))),
        saxpy(saxpy_module.kernel("saxpy")),
        add(add_module.kernel("vector_add_f32")),
        reduce(reduce_module.kernel("reduce_sum_f32")) {}
};

inline nlohmann::json plan_of(const lrrt::GraphExec& exec) { return nlohmann::json::parse(exec.plan_json()); }

}  // namespace lrrt::test::graph_replay

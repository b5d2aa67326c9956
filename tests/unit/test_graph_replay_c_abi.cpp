// Retained replay through the C ABI (test_graph_replay.cpp has the
// scenarios): memory lrrt did not allocate, declared with lr_memory_register;
// errors that name the step and the argument; the plan as JSON, and
// lr_synchronize waiting for replays on every lane.
#include <dlfcn.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <functional>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "lrrt/lrrt.hpp"
#include "graph_replay_test_support.hpp"
#include "replay_test_support.hpp"
#if defined(LRRT_TEST_HSA)
#include "standin_hooks.h"
#endif

namespace {

using namespace lrrt::test;
using namespace lrrt::test::graph_replay;

}  // namespace

TEST_CASE("graph replay: memory lrrt did not allocate replays once lr_memory_register declares it") {
  point_hsa_at_standin();
  lrrt::Runtime runtime;
  auto msg = [] { return std::string(lr_last_error_message()); };
  for (const auto& backend : replay_backends()) {
    // Host memory stands for a foreign allocator's (torch's) memory where the
    // device reaches host memory: host and the stand-in.
    if (backend == "cuda") continue;
    CAPTURE(backend);
    Setup s(backend);
    const uint32_t n = 1000 + uint32_t(rng()() % 1000), steps = 3;
    const float a = std::array{0.25f, 0.5f, 2.0f}[rng()() % 3];
    const auto x = random_whole(n, -64, 64);
    const auto y0 = random_whole(n, -1000, 1000);
    std::vector<float> fx = x, fy(n, kPoison);
    SaxpyArgs args{a, fx.data(), fy.data(), n};
    lr_launch_config_t cfg = config_for(n, 256);
    lr_graph_access_t acc[] = {{fx.data(), 0, n * 4, LR_ACCESS_READ}, {fy.data(), 0, n * 4, LR_ACCESS_READ_WRITE}};
    lrrt::Graph graph(s.device);
    for (uint32_t i = 0; i < steps; ++i)
      REQUIRE(lr_graph_add_kernel(graph.get(), s.saxpy.get(), &cfg, &args, sizeof args, acc, 2, nullptr) == LR_SUCCESS);
    lr_graph_exec_t* raw = nullptr;
    CHECK(lr_graph_instantiate(graph.get(), nullptr, &raw) == LR_ERROR_INVALID_ARGUMENT);
    CHECK(msg().find("lr_memory_register") != std::string::npos);

    lr_device_t dev = s.device.get();
    lrrt::MemoryRegistration registered_x(s.device, fx.data(), n * 4);
    REQUIRE(lr_memory_register(dev, fy.data(), n * 4) == LR_SUCCESS);
    REQUIRE(lr_memory_register(dev, fy.data(), n * 4) == LR_SUCCESS);  // a second reference
    REQUIRE(lr_graph_instantiate(graph.get(), nullptr, &raw) == LR_SUCCESS);
    for (int replay = 0; replay < 2; ++replay) {
      fy = y0;
      REQUIRE(lr_graph_exec_launch(raw, nullptr) == LR_SUCCESS);
      REQUIRE(lr_graph_exec_synchronize(raw) == LR_SUCCESS);
      for (uint32_t i = 0; i < n; ++i)
        REQUIRE_MESSAGE(fy[i] == y0[i] + float(steps) * a * x[i], "replay ", replay, " element ", i);
    }

    // Ranges are registered once or identically; lrrt's own memory needs none.
    lrrt::DeviceBuffer owned(s.device, 256);
    CHECK(lr_memory_register(dev, fy.data() + 1, 16) == LR_ERROR_INVALID_ARGUMENT);
    CHECK(msg().find("overlaps the registered range") != std::string::npos);
    CHECK(lr_memory_register(dev, static_cast<char*>(owned.data()) + 8, 8) == LR_ERROR_INVALID_ARGUMENT);
    CHECK(msg().find("memory lrrt allocated needs no registration") != std::string::npos);
    CHECK(lr_memory_register(dev, nullptr, 8) == LR_ERROR_INVALID_ARGUMENT);
    CHECK(lr_memory_register(dev, fy.data(), 0) == LR_ERROR_INVALID_ARGUMENT);
    CHECK(lr_memory_unregister(dev, fy.data() + 1) == LR_ERROR_INVALID_ARGUMENT);
    CHECK(msg().find("not the start of a range registered") != std::string::npos);

    // One reference of y goes: replays go on. The last: the next launch is
    // refused naming the pointer, and nothing ran (y keeps its poison).
    REQUIRE(lr_memory_unregister(dev, fy.data()) == LR_SUCCESS);
    fy = y0;
    REQUIRE(lr_graph_exec_launch(raw, nullptr) == LR_SUCCESS);
    REQUIRE(lr_graph_exec_synchronize(raw) == LR_SUCCESS);
    for (uint32_t i = 0; i < n; ++i) REQUIRE(fy[i] == y0[i] + float(steps) * a * x[i]);
    REQUIRE(lr_memory_unregister(dev, fy.data()) == LR_SUCCESS);
    std::fill(fy.begin(), fy.end(), kPoison);
    CHECK(lr_graph_exec_launch(raw, nullptr) == LR_ERROR_INVALID_ARGUMENT);
    char hex[32];
    std::snprintf(hex, sizeof hex, "%zx", reinterpret_cast<uintptr_t>(fy.data()));
    CHECK(msg().find(hex) != std::string::npos);
    for (uint32_t i = 0; i < n; ++i) REQUIRE(std::isnan(fy[i]));
    CHECK(lr_memory_unregister(dev, fy.data()) == LR_ERROR_INVALID_ARGUMENT);
    REQUIRE(lr_graph_exec_destroy(raw) == LR_SUCCESS);
    registered_x.reset();  // the wrapper unregisters
    CHECK(lr_memory_unregister(dev, fx.data()) == LR_ERROR_INVALID_ARGUMENT);
  }
}

TEST_CASE("graph replay: errors through the C ABI name the step and the argument") {
  point_hsa_at_standin();
  lrrt::Runtime runtime;
  Setup s("host");
  const uint32_t n = 256;
  lrrt::DeviceBuffer dx(s.device, n * 4), dy(s.device, n * 4);
  lr_launch_config_t cfg = config_for(n, 64);
  SaxpyArgs args{1.0f, dx.data(), dy.data(), n};
  auto msg = [] { return std::string(lr_last_error_message()); };

  lr_graph_t* g = nullptr;
  REQUIRE(lr_graph_create(s.device.get(), &g) == LR_SUCCESS);
  lr_graph_node_t node = 99;
  // Undeclared y.
  lr_graph_access_t only_x[] = {{dx.data(), 0, 0, LR_ACCESS_READ}};
  REQUIRE(lr_graph_add_kernel(g, s.saxpy.get(), &cfg, &args, sizeof args, only_x, 1, &node) == LR_SUCCESS);
  CHECK(node == 0);
  lr_graph_exec_t* exec = nullptr;
  CHECK(lr_graph_instantiate(g, nullptr, &exec) == LR_ERROR_INVALID_ARGUMENT);
  CHECK(exec == nullptr);
  CHECK(msg().find("lr_graph_instantiate: node 0 (kernel 'saxpy'): argument 'y'") != std::string::npos);
  REQUIRE(lr_graph_destroy(g) == LR_SUCCESS);
  CHECK(lr_graph_destroy(g) == LR_ERROR_INVALID_ARGUMENT);

  // Unknown pointer in an access list.
  std::vector<float> stack_memory(n);
  REQUIRE(lr_graph_create(s.device.get(), &g) == LR_SUCCESS);
  lr_graph_access_t stray[] = {{dx.data(), 0, 0, LR_ACCESS_READ}, {stack_memory.data(), 0, 0, LR_ACCESS_READ_WRITE}};
  REQUIRE(lr_graph_add_kernel(g, s.saxpy.get(), &cfg, &args, sizeof args, stray, 2, nullptr) == LR_SUCCESS);
  CHECK(lr_graph_instantiate(g, nullptr, &exec) == LR_ERROR_INVALID_ARGUMENT);
  CHECK(msg().find("access 1 (read_write)") != std::string::npos);
  CHECK(msg().find("not inside any allocation") != std::string::npos);
  REQUIRE(lr_graph_destroy(g) == LR_SUCCESS);

  // A cycle through an explicit edge; bad ids, modes, sizes, options.
  REQUIRE(lr_graph_create(s.device.get(), &g) == LR_SUCCESS);
  lr_graph_access_t both[] = {{dx.data(), 0, 0, LR_ACCESS_READ}, {dy.data(), 0, 0, LR_ACCESS_READ_WRITE}};
  REQUIRE(lr_graph_add_kernel(g, s.saxpy.get(), &cfg, &args, sizeof args, both, 2, nullptr) == LR_SUCCESS);
  REQUIRE(lr_graph_add_kernel(g, s.saxpy.get(), &cfg, &args, sizeof args, both, 2, nullptr) == LR_SUCCESS);
  CHECK(lr_graph_add_dependency(g, 0, 5) == LR_ERROR_INVALID_ARGUMENT);
  REQUIRE(lr_graph_add_dependency(g, 1, 0) == LR_SUCCESS);
  CHECK(lr_graph_instantiate(g, nullptr, &exec) == LR_ERROR_INVALID_ARGUMENT);
  CHECK(msg().find("cycle") != std::string::npos);
  lr_graph_access_t bad_mode[] = {{dx.data(), 0, 0, lr_access_mode_t(0)}};
  CHECK(lr_graph_add_kernel(g, s.saxpy.get(), &cfg, &args, sizeof args, bad_mode, 1, nullptr) ==
        LR_ERROR_INVALID_ARGUMENT);
  CHECK(lr_graph_add_kernel(g, s.saxpy.get(), &cfg, &args, 8, both, 2, nullptr) == LR_ERROR_INVALID_ARGUMENT);
  CHECK(msg().find("takes 28 bytes of explicit arguments (up to 32 with padding), but 8") != std::string::npos);
  std::byte too_long[40] = {};
  std::memcpy(too_long, &args, sizeof args);
  CHECK(lr_graph_add_kernel(g, s.saxpy.get(), &cfg, too_long, 40, both, 2, nullptr) == LR_ERROR_INVALID_ARGUMENT);
  CHECK(lr_graph_add_kernel(g, s.saxpy.get(), &cfg, &args, sizeof args, nullptr, 2, nullptr) ==
        LR_ERROR_INVALID_ARGUMENT);
  uint16_t pattern = 0;
  CHECK(lr_graph_add_fill(g, dy.data(), 7, &pattern, 2, nullptr) == LR_ERROR_INVALID_ARGUMENT);
  CHECK(lr_graph_add_copy(g, dy.data(), dx.data(), 0, LR_MEMCPY_DEVICE_TO_DEVICE, nullptr) ==
        LR_ERROR_INVALID_ARGUMENT);
  REQUIRE(lr_graph_destroy(g) == LR_SUCCESS);

  REQUIRE(lr_graph_create(s.device.get(), &g) == LR_SUCCESS);
  REQUIRE(lr_graph_add_kernel(g, s.saxpy.get(), &cfg, &args, sizeof args, both, 2, nullptr) == LR_SUCCESS);
  lr_graph_instantiate_options_t too_many{9, 0};
  CHECK(lr_graph_instantiate(g, &too_many, &exec) == LR_ERROR_INVALID_ARGUMENT);
  lr_graph_instantiate_options_t bad_flags{0, 0x80};
  CHECK(lr_graph_instantiate(g, &bad_flags, &exec) == LR_ERROR_INVALID_ARGUMENT);
  // Workgroup too large for the device, caught before any replay.
  lr_launch_config_t huge{{1, 1, 1}, {4096, 1, 1}, 0};
  REQUIRE(lr_graph_add_kernel(g, s.saxpy.get(), &huge, &args, sizeof args, both, 2, nullptr) == LR_SUCCESS);
  CHECK(lr_graph_instantiate(g, nullptr, &exec) == LR_ERROR_INVALID_ARGUMENT);
  CHECK(msg().find("node 1 (kernel 'saxpy'): a workgroup of 4096x1x1") != std::string::npos);
  REQUIRE(lr_graph_destroy(g) == LR_SUCCESS);

  // The module stays while a graph or exec uses it; a freed buffer stops launches.
  {
    lrrt::Module module(s.device, read_file(kernel_file("host", "saxpy")));
    lrrt::Kernel k = module.kernel("saxpy");
    lrrt::DeviceBuffer dz(s.device, n * 4);
    lrrt::Graph graph(s.device);
    graph.add_kernel(k, cfg, SaxpyArgs{1.0f, dx.data(), dz.data(), n},
                     {lrrt::read_access(dx), lrrt::read_write_access(dz)});
    auto e = graph.instantiate();
    CHECK(lr_module_destroy(module.get()) == LR_ERROR_BUSY);
    CHECK(msg().find("used by") != std::string::npos);
    void* gone = dz.data();
    dz.reset();
    CHECK(lr_graph_exec_launch(e.get(), nullptr) == LR_ERROR_INVALID_ARGUMENT);
    CHECK(msg().find("no longer allocated") != std::string::npos);
    (void)gone;
    lrrt::Graph again(s.device);  // still refused while the first graph lives
    CHECK(lr_module_destroy(module.get()) == LR_ERROR_BUSY);
  }
  // An empty graph replays as a marker.
  {
    lrrt::Graph empty(s.device);
    auto e = empty.instantiate();
    lrrt::Queue q(s.device);
    e.launch();
    e.launch(q);
    e.synchronize();
    CHECK(e.complete());
    CHECK(plan_of(e)["nodes"].empty());
  }
  size_t length = 0;
  CHECK(lr_graph_exec_get_plan(nullptr, nullptr, 0, &length) == LR_ERROR_INVALID_ARGUMENT);
  CHECK(lr_graph_exec_query(nullptr, nullptr) == LR_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("graph replay: the plan through the C ABI, and lr_synchronize waits for replays on every lane") {
  point_hsa_at_standin();
  lrrt::Runtime runtime;
  Setup s("host");
  const uint32_t n = 1024;
  auto x = random_whole(n, -10, 10);
  lrrt::DeviceBuffer dx(s.device, n * 4);
  std::vector<lrrt::DeviceBuffer> ys;
  lrrt::Graph g(s.device);
  lrrt::copy_to_device(dx, x);
  for (int i = 0; i < 8; ++i) {  // fan-out of 8 independent kernels
    ys.emplace_back(s.device, n * 4);
    g.add_fill(ys.back().data(), n, 1.0f);
    g.add_kernel(s.saxpy, config_for(n, 128), SaxpyArgs{float(i), dx.data(), ys.back().data(), n},
                 {lrrt::read_access(dx), lrrt::read_write_access(ys.back())});
  }
  lr_graph_instantiate_options_t options{4, 0};
  auto exec = g.instantiate(&options);
  size_t length = 0;
  REQUIRE(lr_graph_exec_get_plan(exec.get(), nullptr, 0, &length) == LR_SUCCESS);
  std::string small(10, 'x');
  CHECK(lr_graph_exec_get_plan(exec.get(), small.data(), small.size(), &length) == LR_ERROR_INVALID_ARGUMENT);
  CHECK(small[0] == '\0');
  auto plan = plan_of(exec);
  CHECK(plan.dump().size() == length);
  CHECK(plan["lanes"] == 4);
  CHECK(plan["width"] == 8);
  CHECK(plan["edges"].size() == 8);  // each fill before its kernel, nothing across
  for (const auto& e : plan["edges"]) CHECK(e["to"].get<int>() == e["from"].get<int>() + 1);
  // The generic replay forks lanes off the launch queue; the host task DAG
  // runs ready nodes on any pool thread and completes as one operation.
  bool fork = false, completion = false;
  for (const auto& sync : plan["sync"]) {
    fork |= sync["kind"] == "fork";
    completion |= sync["kind"] == "completion";
  }
  CHECK(completion);
  if (plan["lowering"] == "generic") CHECK(fork);
  for (int r = 0; r < 3; ++r) exec.launch();
  s.device.synchronize();  // lr_synchronize: every lane
  CHECK(exec.complete());
  for (int i = 0; i < 8; ++i) {
    std::vector<float> y(n, kPoison);
    lrrt::copy_to_host(y, ys[size_t(i)]);
    for (uint32_t k = 0; k < n; ++k) REQUIRE(y[k] == 1.0f + float(i) * x[k]);
  }
}

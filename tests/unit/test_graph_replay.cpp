// Retained replay end to end through the C ABI and the C++ wrapper, on the
// host backend, on the hsa stand-in (the generic replay over each backend's
// queues) and on cuda where there is one: a 1000-step saxpy chain, a diamond,
// a two-stage reduction; and where the tests find their kernels. The rest of
// retained replay on every backend: test_graph_replay_running.cpp (argument
// patches, destroying and synchronizing while a replay runs),
// test_graph_replay_c_abi.cpp (registered memory, errors, the plan) and
// test_graph_replay_cuda.cpp (the CUDA graph lowering).
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

// What instantiation lowers a graph to on each backend.
std::string expected_lowering(const std::string& backend) {
  return backend == "cuda" ? "cuda-graph" : backend == "hsa" ? "hsa-aql" : "host task DAG";
}

bool has_edge(const nlohmann::json& plan, uint32_t from, uint32_t to) {
  for (const auto& e : plan["edges"])
    if (e["from"] == from && e["to"] == to) return true;
  return false;
}

}  // namespace

TEST_CASE("graph replay: the kernels come from LRRT_TEST_KERNEL_DIR and LRRT_CTS_TEST_KERNEL_DIR when set, as in every GPU test") {
  // Before the fix the replay tests read the folders baked in at configure
  // time: a build run from another folder (the GPU machine) found none.
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("lrrt-kernel-dir-" + std::to_string(rng()()));
  fs::create_directories(dir / "kernels");
  fs::create_directories(dir / "test-kernels");
  const std::string kernels = kernel_dir(), tests = test_kernel_dir();  // the build's, before the variables
  // Files that tell where they were read from: vector_add's library under
  // saxpy's name, saxpy's under the error kernels' name.
  fs::copy_file(kernels + "/vector_add.host.so", dir / "kernels" / "saxpy.host.so");
  fs::copy_file(kernels + "/saxpy.host.so", dir / "test-kernels" / "error_kernels.host.so");
  auto set = [](const char* name, const std::optional<std::string>& value) {
    if (value) setenv(name, value->c_str(), 1);
    else unsetenv(name);
  };
  auto old = [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
  const auto old_kernels = old("LRRT_TEST_KERNEL_DIR"), old_tests = old("LRRT_CTS_TEST_KERNEL_DIR");
  set("LRRT_TEST_KERNEL_DIR", (dir / "kernels").string());
  set("LRRT_CTS_TEST_KERNEL_DIR", (dir / "test-kernels").string());
  {
    lrrt::Runtime runtime;
    auto device = lrrt::Device::select("host");
    CHECK(kernel_file("host", "saxpy") == (dir / "kernels" / "saxpy.host.so").string());
    CHECK(error_kernels_file() == (dir / "test-kernels" / "error_kernels.host.so").string());
    CHECK(error_kernels_file("cuda") == (dir / "test-kernels" / "error_kernels.ptx").string());
    lrrt::Module from_kernel_dir(device, read_file(kernel_file("host", "saxpy")));
    CHECK_NOTHROW((void)from_kernel_dir.kernel("vector_add_f32"));
    lrrt::Module from_test_dir(device, read_file(error_kernels_file()));
    CHECK_NOTHROW((void)from_test_dir.kernel("saxpy"));
  }
  set("LRRT_TEST_KERNEL_DIR", old_kernels);
  set("LRRT_CTS_TEST_KERNEL_DIR", old_tests);
  fs::remove_all(dir);
  // Unset (or empty), the build's folders.
  set("LRRT_TEST_KERNEL_DIR", std::string());
  CHECK(kernel_dir() == std::string(LRRT_TEST_KERNEL_DIR));
  set("LRRT_TEST_KERNEL_DIR", old_kernels);
  CHECK(tests == (old_tests && !old_tests->empty() ? *old_tests : fs::path(LRRT_TEST_ERROR_KERNELS).parent_path().string()));
}

TEST_CASE("graph replay: a 1000-step saxpy chain gives y0 + 1000*a*x, replayed and eager") {
  point_hsa_at_standin();
  lrrt::Runtime runtime;
  for (const auto& backend : replay_backends()) {
    CAPTURE(backend);
    Setup s(backend);
    const uint32_t n = 3000, steps = 1000;
    const float a = std::array{0.25f, 0.5f, 2.0f}[rng()() % 3];
    auto x = random_whole(n, -64, 64);
    auto y0 = random_whole(n, -1000, 1000);
    lrrt::PinnedHostBuffer hx(s.device, n * 4), hy0(s.device, n * 4), out(s.device, n * 4);
    std::memcpy(hx.data(), x.data(), n * 4);
    std::memcpy(hy0.data(), y0.data(), n * 4);
    lrrt::DeviceBuffer dx(s.device, n * 4), dy(s.device, n * 4);

    lrrt::Graph graph(s.device);
    auto copy_x = graph.add_copy(dx.data(), hx.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE);
    auto copy_y = graph.add_copy(dy.data(), hy0.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE);
    SaxpyArgs args{a, dx.data(), dy.data(), n};
    std::vector<lrrt::GraphNode> chain;
    for (uint32_t i = 0; i < steps; ++i)
      chain.push_back(graph.add_kernel(s.saxpy, config_for(n, 256), args,
                                       {lrrt::read_access(dx), lrrt::read_write_access(dy)}));
    auto copy_out = graph.add_copy(out.data(), dy.data(), n * 4, LR_MEMCPY_DEVICE_TO_HOST);
    CHECK(copy_x == 0);
    CHECK(copy_y == 1);
    CHECK(chain.back() == steps + 1);
    CHECK(copy_out == steps + 2);
    lrrt::GraphExec exec = graph.instantiate();

    auto plan = plan_of(exec);
    CHECK(plan["lowering"].get<std::string>().rfind(expected_lowering(backend), 0) == 0);
    CHECK(plan["nodes"].size() == steps + 3);
    // Two copies into the first step, one edge per step, the copy out: the
    // reduction removed every x -> step k edge but the first.
    CHECK(plan["edges"].size() == 2 + (steps - 1) + 1);
    CHECK(has_edge(plan, 0, 2));
    CHECK(has_edge(plan, 1, 2));
    CHECK_FALSE(has_edge(plan, 0, 3));
    CHECK(has_edge(plan, steps + 1, steps + 2));

    for (int replay = 0; replay < 3; ++replay) {
      for (uint32_t i = 0; i < n; ++i) out.as<float>()[i] = kPoison;
      exec.launch();
      exec.synchronize();
      CHECK(exec.complete());
      for (uint32_t i = 0; i < n; ++i)
        REQUIRE_MESSAGE(out.as<float>()[i] == y0[i] + float(steps) * a * x[i], "replay ", replay, " element ", i);
    }

    // The same steps launched one at a time give the same result.
    lrrt::copy_to_device(dy, y0);
    lrrt::copy_to_device(dx, x);
    for (uint32_t i = 0; i < steps; ++i) lrrt::launch(s.saxpy, config_for(n, 256), args);
    std::vector<float> eager(n, kPoison);
    lrrt::copy_to_host(eager, dy);
    for (uint32_t i = 0; i < n; ++i) REQUIRE(eager[i] == y0[i] + float(steps) * a * x[i]);
  }
}

TEST_CASE("graph replay: a diamond on one, two and four lanes, independent branches are not ordered") {
  point_hsa_at_standin();
  lrrt::Runtime runtime;
  for (const auto& backend : replay_backends()) {
    CAPTURE(backend);
    Setup s(backend);
    const uint32_t n = 5000;
    auto in = random_whole(n, -100, 100), b0 = random_whole(n, -100, 100), u = random_whole(n, -100, 100);
    lrrt::PinnedHostBuffer h_in(s.device, n * 4), h_b0(s.device, n * 4), h_u(s.device, n * 4), out(s.device, n * 4);
    std::memcpy(h_in.data(), in.data(), n * 4);
    std::memcpy(h_b0.data(), b0.data(), n * 4);
    std::memcpy(h_u.data(), u.data(), n * 4);
    lrrt::DeviceBuffer d_in(s.device, n * 4), d_b(s.device, n * 4), d_u(s.device, n * 4), d_c1(s.device, n * 4),
        d_c2(s.device, n * 4), d_out(s.device, n * 4);
    auto cfg = config_for(n, 128);

    lrrt::Graph g(s.device);
    g.add_copy(d_in.data(), h_in.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE);  // 0
    g.add_copy(d_b.data(), h_b0.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE);   // 1
    g.add_copy(d_u.data(), h_u.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE);    // 2
    // P: b = 2*in + b0
    auto p = g.add_kernel(s.saxpy, cfg, SaxpyArgs{2.0f, d_in.data(), d_b.data(), n},
                          {lrrt::read_access(d_in), lrrt::read_write_access(d_b)});
    // C1: c1 = b + u; C2: c2 = b + b
    auto c1 = g.add_kernel(s.add, cfg, AddArgs{d_b.data(), d_u.data(), d_c1.data(), n},
                           {lrrt::read_access(d_b), lrrt::read_access(d_u), lrrt::write_access(d_c1)});
    auto c2 = g.add_kernel(s.add, cfg, AddArgs{d_b.data(), d_b.data(), d_c2.data(), n},
                           {lrrt::read_access(d_b), lrrt::write_access(d_c2)});
    // J: out = c1 + c2
    auto j = g.add_kernel(s.add, cfg, AddArgs{d_c1.data(), d_c2.data(), d_out.data(), n},
                          {lrrt::read_access(d_c1), lrrt::read_access(d_c2), lrrt::write_access(d_out)});
    g.add_copy(out.data(), d_out.data(), n * 4, LR_MEMCPY_DEVICE_TO_HOST);

    for (uint32_t lanes : {1u, 2u, 4u}) {
      CAPTURE(lanes);
      lr_graph_instantiate_options_t options{lanes, 0};
      lrrt::GraphExec exec = g.instantiate(&options);
      auto plan = plan_of(exec);
      CHECK(has_edge(plan, p, c1));
      CHECK(has_edge(plan, p, c2));
      CHECK(has_edge(plan, c1, j));
      CHECK(has_edge(plan, c2, j));
      CHECK_FALSE(has_edge(plan, c1, c2));
      CHECK_FALSE(has_edge(plan, c2, c1));
      if (lanes > 1) CHECK(plan["nodes"][c1]["lane"] != plan["nodes"][c2]["lane"]);
      CHECK(plan["nodes"][j]["lane"] == 0);
      for (int replay = 0; replay < 2; ++replay) {
        for (uint32_t i = 0; i < n; ++i) out.as<float>()[i] = kPoison;
        lrrt::Queue queue(s.device);
        lrrt::Event done(s.device);
        exec.launch(queue, done);
        done.synchronize();
        for (uint32_t i = 0; i < n; ++i) {
          float b = 2.0f * in[i] + b0[i];
          REQUIRE_MESSAGE(out.as<float>()[i] == (b + u[i]) + (b + b), "element ", i);
        }
      }
    }
  }
}

TEST_CASE("graph replay: a two-stage reduction with fills and a pageable copy back") {
  point_hsa_at_standin();
  lrrt::Runtime runtime;
  for (const auto& backend : replay_backends()) {
    CAPTURE(backend);
    Setup s(backend);
    const uint32_t block = 256, groups = 256, n = block * groups - 77;  // the last group is partial
    auto in = random_whole(n, -100, 100);
    lrrt::DeviceBuffer d_in(s.device, size_t(n) * 4), d_partial(s.device, groups * 4), d_total(s.device, 64);
    std::vector<float> partial(groups), total(1);
    lrrt::Graph g(s.device);
    g.add_copy(d_in.data(), in.data(), size_t(n) * 4, LR_MEMCPY_HOST_TO_DEVICE);
    g.add_fill(d_partial.data(), groups, kPoison);  // overwritten by stage 1
    g.add_fill(d_total.data(), 16, kPoison);
    g.add_kernel(s.reduce, lr_launch_config_t{{groups, 1, 1}, {block, 1, 1}, 0},
                 ReduceArgs{d_in.data(), d_partial.data(), n},
                 {lrrt::read_access(d_in), lrrt::write_access(d_partial)});
    g.add_kernel(s.reduce, lr_launch_config_t{{1, 1, 1}, {groups, 1, 1}, 0},
                 ReduceArgs{d_partial.data(), d_total.data(), groups},
                 {lrrt::read_access(d_partial), lrrt::write_access(d_total.data(), 4)});
    g.add_copy(partial.data(), d_partial.data(), groups * 4, LR_MEMCPY_DEVICE_TO_HOST);
    g.add_copy(total.data(), d_total.data(), 4, LR_MEMCPY_DEVICE_TO_HOST);
    lrrt::GraphExec exec = g.instantiate();
    auto plan = plan_of(exec);
    CHECK(has_edge(plan, 1, 3));  // the fill before stage 1 (WAW)
    CHECK(has_edge(plan, 3, 4));  // stage 1 before stage 2 (RAW)
    CHECK(has_edge(plan, 2, 4));
    CHECK(has_edge(plan, 4, 6));
    CHECK(has_edge(plan, 3, 5));
    CHECK_FALSE(has_edge(plan, 5, 6));  // two reads of different buffers

    // The fill alone: pattern in every element.
    for (int replay = 0; replay < 2; ++replay) {
      std::fill(partial.begin(), partial.end(), 1234.5f);
      total[0] = 1234.5f;
      exec.launch();
      exec.synchronize();
      float sum = 0;
      for (uint32_t gi = 0; gi < groups; ++gi) {
        float expect = 0;
        for (uint32_t i = gi * block; i < std::min(n, (gi + 1) * block); ++i) expect += in[i];
        REQUIRE_MESSAGE(partial[gi] == expect, "group ", gi);
        sum += expect;
      }
      CHECK(total[0] == sum);
    }
    // What the fill writes, seen through a graph of only fills.
    lrrt::Graph fills(s.device);
    std::vector<uint32_t> words(groups, 0);
    fills.add_fill(d_partial.data(), groups, uint32_t(0xA5A5C3C3u));
    fills.add_copy(words.data(), d_partial.data(), groups * 4, LR_MEMCPY_DEVICE_TO_HOST);
    auto fexec = fills.instantiate();
    fexec.launch();
    fexec.synchronize();
    for (uint32_t w : words) REQUIRE(w == 0xA5A5C3C3u);
  }
}

// Retained replay while a replay runs (test_graph_replay.cpp has the
// scenarios): argument patches between replays, refused or waited for while
// a replay runs (on hsa taken by the next replay), destroying a running exec,
// replays across queues, and synchronize and query covering the replay, not
// work queued behind it. A Gate holds the default queue.
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

// The test kernels (tests/kernels) nvcc built next to the host library.
std::string cuda_error_kernels() { return error_kernels_file("cuda"); }

// Holds the device's default queue until open(): on host and cuda a kernel
// spinning on a flag (on cuda the nvcc-built PTX, reading the flag in pinned
// host memory), on the stand-in a copy the held copy engine does not start.
// Work submitted after close() deterministically has not run before open().
// LRRT_TEST_NO_CUDA_GATE=1 leaves the gated cases out on cuda.
class Gate {
 public:
  static bool available(const std::string& backend) {
    if (backend != "cuda") return true;
    return !std::getenv("LRRT_TEST_NO_CUDA_GATE") && std::ifstream(cuda_error_kernels()).good();
  }
  explicit Gate(Setup& s) : setup_(s), flag_(s.device, 64) {
    std::memset(flag_.data(), 0, 64);
    if (spins()) {
      module_ = std::make_unique<lrrt::Module>(
          s.device, read_file(error_kernels_file(s.backend)));
      spin_ = module_->kernel("spin_forever");
    }
  }
  ~Gate() { open(); }
  void close() {
    if (spins()) {
      const void* flag = flag_.data();
      lrrt::launch(spin_, lr_launch_config_t{{1, 1, 1}, {1, 1, 1}, 0}, flag);
    } else {
#if defined(LRRT_TEST_HSA)
      hold(1);
      lrrt::check(lr_memcpy_async(setup_.device.get(), scratch(), flag_.data(), 64, LR_MEMCPY_HOST_TO_DEVICE, nullptr),
                  "lr_memcpy_async");
#endif
    }
    closed_ = true;
  }
  void open() {
    if (!closed_) return;
    closed_ = false;
    if (spins()) {
      std::atomic_ref<uint32_t>(*flag_.as<uint32_t>()).store(1);
    } else {
#if defined(LRRT_TEST_HSA)
      hold(0);
#endif
    }
  }

 private:
  bool spins() const { return setup_.backend == "host" || setup_.backend == "cuda"; }
#if defined(LRRT_TEST_HSA)
  void hold(int on) {
    void* lib = dlopen(hsa_standin().c_str(), RTLD_NOW | RTLD_NOLOAD);
    REQUIRE(lib);
    auto fn = reinterpret_cast<lrrt_hsa_standin_hold_copies_fn>(dlsym(lib, "lrrt_hsa_standin_hold_copies"));
    REQUIRE(bool(fn));
    fn(on);
    dlclose(lib);
  }
  void* scratch() {
    if (!scratch_.data()) scratch_ = lrrt::DeviceBuffer(setup_.device, 64);
    return scratch_.data();
  }
  lrrt::DeviceBuffer scratch_;
#endif
  Setup& setup_;
  lrrt::PinnedHostBuffer flag_;
  std::unique_ptr<lrrt::Module> module_;
  lrrt::Kernel spin_;
  bool closed_ = false;
};

}  // namespace

TEST_CASE("graph replay: argument patches between replays, refused or waited for while a replay runs") {
  point_hsa_at_standin();
  lrrt::Runtime runtime;
  for (const auto& backend : replay_backends()) {
    CAPTURE(backend);
    Setup s(backend);
    const uint32_t n = 2048;
    auto x = random_whole(n, -64, 64), y0 = random_whole(n, -1000, 1000);
    lrrt::PinnedHostBuffer hx(s.device, n * 4), hy0(s.device, n * 4), out(s.device, n * 4);
    std::memcpy(hx.data(), x.data(), n * 4);
    std::memcpy(hy0.data(), y0.data(), n * 4);
    lrrt::DeviceBuffer dx(s.device, n * 4), dy(s.device, n * 4), other(s.device, n * 4);
    auto build = [&](lrrt::Graph& g) {
      g.add_copy(dx.data(), hx.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE);
      g.add_copy(dy.data(), hy0.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE);
      auto node = g.add_kernel(s.saxpy, config_for(n, 64), SaxpyArgs{1.0f, dx.data(), dy.data(), n},
                               {lrrt::read_access(dx), lrrt::read_write_access(dy)});
      g.add_copy(out.data(), dy.data(), n * 4, LR_MEMCPY_DEVICE_TO_HOST);
      return node;
    };
    auto expect = [&](float a, const char* what) {
      for (uint32_t i = 0; i < n; ++i) REQUIRE_MESSAGE(out.as<float>()[i] == y0[i] + a * x[i], what, " element ", i);
    };
    auto poison = [&] {
      for (uint32_t i = 0; i < n; ++i) out.as<float>()[i] = kPoison;
    };

    lrrt::Graph g(s.device);
    auto saxpy = build(g);
    lrrt::GraphExec exec = g.instantiate();
    for (float a : {1.0f, 2.0f, -0.5f, 4.0f}) {
      exec.set_kernarg(saxpy, 0, a);
      poison();
      exec.launch();
      exec.synchronize();
      expect(a, "patched between replays");
    }

    // On hsa a patch never waits: the replay in flight keeps its own copy of
    // the arguments, the patch goes to the next replay (lrrt.h).
    if (backend == "hsa") {
      Gate gate(s);
      gate.close();
      poison();
      exec.launch();
      CHECK_FALSE(exec.complete());
      float a = 8.0f;
      CHECK(lr_graph_exec_set_kernargs(exec.get(), saxpy, 0, &a, 4) == LR_SUCCESS);
      CHECK_FALSE(exec.complete());
      gate.open();
      exec.synchronize();
      expect(4.0f, "the replay in flight kept its arguments");
      poison();
      exec.launch();
      exec.synchronize();
      expect(8.0f, "the replay after the patch");
      exec.set_kernarg(saxpy, 0, 4.0f);
    }
    // Elsewhere refused while running: LR_ERROR_BUSY, nothing changes.
    if (backend != "hsa" && Gate::available(backend)) {
      Gate gate(s);
      gate.close();
      poison();
      exec.launch();
      CHECK_FALSE(exec.complete());
      float a = 8.0f;
      CHECK(lr_graph_exec_set_kernargs(exec.get(), saxpy, 0, &a, 4) == LR_ERROR_BUSY);
      std::string msg = lr_last_error_message();
      CHECK(msg.find("still running") != std::string::npos);
      CHECK(msg.find("lr_graph_exec_synchronize") != std::string::npos);
      gate.open();
      exec.synchronize();
      expect(4.0f, "the refused patch changed nothing");
      exec.set_kernarg(saxpy, 0, a);
      poison();
      exec.launch();
      exec.synchronize();
      expect(8.0f, "patched after synchronize");
    }

    // Waited for with LR_GRAPH_PATCH_WAITS: the running replay finishes with
    // the old value, the next one uses the new one.
    if (backend != "hsa" && Gate::available(backend)) {
      lr_graph_instantiate_options_t options{0, LR_GRAPH_PATCH_WAITS};
      lrrt::GraphExec waits = g.instantiate(&options);
      waits.set_kernarg(saxpy, 0, 3.0f);
      Gate gate(s);
      gate.close();
      poison();
      waits.launch();
      std::thread opener([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        gate.open();
      });
      float a = -2.0f;
      CHECK(lr_graph_exec_set_kernargs(waits.get(), saxpy, 0, &a, 4) == LR_SUCCESS);
      opener.join();
      CHECK(waits.complete());
      expect(3.0f, "the replay the patch waited for");
      poison();
      waits.launch();
      waits.synchronize();
      expect(-2.0f, "the replay after the patch");
    }

    // Pointer patches stay within the declared ranges.
    {
      void* undeclared = other.data();
      CHECK(lr_graph_exec_set_kernargs(exec.get(), saxpy, 16, &undeclared, 8) == LR_ERROR_INVALID_ARGUMENT);
      std::string msg = lr_last_error_message();
      CHECK(msg.find("(offset 16)") != std::string::npos);  // 'y', or its index without names
      CHECK(msg.find("no access declaration") != std::string::npos);
      uint32_t half = n / 2;
      CHECK(status_of([&] { exec.set_kernarg(saxpy, 24, half); }) == LR_SUCCESS);  // n is a scalar
      float a = 0;
      CHECK(lr_graph_exec_set_kernargs(exec.get(), saxpy, 30, &a, 4) == LR_ERROR_INVALID_ARGUMENT);
      CHECK(std::string(lr_last_error_message()).find("outside its 32 bytes") != std::string::npos);
      CHECK(lr_graph_exec_set_kernargs(exec.get(), 0, 0, &a, 4) == LR_ERROR_INVALID_ARGUMENT);
      CHECK(std::string(lr_last_error_message()).find("is not a kernel node") != std::string::npos);
      CHECK(lr_graph_exec_set_kernargs(exec.get(), 99, 0, &a, 4) == LR_ERROR_INVALID_ARGUMENT);
      // With n halved only the first half changes.
      exec.set_kernarg(saxpy, 0, 1.0f);
      poison();
      exec.launch();
      exec.synchronize();
      for (uint32_t i = 0; i < n; ++i)
        REQUIRE(out.as<float>()[i] == (i < half ? y0[i] + x[i] : y0[i]));
    }
  }
}

TEST_CASE("graph replay: destroying a running exec waits for it, replays follow each other across queues") {
  point_hsa_at_standin();
  lrrt::Runtime runtime;
  for (const auto& backend : replay_backends()) {
    CAPTURE(backend);
    Setup s(backend);
    const uint32_t n = 4096;
    auto x = random_whole(n, -64, 64), y0 = random_whole(n, -1000, 1000);
    lrrt::PinnedHostBuffer hy(s.device, n * 4), out(s.device, n * 4);
    lrrt::DeviceBuffer dx(s.device, n * 4), dy(s.device, n * 4);
    lrrt::copy_to_device(dx, x);

    // Destroy while running: the call waits, the replay completes.
    if (Gate::available(backend)) {
      std::memcpy(hy.data(), y0.data(), n * 4);
      lrrt::Graph g(s.device);
      g.add_copy(dy.data(), hy.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE);
      g.add_kernel(s.saxpy, config_for(n, 256), SaxpyArgs{2.0f, dx.data(), dy.data(), n},
                   {lrrt::read_access(dx), lrrt::read_write_access(dy)});
      g.add_copy(out.data(), dy.data(), n * 4, LR_MEMCPY_DEVICE_TO_HOST);
      lr_graph_exec_t* exec = nullptr;
      REQUIRE(lr_graph_instantiate(g.get(), nullptr, &exec) == LR_SUCCESS);
      for (uint32_t i = 0; i < n; ++i) out.as<float>()[i] = kPoison;
      Gate gate(s);
      gate.close();
      REQUIRE(lr_graph_exec_launch(exec, nullptr) == LR_SUCCESS);
      uint32_t complete = 1;
      CHECK(lr_graph_exec_query(exec, &complete) == LR_SUCCESS);
      CHECK(complete == 0);
      // The recording can go while the exec runs.
      CHECK(lr_graph_destroy(g.get()) == LR_SUCCESS);
      std::thread opener([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        gate.open();
      });
      CHECK(lr_graph_exec_destroy(exec) == LR_SUCCESS);
      opener.join();
      for (uint32_t i = 0; i < n; ++i) REQUIRE(out.as<float>()[i] == y0[i] + 2.0f * x[i]);
      CHECK(lr_graph_exec_launch(exec, nullptr) == LR_ERROR_INVALID_ARGUMENT);
      CHECK(std::string(lr_last_error_message()).find("destroyed graph exec") != std::string::npos);
      (void)g;
    }

    // A graph that only accumulates: replays on alternating queues must not
    // overlap, each adds a*x once.
    {
      lrrt::copy_to_device(dy, y0);
      lrrt::Graph g(s.device);
      for (int i = 0; i < 4; ++i)
        g.add_kernel(s.saxpy, config_for(n, 256), SaxpyArgs{0.5f, dx.data(), dy.data(), n},
                     {lrrt::read_access(dx), lrrt::read_write_access(dy)});
      auto exec = g.instantiate();
      lrrt::Queue q1(s.device), q2(s.device);
      const int replays = 12;
      for (int r = 0; r < replays; ++r) {
        if (r % 3 == 0) exec.launch();
        else exec.launch(r % 3 == 1 ? q1 : q2);
      }
      s.device.synchronize();
      std::vector<float> y(n, kPoison);
      lrrt::copy_to_host(y, dy);
      for (uint32_t i = 0; i < n; ++i) REQUIRE(y[i] == y0[i] + float(4 * replays) * 0.5f * x[i]);
    }
  }
}

// A replay's completion is the replay's own, not its queue's: work queued
// behind it (a gate that does not open until the test says so) is not
// waited for. On cuda the replay adds no event to its stream (a deferred
// completion marker): the gated launch behind it must record the marker
// first, or this synchronize would wait for the gate and time out.
TEST_CASE("graph replay: synchronize and query cover the replay, not work queued behind it on its queue") {
  point_hsa_at_standin();
  lrrt::Runtime runtime;
  for (const auto& backend : replay_backends()) {
    CAPTURE(backend);
    if (!Gate::available(backend)) continue;
    Setup s(backend);
    const uint32_t n = 2048;
    auto x = random_whole(n, -64, 64), y0 = random_whole(n, -1000, 1000);
    lrrt::DeviceBuffer dx(s.device, n * 4), dy(s.device, n * 4);
    lrrt::copy_to_device(dx, x);
    lrrt::copy_to_device(dy, y0);
    lrrt::Graph g(s.device);
    for (int i = 0; i < 2; ++i)
      g.add_kernel(s.saxpy, config_for(n, 256), SaxpyArgs{1.5f, dx.data(), dy.data(), n},
                   {lrrt::read_access(dx), lrrt::read_write_access(dy)});
    auto exec = g.instantiate();
    const int replays = 3;
    for (int r = 0; r < replays; ++r) exec.launch();
    Gate gate(s);
    gate.close();  // on the same (default) queue, behind the replays
    lr_set_wait_timeout_ms(20000);
    REQUIRE(lr_graph_exec_synchronize(exec.get()) == LR_SUCCESS);
    uint32_t complete = 0;
    CHECK(lr_graph_exec_query(exec.get(), &complete) == LR_SUCCESS);
    CHECK(complete == 1);
    gate.open();
    s.device.synchronize();
    std::vector<float> y(n, kPoison);
    lrrt::copy_to_host(y, dy);
    for (uint32_t i = 0; i < n; ++i) REQUIRE(y[i] == y0[i] + float(2 * replays) * 1.5f * x[i]);
  }
}

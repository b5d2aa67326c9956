// Retained replay end to end through the C ABI and the C++ wrapper, on the
// host backend and on the hsa stand-in (the generic replay over each
// backend's queues): a 1000-step saxpy chain, a diamond, a two-stage
// reduction, argument patches between replays (refused and waited for while
// a replay runs), destroying a running exec, errors.
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
#include "replay_test_support.hpp"
#if defined(LRRT_TEST_HSA)
#include "standin_hooks.h"
#endif

namespace {

using namespace lrrt::test;

// Backends the replay runs on here: host always, the hsa stand-in when the
// AMD kernels were built, cuda on a machine with an NVIDIA GPU and the PTX
// kernels (the lead's GPU runs). With LRRT_TEST_REQUIRE_CUDA=1 (the gpu-labelled
// ctest cuda_gpu_graph_replay) a missing cuda is a failure, not a skip. Call
// with the runtime initialised.
std::vector<std::string> replay_backends() {
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

// What instantiation lowers a graph to on each backend.
std::string expected_lowering(const std::string& backend) {
  return backend == "cuda" ? "cuda-graph" : backend == "hsa" ? "hsa-aql" : "host task DAG";
}

// The test kernels (tests/kernels) nvcc built next to the host library.
std::string cuda_error_kernels() { return error_kernels_file("cuda"); }

// A device, its kernels and a way to hold the default queue back.
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

nlohmann::json plan_of(const lrrt::GraphExec& exec) { return nlohmann::json::parse(exec.plan_json()); }

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

TEST_CASE("graph replay: on cuda a CUDA graph of kernel, memcpy and memset nodes, fills at any alignment") {
  point_hsa_at_standin();
  lrrt::Runtime runtime;
  const auto backends = replay_backends();
  if (std::find(backends.begin(), backends.end(), "cuda") == backends.end()) {
    MESSAGE("no cuda device with the PTX kernels here: the CUDA graph lowering is not exercised");
    return;
  }
  Setup s("cuda");
  const uint32_t n = 4099;
  auto x = random_whole(n, -64, 64);
  const float a = float(1 + rng()() % 7);
  lrrt::PinnedHostBuffer hx(s.device, n * 4), out(s.device, n * 4);
  std::memcpy(hx.data(), x.data(), n * 4);
  lrrt::DeviceBuffer dx(s.device, n * 4), dy(s.device, n * 4);
  // A byte buffer with fills at odd, 2- and 4-byte aligned offsets; the bytes
  // between them keep what was uploaded.
  const size_t bytes = 4096;
  lrrt::DeviceBuffer d_bytes(s.device, bytes);
  std::vector<uint8_t> initial(bytes);
  for (auto& b : initial) b = uint8_t(rng()());
  lrrt::copy_to_device(d_bytes, initial);
  auto* base = static_cast<uint8_t*>(d_bytes.data());
  const uint8_t lo = uint8_t(rng()()), hi = uint8_t(lo ^ (1 + rng()() % 255));
  const uint16_t half = uint16_t(lo | (hi << 8));  // two different bytes
  const uint8_t byte = uint8_t(rng()());
  const uint32_t word = 0x01020304u + uint32_t(rng()() % 0x10000) * 0x01000000u;
  struct Region {
    size_t offset, size;
    std::vector<uint8_t> pattern;
  };
  const std::vector<Region> regions{
      {1, 2 * 301, {uint8_t(half), uint8_t(half >> 8)}},  // 2-byte pattern at an odd address: no memset fits
      {1000, 8, {byte}},                                   // 1 byte widened to 4-byte elements
      {1010, 6, {byte}},                                   // 1 byte widened to 2-byte elements
      {2048, 4 * 100, {uint8_t(word), uint8_t(word >> 8), uint8_t(word >> 16), uint8_t(word >> 24)}},
  };
  std::vector<uint8_t> expect = initial;
  for (const auto& r : regions)
    for (size_t i = 0; i < r.size; ++i) expect[r.offset + i] = r.pattern[i % r.pattern.size()];
  std::vector<uint8_t> seen(bytes);  // pageable: the copy back's host side

  lrrt::Graph g(s.device);
  g.add_copy(dx.data(), hx.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE);
  g.add_fill(dy.data(), n, 1.0f);
  auto saxpy = g.add_kernel(s.saxpy, config_for(n, 128), SaxpyArgs{a, dx.data(), dy.data(), n},
                            {lrrt::read_access(dx), lrrt::read_write_access(dy)});
  auto unaligned = g.add_fill(base + regions[0].offset, regions[0].size / 2, half);
  g.add_fill(base + regions[1].offset, regions[1].size, byte);
  g.add_fill(base + regions[2].offset, regions[2].size, byte);
  g.add_fill(base + regions[3].offset, regions[3].size / 4, word);
  g.add_copy(out.data(), dy.data(), n * 4, LR_MEMCPY_DEVICE_TO_HOST);
  auto pageable = g.add_copy(seen.data(), d_bytes.data(), bytes, LR_MEMCPY_DEVICE_TO_HOST);
  lrrt::GraphExec exec = g.instantiate();

  auto plan = plan_of(exec);
  CHECK(plan["lowering"] == "cuda-graph");
  REQUIRE(!plan["sync"].empty());
  CHECK(plan["sync"][0]["kind"] == "graph");
  // 3 copies and the unaligned fill's one block copy; 4 memsets; every derived edge.
  const std::string summary =
      "CUDA graph, 1 kernel nodes, 4 memcpy, 4 memset, " + std::to_string(plan["edges"].size()) + " edges";
  CHECK(plan["sync"][0]["why"].get<std::string>().find(summary) != std::string::npos);
  MESSAGE(plan["sync"][0]["why"].get<std::string>());
  bool fill_copied = false, pageable_named = false;
  for (const auto& sync : plan["sync"]) {
    fill_copied |= sync["kind"] == "fill" && sync["node"] == unaligned;
    pageable_named |= sync["kind"] == "pageable" && sync["node"] == pageable;
  }
  CHECK(fill_copied);
  CHECK(pageable_named);

  for (float scale : {a, -a, 0.5f}) {
    if (scale != a) exec.set_kernarg(saxpy, 0, scale);
    for (uint32_t i = 0; i < n; ++i) out.as<float>()[i] = kPoison;
    std::fill(seen.begin(), seen.end(), uint8_t(0));
    for (const auto& r : regions) seen[r.offset] = uint8_t(~expect[r.offset]);
    exec.launch();
    exec.synchronize();
    CHECK(exec.complete());
    for (uint32_t i = 0; i < n; ++i) REQUIRE_MESSAGE(out.as<float>()[i] == 1.0f + scale * x[i], "element ", i);
    for (size_t i = 0; i < bytes; ++i) REQUIRE_MESSAGE(seen[i] == expect[i], "byte ", i);
  }

  // An empty graph on cuda: an event on the launch stream, on either queue.
  lrrt::Graph empty(s.device);
  auto e = empty.instantiate();
  lrrt::Queue q(s.device);
  e.launch();
  e.launch(q);
  e.synchronize();
  CHECK(e.complete());
  CHECK(plan_of(e)["lowering"] == "cuda-graph");
}

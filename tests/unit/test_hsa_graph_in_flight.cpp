// Replays of one hsa exec in flight (src/runtime/hsa/hsa_graph.cpp: K replay
// sets of signals, packet images, kernarg copies and staging rotate). On the
// stand-in, with the launch queue held (its copy engine held behind a copy
// the replays' first packets wait for), so "in flight" is deterministic:
// R back-to-back replays of a 16-kernel chain and of a diamond are launched
// without a host wait (lr_graph_exec_get_stats counts them), each replay
// patched to write its own output slice, and every slice of every replay is
// exact in both orders; the (K+1)-th launch waits once, for the oldest; a
// pageable source is read at each launch into that replay's own staging;
// lr_synchronize, exec destroy and a fault cover every replay in flight; and
// a negative control (LRRT_TEST_SHARE_REPLAY_SIGNALS: one signal set for
// all replays in flight) gets wrong results or hangs.
#if defined(LRRT_TEST_HSA) && defined(LRRT_TEST_AMD_KERNELS)
#include <dlfcn.h>
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "lrrt/lrrt.hpp"
#include "replay_test_support.hpp"
#include "standin_hooks.h"

namespace {

using namespace lrrt::test;

std::vector<std::byte> inflight_kernel(const std::string& source) {
  return read_file(std::string(LRRT_TEST_KERNEL_DIR) + "/" + source + ".gfx1100.hsaco");
}

template <typename Fn>
Fn inflight_hook(void* lib, const char* name) {
  auto fn = reinterpret_cast<Fn>(dlsym(lib, name));
  REQUIRE_MESSAGE(bool(fn), name);
  return fn;
}

struct InFlightSetup {
  lrrt::Runtime runtime;
  lrrt::Device device;
  lrrt::Module saxpy_module, add_module;
  lrrt::Kernel saxpy, add;
  void* lib = nullptr;
  lrrt_hsa_standin_set_worst_order_fn set_worst_order = nullptr;
  lrrt_hsa_standin_hold_copies_fn hold_copies = nullptr;
  lrrt_hsa_standin_set_fault_fn set_fault = nullptr;
  lrrt::DeviceBuffer gate_dst;
  lrrt::PinnedHostBuffer gate_src;
  bool held = false;
  static lrrt::Runtime start() {
    setenv("LRRT_HSA_LIBRARY", LRRT_TEST_HSA_STANDIN, 1);
    setenv("LRRT_HSA_STANDIN_KERNEL_DIR", lrrt::test::kernel_dir().c_str(), 1);
    setenv("LRRT_WAIT_TIMEOUT_MS", "20000", 1);
    return lrrt::Runtime();
  }
  InFlightSetup()
      : runtime(start()),
        device(lrrt::Device::select("hsa")),
        saxpy_module(device, inflight_kernel("saxpy")),
        add_module(device, inflight_kernel("vector_add")),
        saxpy(saxpy_module.kernel("saxpy")),
        add(add_module.kernel("vector_add_f32")),
        gate_dst(device, 64),
        gate_src(device, 64) {
    lib = dlopen(LRRT_TEST_HSA_STANDIN, RTLD_NOW | RTLD_NOLOAD);
    REQUIRE_MESSAGE(lib, "the stand-in is not loaded");
    set_worst_order = inflight_hook<lrrt_hsa_standin_set_worst_order_fn>(lib, "lrrt_hsa_standin_set_worst_order");
    hold_copies = inflight_hook<lrrt_hsa_standin_hold_copies_fn>(lib, "lrrt_hsa_standin_hold_copies");
    set_fault = inflight_hook<lrrt_hsa_standin_set_fault_fn>(lib, "lrrt_hsa_standin_set_fault");
    set_worst_order(0);
  }
  ~InFlightSetup() {
    open_gate();
    set_worst_order(0);
    set_fault("");
    dlclose(lib);
  }
  // Holds the default queue: a copy on it the held copy engine does not
  // start; a replay's first packet waits for the queue's pending copies.
  void close_gate() {
    hold_copies(1);
    held = true;
    lrrt::check(lr_memcpy_async(device.get(), gate_dst.data(), gate_src.data(), 64, LR_MEMCPY_HOST_TO_DEVICE, nullptr),
                "lr_memcpy_async");
  }
  void open_gate() {
    if (held) hold_copies(0);
    held = false;
  }
};

std::vector<float> to_host(const lrrt::DeviceBuffer& b, size_t n) {
  std::vector<float> out(n, kPoison);
  lrrt::copy_to_host(out, b);
  return out;
}

void poison_device(const lrrt::DeviceBuffer& b, size_t n) {
  std::vector<float> p(n, kPoison);
  lrrt::copy_to_device(b, p);
}

// Polls `exec`'s stats (no exec lock) until `pred` holds; false after 20 s.
template <typename Pred>
bool inflight_wait_for(const lrrt::GraphExec& exec, Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!pred(exec.stats())) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

// A chain of `steps` saxpy kernels y += a_k x, then out_slice = y + 0 (its
// output pointer patched per replay): after replay r (counting from 0 since
// y was y0) slice r holds y0 + (r+1) * sum(a) * x.
struct Chain {
  static constexpr uint32_t n = 1024;
  InFlightSetup& s;
  uint32_t slices;
  std::vector<float> x = random_whole(n, -16, 16), y0 = random_whole(n, -1000, 1000);
  float sum_a = 0;
  lrrt::DeviceBuffer dx, dy, zero, out;
  lrrt::Graph g;
  lrrt::GraphNode copy_out{};
  Chain(InFlightSetup& setup, uint32_t steps, uint32_t slice_count)
      : s(setup), slices(slice_count), dx(s.device, n * 4), dy(s.device, n * 4), zero(s.device, n * 4),
        out(s.device, size_t(n) * 4 * slice_count), g(s.device) {
    lrrt::copy_to_device(dx, x);
    lrrt::copy_to_device(zero, std::vector<float>(n, 0.0f));
    for (uint32_t k = 0; k < steps; ++k) {
      const float a = float(int(rng()() % 7) - 3);
      sum_a += a;
      g.add_kernel(s.saxpy, config_for(n, 64), SaxpyArgs{a, dx.data(), dy.data(), n},
                   {lrrt::read_access(dx), lrrt::read_write_access(dy)});
    }
    copy_out = g.add_kernel(s.add, config_for(n, 64), AddArgs{dy.data(), zero.data(), out.data(), n},
                            {lrrt::read_access(dy), lrrt::read_access(zero), lrrt::write_access(out)});
  }
  void reset() {
    lrrt::copy_to_device(dy, y0);
    poison_device(out, size_t(n) * slices);
  }
  void* slice(uint32_t r) { return static_cast<float*>(out.data()) + size_t(r) * n; }
  // Every element of slices [0, count): replay r wrote slice r.
  void check(uint32_t count) {
    auto got = to_host(out, size_t(n) * slices);
    for (uint32_t r = 0; r < count; ++r)
      for (uint32_t i = 0; i < n; ++i)
        REQUIRE_MESSAGE(got[size_t(r) * n + i] == y0[i] + float(r + 1) * sum_a * x[i], "replay ", r, " element ", i);
  }
};

}  // namespace

TEST_CASE("hsa graph in flight: R back-to-back replays of a 16-kernel chain, no host wait, each exact in both orders") {
  InFlightSetup s;
  const uint32_t R = 6;
  Chain c(s, 16, R + 1);
  lrrt::GraphExec exec = c.g.instantiate();
  CHECK(exec.stats().max_in_flight == LR_GRAPH_DEFAULT_MAX_IN_FLIGHT);
  auto plan = nlohmann::json::parse(exec.plan_json());
  CHECK(plan["max_in_flight"] == LR_GRAPH_DEFAULT_MAX_IN_FLIGHT);
  exec.set_max_in_flight(R);
  CHECK(nlohmann::json::parse(exec.plan_json())["max_in_flight"] == R);
  for (int worst : {0, 1}) {
    CAPTURE(worst);
    s.set_worst_order(worst);
    c.reset();
    const lr_graph_exec_stats_t before = exec.stats();
    s.close_gate();
    for (uint32_t r = 0; r < R; ++r) {
      // Patched while the earlier replays are in flight: this replay only.
      exec.set_kernarg(c.copy_out, offsetof(AddArgs, c), c.slice(r));
      exec.launch();
    }
    lr_graph_exec_stats_t st = exec.stats();
    CHECK(st.replays - before.replays == R);
    CHECK(st.launch_waits == before.launch_waits);  // not one host wait
    CHECK(st.peak_in_flight == R);
    CHECK_FALSE(exec.complete());
    // The (K+1)-th launch waits, once, for the oldest: a second thread opens
    // the gate only once the launch counted its wait.
    std::thread opener([&] {
      CHECK(inflight_wait_for(exec, [&](const lr_graph_exec_stats_t& now) {
        return now.launch_waits == before.launch_waits + 1;
      }));
      s.open_gate();
    });
    exec.set_kernarg(c.copy_out, offsetof(AddArgs, c), c.slice(R));
    exec.launch();
    opener.join();
    st = exec.stats();
    CHECK(st.launch_waits == before.launch_waits + 1);
    // lr_synchronize covers every replay in flight.
    s.device.synchronize();
    CHECK(exec.complete());
    c.check(R + 1);
  }
  s.set_worst_order(0);

  // With K = 1 every back-to-back launch waits for the one before.
  exec.set_max_in_flight(1);
  c.reset();
  const uint64_t waits = exec.stats().launch_waits;
  s.close_gate();
  exec.set_kernarg(c.copy_out, offsetof(AddArgs, c), c.slice(0));
  exec.launch();
  std::thread opener([&] {
    CHECK(inflight_wait_for(exec, [&](const lr_graph_exec_stats_t& now) { return now.launch_waits == waits + 1; }));
    s.open_gate();
  });
  exec.set_kernarg(c.copy_out, offsetof(AddArgs, c), c.slice(1));
  exec.launch();
  opener.join();
  exec.synchronize();
  c.check(2);
  CHECK(lr_graph_exec_set_max_in_flight(exec.get(), 65) == LR_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(lr_last_error_message()).find("replays of one exec can be in flight") != std::string::npos);
  // The default for execs instantiated while LRRT_GRAPH_MAX_IN_FLIGHT is set.
  setenv("LRRT_GRAPH_MAX_IN_FLIGHT", "3", 1);
  CHECK(c.g.instantiate().stats().max_in_flight == 3);
  setenv("LRRT_GRAPH_MAX_IN_FLIGHT", "two", 1);
  lr_graph_exec_t* none = nullptr;
  CHECK(lr_graph_instantiate(c.g.get(), nullptr, &none) == LR_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(lr_last_error_message()).find("is not a count of replays") != std::string::npos);
  unsetenv("LRRT_GRAPH_MAX_IN_FLIGHT");
}

TEST_CASE("hsa graph in flight: R replays of a diamond on two lanes, no host wait, each exact in both orders") {
  InFlightSetup s;
  const uint32_t n = 2048, R = 4;
  auto in = random_whole(n, -50, 50), b0 = random_whole(n, -100, 100), u = random_whole(n, -100, 100);
  lrrt::DeviceBuffer d_in(s.device, n * 4), d_b(s.device, n * 4), d_u(s.device, n * 4), d_c1(s.device, n * 4),
      d_c2(s.device, n * 4), d_out(s.device, size_t(n) * 4 * R);
  lrrt::copy_to_device(d_in, in);
  lrrt::copy_to_device(d_u, u);
  auto cfg = config_for(n, 128);
  lrrt::Graph g(s.device);
  // P: b += 2 in; C1: c1 = b + u; C2: c2 = b + b; J: out_r = c1 + c2 (patched).
  g.add_kernel(s.saxpy, cfg, SaxpyArgs{2.0f, d_in.data(), d_b.data(), n},
               {lrrt::read_access(d_in), lrrt::read_write_access(d_b)});
  g.add_kernel(s.add, cfg, AddArgs{d_b.data(), d_u.data(), d_c1.data(), n},
               {lrrt::read_access(d_b), lrrt::read_access(d_u), lrrt::write_access(d_c1)});
  g.add_kernel(s.add, cfg, AddArgs{d_b.data(), d_b.data(), d_c2.data(), n},
               {lrrt::read_access(d_b), lrrt::write_access(d_c2)});
  auto join = g.add_kernel(s.add, cfg, AddArgs{d_c1.data(), d_c2.data(), d_out.data(), n},
                           {lrrt::read_access(d_c1), lrrt::read_access(d_c2), lrrt::write_access(d_out)});
  auto slice = [&](uint32_t r) { return static_cast<float*>(d_out.data()) + size_t(r) * n; };
  // Replay r: b = b0 + 2(r+1) in, out_r = 3b + u.
  auto wrong_elements = [&](uint32_t count) {
    auto got = to_host(d_out, size_t(n) * R);
    uint32_t wrong = 0;
    for (uint32_t r = 0; r < count; ++r)
      for (uint32_t i = 0; i < n; ++i) {
        const float b = b0[i] + 2.0f * float(r + 1) * in[i];
        wrong += got[size_t(r) * n + i] != (b + u[i]) + (b + b);
      }
    return wrong;
  };
  auto replay_all = [&](lrrt::GraphExec& exec) {
    lrrt::copy_to_device(d_b, b0);
    poison_device(d_out, size_t(n) * R);
    s.close_gate();
    for (uint32_t r = 0; r < R; ++r) {
      exec.set_kernarg(join, offsetof(AddArgs, c), slice(r));
      exec.launch();
    }
  };

  lr_graph_instantiate_options_t two{2, 0};
  lrrt::GraphExec exec = g.instantiate(&two);
  REQUIRE(nlohmann::json::parse(exec.plan_json())["aql"]["lanes"].size() == 2);
  exec.set_max_in_flight(R);
  for (int worst : {0, 1}) {
    CAPTURE(worst);
    s.set_worst_order(worst);
    const uint64_t waits = exec.stats().launch_waits;
    replay_all(exec);
    CHECK(exec.stats().launch_waits == waits);
    CHECK_FALSE(exec.complete());
    s.open_gate();
    exec.synchronize();
    CHECK(wrong_elements(R) == 0);
  }

  // Destroying the exec with replays in flight waits for every one.
  {
    lrrt::GraphExec doomed = g.instantiate(&two);
    doomed.set_max_in_flight(R);
    replay_all(doomed);
    s.open_gate();
  }
  CHECK(wrong_elements(R) == 0);

  // Negative control: one signal set for every replay in flight. A replay's
  // barrier-AND packets see the signals the replay before completed (the
  // second lane's C2 runs before this replay's P: it reads the last b), and
  // signals completed twice drop below 0, which a barrier-AND never takes
  // as complete (a hang, here a timeout). Its dispatches race by design:
  // not under ThreadSanitizer, which would report that race (CI's TSan step
  // did, in the stand-in's L2 write-back against a kernel's read).
#if defined(__SANITIZE_THREAD__)
  constexpr bool kThreadSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
  constexpr bool kThreadSanitizer = true;
#else
  constexpr bool kThreadSanitizer = false;
#endif
#else
  constexpr bool kThreadSanitizer = false;
#endif
  if (kThreadSanitizer) {
    MESSAGE("the shared-signal negative control races by design: not run under ThreadSanitizer");
    s.device.synchronize();
    return;
  }
  s.set_worst_order(1);
  setenv("LRRT_TEST_SHARE_REPLAY_SIGNALS", "1", 1);
  {
    lrrt::GraphExec shared = g.instantiate(&two);
    unsetenv("LRRT_TEST_SHARE_REPLAY_SIGNALS");
    CHECK(shared.plan_json().find("LRRT_TEST_SHARE_REPLAY_SIGNALS") != std::string::npos);
    shared.set_max_in_flight(R);
    replay_all(shared);
    s.open_gate();
    lr_set_wait_timeout_ms(500);
    const lr_status_t st = lr_graph_exec_synchronize(shared.get());
    const uint32_t wrong = st == LR_SUCCESS ? wrong_elements(R) : 0;
    MESSAGE("shared signals: synchronize status ", st, ", ", wrong, " wrong elements");
    CHECK((st != LR_SUCCESS || wrong > 0));
    if (st != LR_SUCCESS) CHECK(st == LR_ERROR_TIMEOUT);
  }  // destroying it abandons a hung replay
  lr_set_wait_timeout_ms(20000);
  s.set_worst_order(0);
  s.device.synchronize();
}

TEST_CASE("hsa graph in flight: a pageable source is read at each launch into that replay's own staging") {
  InFlightSetup s;
  const uint32_t n = 512, R = 3;
  lrrt::DeviceBuffer d_in(s.device, n * 4), zero(s.device, n * 4), out(s.device, size_t(n) * 4 * R);
  lrrt::copy_to_device(zero, std::vector<float>(n, 0.0f));
  std::vector<float> pageable(n);
  lrrt::Graph g(s.device);
  g.add_copy(d_in.data(), pageable.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE);
  auto k = g.add_kernel(s.add, config_for(n, 64), AddArgs{d_in.data(), zero.data(), out.data(), n},
                        {lrrt::read_access(d_in), lrrt::read_access(zero), lrrt::write_access(out)});
  lrrt::GraphExec exec = g.instantiate();
  exec.set_max_in_flight(R);
  for (int worst : {0, 1}) {
    CAPTURE(worst);
    s.set_worst_order(worst);
    poison_device(out, size_t(n) * R);
    std::vector<std::vector<float>> sent;
    s.close_gate();  // the copy engine is held: no replay's copy has run before the next launch
    for (uint32_t r = 0; r < R; ++r) {
      sent.push_back(random_whole(n, -1000, 1000));
      std::memcpy(pageable.data(), sent.back().data(), n * 4);
      exec.set_kernarg(k, offsetof(AddArgs, c), static_cast<float*>(out.data()) + size_t(r) * n);
      exec.launch();
    }
    CHECK_FALSE(exec.complete());
    s.open_gate();
    exec.synchronize();
    auto got = to_host(out, size_t(n) * R);
    for (uint32_t r = 0; r < R; ++r)
      for (uint32_t i = 0; i < n; ++i) REQUIRE_MESSAGE(got[size_t(r) * n + i] == sent[r][i], "replay ", r, " element ", i);
  }
}

TEST_CASE("hsa graph in flight: a fault in one replay fails the exec, the replays after it are released") {
  InFlightSetup s;
  Chain c(s, 4, 2);
  lrrt::GraphExec exec = c.g.instantiate();
  c.reset();
  s.close_gate();
  exec.launch();
  exec.launch();  // both in flight behind the gate
  CHECK(exec.stats().launch_waits == 0);
  s.set_fault("queue_error:vector_add_f32");
  s.open_gate();
  CHECK(lr_graph_exec_synchronize(exec.get()) == LR_ERROR_KERNEL_FAULT);
  CHECK(std::string(lr_last_error_message()).find("kernel 'vector_add_f32'") != std::string::npos);
  s.set_fault("");
  CHECK(lr_graph_exec_launch(exec.get(), nullptr) == LR_ERROR_KERNEL_FAULT);
  CHECK(std::string(lr_last_error_message()).find("instantiate the graph again") != std::string::npos);
  CHECK(exec.complete());  // nothing in flight any more
  CHECK(lr_synchronize(s.device.get()) != LR_SUCCESS);  // the default queue reports its error, then recovers
}

#endif

// The hsa lowering of retained replay among other work on its queue, on the
// stand-in (test_hsa_graph.cpp has the results in both orders): the replay
// follows work on its queue and later work follows it; a hung replay and a
// queue error name the kernel; another thread's copy and launch cannot come
// in between a replay's copies and its blocks (issue 26).
#if defined(LRRT_TEST_HSA) && defined(LRRT_TEST_AMD_KERNELS)
#include <dlfcn.h>
#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "lrrt/lrrt.hpp"
#include "hsa_graph_test_support.hpp"
#include "replay_test_support.hpp"
#include "standin_hooks.h"

namespace {

using namespace lrrt::test;
using namespace lrrt::test::hsa_graph;

}  // namespace

TEST_CASE("hsa graph: the replay follows work on its queue and later work follows the replay") {
  Setup s;
  const uint32_t n = 4096;
  auto x = random_whole(n, -64, 64), y0 = random_whole(n, -1000, 1000);
  lrrt::PinnedHostBuffer hx(s.device, n * 4), hy(s.device, n * 4), out(s.device, n * 4);
  std::memcpy(hx.data(), x.data(), n * 4);
  std::memcpy(hy.data(), y0.data(), n * 4);
  lrrt::DeviceBuffer dx(s.device, n * 4), dy(s.device, n * 4);
  lrrt::Graph g(s.device);
  g.add_kernel(s.saxpy, config_for(n, 256), SaxpyArgs{3.0f, dx.data(), dy.data(), n},
               {lrrt::read_access(dx), lrrt::read_write_access(dy)});
  auto exec = g.instantiate();
  in_both_orders(s, [&](bool) {
    for (uint32_t i = 0; i < n; ++i) out.as<float>()[i] = kPoison;
    // Copies in on the default queue (pending when the replay is written:
    // its first packet waits for them), the replay, a copy out after it,
    // all asynchronous; a second replay (after the copy out: WAR on y) and
    // a launch after it.
    auto copy = [&](void* dst, const void* src, lr_memcpy_kind_t kind) {
      lrrt::check(lr_memcpy_async(s.device.get(), dst, src, n * 4, kind, nullptr), "lr_memcpy_async");
    };
    copy(dx.data(), hx.data(), LR_MEMCPY_HOST_TO_DEVICE);
    copy(dy.data(), hy.data(), LR_MEMCPY_HOST_TO_DEVICE);
    exec.launch();
    copy(out.data(), dy.data(), LR_MEMCPY_DEVICE_TO_HOST);
    exec.launch();
    lrrt::launch(s.saxpy, config_for(n, 256), SaxpyArgs{1.0f, dx.data(), dy.data(), n});
    s.device.synchronize();
    for (uint32_t i = 0; i < n; ++i) REQUIRE(out.as<float>()[i] == y0[i] + 3.0f * x[i]);
    std::vector<float> y(n, kPoison);
    lrrt::copy_to_host(y, dy);
    for (uint32_t i = 0; i < n; ++i) REQUIRE(y[i] == y0[i] + 7.0f * x[i]);
  });
}

TEST_CASE("hsa graph: a hung replay times out naming the kernel, a queue error names it too") {
  Setup s;
  const uint32_t n = 256;
  lrrt::DeviceBuffer dx(s.device, n * 4), dy(s.device, n * 4);
  lrrt::Graph g(s.device);
  for (int i = 0; i < 2; ++i)
    g.add_kernel(s.saxpy, config_for(n, 64), SaxpyArgs{1.0f, dx.data(), dy.data(), n},
                 {lrrt::read_access(dx), lrrt::read_write_access(dy)});
  g.add_kernel(s.add, config_for(n, 64), AddArgs{dy.data(), dy.data(), dx.data(), n},
               {lrrt::read_access(dy), lrrt::write_access(dx)});
  lrrt::PinnedHostBuffer out(s.device, n * 4);
  g.add_copy(out.data(), dx.data(), n * 4, LR_MEMCPY_DEVICE_TO_HOST);  // waits for node 2's signal
  auto set_fault = reinterpret_cast<lrrt_hsa_standin_set_fault_fn>(dlsym(s.standin.lib, "lrrt_hsa_standin_set_fault"));
  REQUIRE(bool(set_fault));
  {
    auto exec = g.instantiate();
    set_fault("queue_error:vector_add_f32");
    exec.launch();
    CHECK(lr_graph_exec_synchronize(exec.get()) == LR_ERROR_KERNEL_FAULT);
    std::string msg = lr_last_error_message();
    CHECK(msg.find("node 2 (kernel 'vector_add_f32')") != std::string::npos);
    CHECK(msg.find("MEMORY_APERTURE_VIOLATION") != std::string::npos);
    set_fault("");
    CHECK(lr_graph_exec_launch(exec.get(), nullptr) == LR_ERROR_KERNEL_FAULT);
    CHECK(std::string(lr_last_error_message()).find("instantiate the graph again") != std::string::npos);
    // The default queue recovers (a fresh queue replaces the failed one).
    CHECK(lr_synchronize(s.device.get()) != LR_SUCCESS);
  }
  {
    lr_set_wait_timeout_ms(300);
    {
      auto exec = g.instantiate();
      set_fault("lost_signal:vector_add_f32");
      exec.launch();
      CHECK(lr_graph_exec_synchronize(exec.get()) == LR_ERROR_TIMEOUT);
      std::string msg = lr_last_error_message();
      CHECK(msg.find("a replay of a graph of 4 nodes") != std::string::npos);
      CHECK(msg.find("copy engine: node 3 (") != std::string::npos);
      set_fault("");
      // Destroying it abandons the replay: the stuck copy is released.
    }
    lr_set_wait_timeout_ms(20000);
    lrrt::DeviceBuffer probe(s.device, 64);
    std::vector<float> back(16, 1.0f);
    lrrt::copy_to_device(probe, back);  // the copy engine runs again
    std::fill(back.begin(), back.end(), 0.0f);
    lrrt::copy_to_host(back, probe);
    CHECK(back[0] == 1.0f);
  }
}

// Issue 26, bug 3: a replay queued its copies on the copy engine before it
// took the launch queue's lock; another thread's copy and launch on the same
// queue could come in between, and the engine's FIFO closed a circular wait
// (the root copy waits for the fork, behind the other launch on the ring,
// which waits for its copy, behind the root copy). The stand-in stops the
// replay's thread right after its first copy call, lets the other thread
// try to come in there, and only then lets the replay go on: with the
// replay's submission under the queue's lock the other thread waits for it,
// and both finish with every element right; without it, every wait times out.
TEST_CASE("hsa graph: another thread's copy and launch on the replay's queue cannot come in between its copies and its blocks") {
  Setup s;
  auto pause = reinterpret_cast<lrrt_hsa_standin_pause_next_copy_call_fn>(
      dlsym(s.standin.lib, "lrrt_hsa_standin_pause_next_copy_call"));
  REQUIRE(bool(pause));
  const uint32_t n = 4099;
  const size_t bytes = size_t(n) * 4;
  auto x = random_whole(n, -1000, 1000), b = random_whole(n, -1000, 1000), y = random_whole(n, -1000, 1000);
  lrrt::PinnedHostBuffer gin(s.device, bytes), gout(s.device, bytes), pin(s.device, bytes), pout(s.device, bytes),
      hb(s.device, bytes);
  std::memcpy(gin.data(), x.data(), bytes);
  std::memcpy(pin.data(), y.data(), bytes);
  std::memcpy(hb.data(), b.data(), bytes);
  for (uint32_t i = 0; i < n; ++i) gout.as<float>()[i] = pout.as<float>()[i] = kPoison;
  lrrt::DeviceBuffer gx(s.device, bytes), gz(s.device, bytes), db(s.device, bytes), p(s.device, bytes),
      q(s.device, bytes);
  REQUIRE(lr_memcpy(s.device.get(), db.data(), hb.data(), bytes, LR_MEMCPY_HOST_TO_DEVICE) == LR_SUCCESS);
  const auto cfg = config_for(n, 64);
  // A root copy, x + b -> z, z -> out.
  lrrt::Graph g(s.device);
  g.add_copy(gx.data(), gin.data(), bytes, LR_MEMCPY_HOST_TO_DEVICE);
  g.add_kernel(s.add, cfg, AddArgs{gx.data(), db.data(), gz.data(), n},
               {lrrt::read_access(gx), lrrt::read_access(db), lrrt::write_access(gz)});
  g.add_copy(gout.data(), gz.data(), bytes, LR_MEMCPY_DEVICE_TO_HOST);
  lrrt::GraphExec exec = g.instantiate();
  // Work on the default queue first, so that what comes next on it depends on it.
  lrrt::launch(s.add, cfg, AddArgs{db.data(), db.data(), q.data(), n});
  lr_set_wait_timeout_ms(5000);

  pause(1);
  lr_status_t launched = LR_ERROR_RUNTIME, replayed = LR_ERROR_RUNTIME;
  std::string replay_message;
  std::thread replay([&] {
    launched = lr_graph_exec_launch(exec.get(), nullptr);
    replayed = lr_graph_exec_synchronize(exec.get());
    replay_message = lr_last_error_message();
  });
  // The replay's thread is inside its first copy call.
  for (int i = 0; i < 10000 && s.standin.counter("copy_calls_paused") == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const bool paused = s.standin.counter("copy_calls_paused") == 1;
  std::atomic<bool> submitted{false};
  lr_status_t copied_in = LR_ERROR_RUNTIME, added = LR_ERROR_RUNTIME, copied_out = LR_ERROR_RUNTIME,
              other_done = LR_ERROR_RUNTIME;
  std::thread other([&] {
    copied_in = lr_memcpy_async(s.device.get(), p.data(), pin.data(), bytes, LR_MEMCPY_HOST_TO_DEVICE, nullptr);
    const AddArgs args{p.data(), db.data(), q.data(), n};
    added = lr_launch(s.add.get(), &cfg, &args, sizeof args);
    copied_out = lr_memcpy_async(s.device.get(), pout.data(), q.data(), bytes, LR_MEMCPY_DEVICE_TO_HOST, nullptr);
    submitted = true;
    other_done = lr_synchronize(s.device.get());
  });
  // Time for the other thread to submit, if it can: the replay holds the
  // queue, so it cannot (the checks below hold either way).
  for (int i = 0; i < 300 && !submitted; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const bool came_in = submitted;
  pause(0);
  replay.join();
  other.join();
  lr_set_wait_timeout_ms(20000);
  REQUIRE(paused);
  CHECK_FALSE(came_in);
  CHECK(launched == LR_SUCCESS);
  CHECK_MESSAGE(replayed == LR_SUCCESS, replay_message);
  CHECK(copied_in == LR_SUCCESS);
  CHECK(added == LR_SUCCESS);
  CHECK(copied_out == LR_SUCCESS);
  CHECK(other_done == LR_SUCCESS);
  uint32_t wrong_replay = 0, wrong_other = 0;
  for (uint32_t i = 0; i < n; ++i) {
    wrong_replay += gout.as<float>()[i] != x[i] + b[i];
    wrong_other += pout.as<float>()[i] != y[i] + b[i];
  }
  CHECK(wrong_replay == 0);
  CHECK(wrong_other == 0);
}

#endif

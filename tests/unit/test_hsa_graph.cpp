// The hsa lowering of retained replay (src/runtime/hsa/hsa_graph.cpp) on the
// stand-in libhsa-runtime64, in its default order and in its worst-order mode
// (tests/hsa/standin/queues.cpp describes both): a 1000-step saxpy chain, a
// diamond, a two-stage reduction and argument patches give exact results;
// with one derived edge dropped (LRRT_TEST_DROP_EDGE) each of the three
// sequences is wrong in worst order, deterministically. The packet headers
// and memory scopes of the lowering: test_hsa_graph_lowering.cpp; the
// replay among other work on its queue, hangs and queue errors:
// test_hsa_graph_queue.cpp.
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

int edge_index(const nlohmann::json& plan, uint32_t from, uint32_t to) {
  for (size_t i = 0; i < plan["edges"].size(); ++i)
    if (plan["edges"][i]["from"] == from && plan["edges"][i]["to"] == to) return int(i);
  FAIL("no edge ", from, " -> ", to);
  return -1;
}

// LRRT_TEST_DROP_EDGE for one instantiation.
lrrt::GraphExec instantiate_dropping(const lrrt::Graph& g, int edge, const lr_graph_instantiate_options_t* options) {
  setenv("LRRT_TEST_DROP_EDGE", std::to_string(edge).c_str(), 1);
  struct Unset {
    ~Unset() { unsetenv("LRRT_TEST_DROP_EDGE"); }
  } unset;
  return g.instantiate(options);
}

}  // namespace

TEST_CASE("hsa graph: a 1000-step saxpy chain gives y0 + 1000*a*x in both orders, a dropped edge shows in worst order") {
  Setup s;
  const uint32_t n = 3000, steps = 1000;
  const float a = std::array{0.25f, 0.5f, 2.0f}[rng()() % 3];
  auto x = random_whole(n, -64, 64), y0 = random_whole(n, -1000, 1000);
  lrrt::PinnedHostBuffer hx(s.device, n * 4), hy0(s.device, n * 4), out(s.device, n * 4);
  std::memcpy(hx.data(), x.data(), n * 4);
  std::memcpy(hy0.data(), y0.data(), n * 4);
  lrrt::DeviceBuffer dx(s.device, n * 4), dy(s.device, n * 4);
  lrrt::Graph g(s.device);
  g.add_copy(dx.data(), hx.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE);
  g.add_copy(dy.data(), hy0.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE);
  SaxpyArgs args{a, dx.data(), dy.data(), n};
  lrrt::GraphNode last = 0;
  for (uint32_t i = 0; i < steps; ++i)
    last = g.add_kernel(s.saxpy, config_for(n, 256), args, {lrrt::read_access(dx), lrrt::read_write_access(dy)});
  auto copy_out = g.add_copy(out.data(), dy.data(), n * 4, LR_MEMCPY_DEVICE_TO_HOST);
  auto expect_exact = [&](const char* what) {
    for (uint32_t i = 0; i < n; ++i)
      REQUIRE_MESSAGE(out.as<float>()[i] == y0[i] + float(steps) * a * x[i], what, " element ", i);
  };
  auto poison = [&] {
    for (uint32_t i = 0; i < n; ++i) out.as<float>()[i] = kPoison;
  };

  lrrt::GraphExec exec = g.instantiate();
  auto plan = plan_of(exec);
  CHECK(plan["lowering"] == "hsa-aql");
  // The first step waits for the copies (a barrier-AND); every later one has
  // the barrier bit (its predecessor is in the open run). Only the last
  // completes a signal: the copy out waits for it.
  size_t dispatches = 0, barriers = 0, signals = 0;
  for (const auto& p : plan["aql"]["lanes"][0]) {
    if (p["type"] != "dispatch") continue;
    if (dispatches++ == 0) CHECK(p["barrier"] == false);
    barriers += p["barrier"].get<bool>();
    signals += p.count("completion");
  }
  CHECK(dispatches == steps);
  CHECK(barriers == steps - 1);
  CHECK(signals == 1);
  in_both_orders(s, [&](bool) {
    for (int replay = 0; replay < 2; ++replay) {
      poison();
      exec.launch();
      exec.synchronize();
      expect_exact("replay");
    }
  });

  // Negative control: the edge from the last step to the copy out dropped.
  // In worst order the copy runs as early as its remaining signal (the
  // replay start) allows: before the chain.
  lr_graph_instantiate_options_t one{1, 0};
  lrrt::GraphExec broken = instantiate_dropping(g, edge_index(plan, last, copy_out), &one);
  CHECK(plan_of(broken)["dropped_for_test"]["from"] == last);
  s.standin.set_worst_order(1);
  for (int replay = 0; replay < 2; ++replay) {
    poison();
    broken.launch();
    broken.synchronize();
    uint32_t wrong = 0;
    for (uint32_t i = 0; i < n; ++i) wrong += out.as<float>()[i] != y0[i] + float(steps) * a * x[i];
    CHECK(wrong > 0);  // x == 0 elements are right whatever the order
    // The copy ran right after the copy of y0, before every step.
    for (uint32_t i = 0; i < n; ++i) REQUIRE(out.as<float>()[i] == y0[i]);
  }
  s.standin.set_worst_order(0);
  // (In the default order this exec races: the copy engine runs beside the
  // queue. The edge is only dropped to show that worst order catches it.)
}

TEST_CASE("hsa graph: a diamond on one and two lanes in both orders, a dropped edge shows in worst order") {
  Setup s;
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
  g.add_copy(d_in.data(), h_in.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE);
  g.add_copy(d_b.data(), h_b0.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE);
  g.add_copy(d_u.data(), h_u.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE);
  // P: b = 2*in + b0; C1: c1 = b + u; C2: c2 = b + b; J: out = c1 + c2
  auto p = g.add_kernel(s.saxpy, cfg, SaxpyArgs{2.0f, d_in.data(), d_b.data(), n},
                        {lrrt::read_access(d_in), lrrt::read_write_access(d_b)});
  auto c1 = g.add_kernel(s.add, cfg, AddArgs{d_b.data(), d_u.data(), d_c1.data(), n},
                         {lrrt::read_access(d_b), lrrt::read_access(d_u), lrrt::write_access(d_c1)});
  g.add_kernel(s.add, cfg, AddArgs{d_b.data(), d_b.data(), d_c2.data(), n},
               {lrrt::read_access(d_b), lrrt::write_access(d_c2)});
  g.add_kernel(s.add, cfg, AddArgs{d_c1.data(), d_c2.data(), d_out.data(), n},
               {lrrt::read_access(d_c1), lrrt::read_access(d_c2), lrrt::write_access(d_out)});
  g.add_copy(out.data(), d_out.data(), n * 4, LR_MEMCPY_DEVICE_TO_HOST);
  auto wrong_elements = [&] {
    uint32_t wrong = 0;
    for (uint32_t i = 0; i < n; ++i) {
      float b = 2.0f * in[i] + b0[i];
      wrong += out.as<float>()[i] != (b + u[i]) + (b + b);
    }
    return wrong;
  };
  auto poison = [&] {
    for (uint32_t i = 0; i < n; ++i) out.as<float>()[i] = kPoison;
  };

  for (uint32_t lanes : {1u, 2u}) {
    CAPTURE(lanes);
    lr_graph_instantiate_options_t options{lanes, 0};
    lrrt::GraphExec exec = g.instantiate(&options);
    CHECK(plan_of(exec)["aql"]["lanes"].size() == lanes);
    in_both_orders(s, [&](bool worst) {
      const uint64_t reordered = s.standin.counter("dispatches_reordered");
      for (int replay = 0; replay < 2; ++replay) {
        poison();
        lrrt::Queue queue(s.device);
        lrrt::Event done(s.device);
        exec.launch(queue, done);
        done.synchronize();
        CHECK(wrong_elements() == 0);
      }
      // On one lane the worst order really ran C2 before C1 (once per replay).
      if (lanes == 1) CHECK(s.standin.counter("dispatches_reordered") - reordered == (worst ? 2u : 0u));
    });
  }

  // Negative control on one lane: P -> C1 dropped. C1 loses its barrier bit
  // (so C2 gets one) and in worst order runs before P: it reads b0, not b.
  lr_graph_instantiate_options_t one{1, 0};
  auto plan = plan_of(g.instantiate(&one));
  lrrt::GraphExec broken = instantiate_dropping(g, edge_index(plan, p, c1), &one);
  s.standin.set_worst_order(1);
  for (int replay = 0; replay < 2; ++replay) {
    poison();
    broken.launch();
    broken.synchronize();
    CHECK(wrong_elements() > 0);
    for (uint32_t i = 0; i < n; ++i) {
      float b = 2.0f * in[i] + b0[i];
      REQUIRE(out.as<float>()[i] == (b0[i] + u[i]) + (b + b));  // C1 saw b0: exactly that
    }
  }
  s.standin.set_worst_order(0);
  poison();
  broken.launch();
  broken.synchronize();
  CHECK(wrong_elements() == 0);
}

TEST_CASE("hsa graph: a two-stage reduction with fills in both orders, a dropped edge shows in worst order") {
  Setup s;
  const uint32_t block = 256, groups = 256, n = block * groups - 77;  // the last group is partial
  auto in = random_whole(n, -100, 100);
  lrrt::PinnedHostBuffer h_in(s.device, size_t(n) * 4), partial(s.device, groups * 4), total(s.device, 4);
  std::memcpy(h_in.data(), in.data(), size_t(n) * 4);
  lrrt::DeviceBuffer d_in(s.device, size_t(n) * 4), d_partial(s.device, groups * 4), d_total(s.device, 64);
  lrrt::Graph g(s.device);
  g.add_copy(d_in.data(), h_in.data(), size_t(n) * 4, LR_MEMCPY_HOST_TO_DEVICE);  // 0
  g.add_fill(d_partial.data(), groups, kPoison);                                  // 1: overwritten by stage 1
  auto stage1 = g.add_kernel(s.reduce, lr_launch_config_t{{groups, 1, 1}, {block, 1, 1}, 0},
                             ReduceArgs{d_in.data(), d_partial.data(), n},
                             {lrrt::read_access(d_in), lrrt::write_access(d_partial)});
  auto stage2 = g.add_kernel(s.reduce, lr_launch_config_t{{1, 1, 1}, {groups, 1, 1}, 0},
                             ReduceArgs{d_partial.data(), d_total.data(), groups},
                             {lrrt::read_access(d_partial), lrrt::write_access(d_total.data(), 4)});
  g.add_copy(partial.data(), d_partial.data(), groups * 4, LR_MEMCPY_DEVICE_TO_HOST);
  g.add_copy(total.data(), d_total.data(), 4, LR_MEMCPY_DEVICE_TO_HOST);
  float sum = 0;
  std::vector<float> expect(groups, 0);
  for (uint32_t gi = 0; gi < groups; ++gi) {
    for (uint32_t i = gi * block; i < std::min(n, (gi + 1) * block); ++i) expect[gi] += in[i];
    sum += expect[gi];
  }
  auto poison = [&] {
    for (uint32_t i = 0; i < groups; ++i) partial.as<float>()[i] = kPoison;
    total.as<float>()[0] = kPoison;
  };
  auto check_exact = [&] {
    for (uint32_t gi = 0; gi < groups; ++gi) REQUIRE_MESSAGE(partial.as<float>()[gi] == expect[gi], "group ", gi);
    CHECK(total.as<float>()[0] == sum);
  };

  lrrt::GraphExec exec = g.instantiate();
  auto plan = plan_of(exec);
  in_both_orders(s, [&](bool) {
    for (int replay = 0; replay < 2; ++replay) {
      poison();
      exec.launch();
      exec.synchronize();
      check_exact();
    }
  });

  // Negative control: stage 1 -> stage 2 dropped. Stage 2 loses its barrier
  // bit, runs first in worst order and sums the fill's NaNs.
  lr_graph_instantiate_options_t one{1, 0};
  lrrt::GraphExec broken = instantiate_dropping(g, edge_index(plan, stage1, stage2), &one);
  s.standin.set_worst_order(1);
  for (int replay = 0; replay < 2; ++replay) {
    poison();
    broken.launch();
    broken.synchronize();
    for (uint32_t gi = 0; gi < groups; ++gi) REQUIRE(partial.as<float>()[gi] == expect[gi]);  // stage 1 itself ran
    CHECK(std::isnan(total.as<float>()[0]));
  }
  s.standin.set_worst_order(0);
  poison();
  broken.launch();
  broken.synchronize();
  check_exact();
}

TEST_CASE("hsa graph: argument patches between replays reach the kernarg buffer, in both orders") {
  Setup s;
  const uint32_t n = 2048;
  auto x = random_whole(n, -64, 64), y0 = random_whole(n, -1000, 1000);
  lrrt::PinnedHostBuffer hx(s.device, n * 4), hy0(s.device, n * 4), out(s.device, n * 4);
  std::memcpy(hx.data(), x.data(), n * 4);
  std::memcpy(hy0.data(), y0.data(), n * 4);
  lrrt::DeviceBuffer dx(s.device, n * 4), dy(s.device, n * 4);
  lrrt::Graph g(s.device);
  g.add_copy(dx.data(), hx.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE);
  g.add_copy(dy.data(), hy0.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE);
  auto first = g.add_kernel(s.saxpy, config_for(n, 64), SaxpyArgs{1.0f, dx.data(), dy.data(), n},
                            {lrrt::read_access(dx), lrrt::read_write_access(dy)});
  auto second = g.add_kernel(s.saxpy, config_for(n, 64), SaxpyArgs{1.0f, dx.data(), dy.data(), n},
                             {lrrt::read_access(dx), lrrt::read_write_access(dy)});
  g.add_copy(out.data(), dy.data(), n * 4, LR_MEMCPY_DEVICE_TO_HOST);
  lrrt::GraphExec exec = g.instantiate();
  in_both_orders(s, [&](bool) {
    for (int round = 0; round < 4; ++round) {
      const float a = float(int(rng()() % 9) - 4), b = float(int(rng()() % 9) - 4);
      const uint32_t count = round == 3 ? n / 2 : n;  // a scalar patch of n: only the first half changes
      exec.set_kernarg(first, 0, a);
      exec.set_kernarg(second, 0, b);
      exec.set_kernarg(second, 24, count);
      for (uint32_t i = 0; i < n; ++i) out.as<float>()[i] = kPoison;
      s.standin.reset();
      exec.launch();
      exec.synchronize();
      for (uint32_t i = 0; i < n; ++i)
        REQUIRE_MESSAGE(out.as<float>()[i] == y0[i] + a * x[i] + (i < count ? b * x[i] : 0.0f), "element ", i);
      // The patched bytes are what the packet processor read.
      REQUIRE(s.standin.dispatch_count() == 2);
      for (size_t d = 0; d < 2; ++d) {
        lrrt_hsa_standin_dispatch_t rec{};
        REQUIRE(s.standin.get_dispatch(d, &rec) == 0);
        CHECK(rec.hidden_mismatch == 0);
        SaxpyArgs seen{};
        std::memcpy(&seen, rec.kernarg, sizeof seen);
        // Worst order runs the two (ordered by the barrier bit) in order anyway.
        CHECK(seen.a == (d == 0 ? a : b));
        CHECK(seen.n == (d == 0 ? n : count));
      }
    }
    exec.set_kernarg(second, 24, n);
  });
}

#endif

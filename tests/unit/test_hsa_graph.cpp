// The hsa lowering of retained replay (src/runtime/hsa/hsa_graph.cpp) on the
// stand-in libhsa-runtime64, in its default order and in its worst-order mode
// (tests/hsa/standin/queues.cpp describes both): a 1000-step saxpy chain, a
// diamond, a two-stage reduction and argument patches give exact results;
// with one derived edge dropped (LRRT_TEST_DROP_EDGE) each of the three
// sequences is wrong in worst order, deterministically; the packet headers
// the stand-in's packet processor saw are the plan's (pinned like
// test_graph_aql_plan.cpp pins the planner); one replay is one write-index
// add and one doorbell per queue.
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
#include "replay_test_support.hpp"
#include "standin_hooks.h"

namespace {

using namespace lrrt::test;

std::vector<std::byte> read_kernel(const std::string& source, const std::string& arch = "gfx1100") {
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

nlohmann::json plan_of(const lrrt::GraphExec& exec) { return nlohmann::json::parse(exec.plan_json()); }

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

// Header words (hsa_packet_header_t bits: type, barrier bit 8, acquire 9-10,
// release 11-12), the same constants test_graph_aql_plan.cpp pins.
constexpr uint16_t kDispB_AcqS_RelA = 0x0D02;
constexpr uint16_t kDispB_AcqA_RelA = 0x0B02;
constexpr uint16_t kDispB_AcqA = 0x0302;
constexpr uint16_t kDispB_AcqS = 0x0502;
constexpr uint16_t kDispB = 0x0102;
constexpr uint16_t kDisp = 0x0002;
constexpr uint16_t kDisp_RelA = 0x0802;
constexpr uint16_t kDisp_AcqA_RelA = 0x0A02;
constexpr uint16_t kDisp_AcqS = 0x0402;
constexpr uint16_t kBarB_RelS = 0x1103;
constexpr uint16_t kBarB = 0x0103;
constexpr uint16_t kDisp_AcqS_RelA = 0x0C02;
constexpr uint16_t kBar = 0x0003;

uint16_t scope_bits(const std::string& s) { return s == "system" ? 2 : s == "agent" ? 1 : 0; }

// The header of each planned packet, from the plan's "aql" section (lanes
// without packets, such as a lane only copies were assigned to, left out at
// the end: they get no queue).
std::vector<std::vector<uint16_t>> planned_headers(const nlohmann::json& plan) {
  std::vector<std::vector<uint16_t>> out;
  for (const auto& lane : plan["aql"]["lanes"]) {
    out.emplace_back();
    for (const auto& p : lane)
      out.back().push_back(uint16_t((p["type"] == "dispatch" ? 2 : 3) | (p["barrier"].get<bool>() ? 1 << 8 : 0) |
                                    scope_bits(p["acquire"]) << 9 | scope_bits(p["release"]) << 11));
  }
  while (!out.empty() && out.back().empty()) out.pop_back();
  return out;
}

// The header each lowered packet image carries, from the plan's sync list
// ("lane L packet i: header 0x....").
std::vector<std::vector<uint16_t>> image_headers(const nlohmann::json& plan) {
  std::vector<std::vector<uint16_t>> out;
  for (const auto& s : plan["sync"]) {
    if (s["kind"] != "dispatch" && s["kind"] != "barrier_and") continue;
    std::string why = s["why"];
    unsigned lane = 0, index = 0, header = 0;
    REQUIRE(std::sscanf(why.c_str(), "lane %u packet %u: header %x", &lane, &index, &header) == 3);
    if (out.size() <= lane) out.resize(lane + 1);
    CHECK(out[lane].size() == index);
    out[lane].push_back(uint16_t(header));
  }
  return out;
}

std::vector<uint16_t> dispatches_only(const std::vector<uint16_t>& headers) {
  std::vector<uint16_t> out;
  for (uint16_t h : headers)
    if ((h & 0xff) == 2) out.push_back(h);
  return out;
}

// Replays `exec` once and checks what the stand-in saw against the plan:
// the image headers are the planned ones and equal `expected` per lane; the
// dispatches ran with exactly those headers; one write-index add and one
// doorbell per queue.
void check_lowered(Setup& s, lrrt::GraphExec& exec, const std::vector<std::vector<uint16_t>>& expected) {
  auto plan = plan_of(exec);
  CHECK(plan["lowering"] == "hsa-aql");
  auto planned = planned_headers(plan);
  CHECK(planned == expected);
  CHECK(image_headers(plan) == expected);
  s.device.synchronize();
  s.standin.reset();
  exec.launch();
  exec.synchronize();
  CHECK(s.standin.counter("write_index_adds") == expected.size());
  CHECK(s.standin.counter("doorbell_rings") == expected.size());
  size_t dispatches = 0, barriers = 0;
  for (const auto& lane : expected)
    for (uint16_t h : lane) ((h & 0xff) == 2 ? dispatches : barriers)++;
  CHECK(s.standin.counter("packets_dispatch") == dispatches);
  CHECK(s.standin.counter("packets_barrier_and") == barriers);
  // One lane: the dispatches ran in ring order (default mode) with the
  // planned headers.
  if (expected.size() == 1) CHECK(s.standin.dispatch_headers() == dispatches_only(expected[0]));
}

// Runs `body` in the default order and in the worst order.
template <typename Body>
void in_both_orders(Setup& s, Body&& body) {
  for (int worst : {0, 1}) {
    CAPTURE(worst);
    s.standin.set_worst_order(worst);
    body(worst != 0);
  }
  s.standin.set_worst_order(0);
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

TEST_CASE("hsa graph: lowered headers of a chain, WAR-only and WAW-only pairs, disjoint ranges, a diamond") {
  Setup s;
  const uint32_t n = 512;
  lrrt::DeviceBuffer A(s.device, n * 4), B(s.device, n * 4), C(s.device, n * 4), D(s.device, n * 4),
      X(s.device, n * 4);
  auto cfg = config_for(n, 64);
  lr_graph_instantiate_options_t one{1, 0}, two{2, 0};

  SUBCASE("chain") {
    lrrt::Graph g(s.device);
    for (int i = 0; i < 3; ++i)
      g.add_kernel(s.saxpy, cfg, SaxpyArgs{1.0f, X.data(), A.data(), n},
                   {lrrt::read_access(X), lrrt::read_write_access(A)});
    auto exec = g.instantiate();
    check_lowered(s, exec, {{kDispB_AcqS_RelA, kDispB_AcqA_RelA, kDispB_AcqA, kBarB_RelS}});
  }
  SUBCASE("WAR only") {
    lrrt::Graph g(s.device);
    g.add_kernel(s.add, cfg, AddArgs{A.data(), A.data(), B.data(), n}, {lrrt::read_access(A), lrrt::write_access(B)});
    g.add_kernel(s.add, cfg, AddArgs{C.data(), C.data(), A.data(), n}, {lrrt::read_access(C), lrrt::write_access(A)});
    auto exec = g.instantiate();
    CHECK(plan_of(exec)["edges"][0]["hazards"] == nlohmann::json::array({"WAR"}));
    check_lowered(s, exec, {{kDispB_AcqS, kDispB, kBarB_RelS}});
  }
  SUBCASE("WAW only") {
    lrrt::Graph g(s.device);
    g.add_kernel(s.add, cfg, AddArgs{A.data(), A.data(), B.data(), n}, {lrrt::read_access(A), lrrt::write_access(B)});
    g.add_kernel(s.add, cfg, AddArgs{C.data(), C.data(), B.data(), n}, {lrrt::read_access(C), lrrt::write_access(B)});
    auto exec = g.instantiate();
    CHECK(plan_of(exec)["edges"][0]["hazards"] == nlohmann::json::array({"WAW"}));
    // The first writer releases at agent scope: on gfx942 the second may run
    // on another XCD's L2 (docs/backends/hsa.md "Memory model").
    check_lowered(s, exec, {{kDispB_AcqS_RelA, kDispB, kBarB_RelS}});
  }
  SUBCASE("disjoint ranges of one buffer") {
    const uint32_t half = n / 2, quarter = n / 4;
    std::byte* b = static_cast<std::byte*>(B.data());
    lrrt::Graph g(s.device);
    g.add_kernel(s.add, config_for(half, 64), AddArgs{A.data(), A.data(), b, half},
                 {lrrt::read_access(A), lrrt::write_access(B.data(), half * 4)});
    g.add_kernel(s.add, config_for(half, 64), AddArgs{A.data(), A.data(), b + half * 4, half},
                 {lrrt::read_access(A), lrrt::write_access(B.data(), half * 4, half * 4)});
    // Reads a quarter inside the first half: RAW on node 0 only.
    g.add_kernel(s.add, config_for(quarter, 64), AddArgs{b + quarter * 4, b + quarter * 4, D.data(), quarter},
                 {lrrt::read_access(B.data(), quarter * 4, quarter * 4), lrrt::write_access(D)});
    auto exec = g.instantiate(&one);
    CHECK(plan_of(exec)["edges"].size() == 1);
    check_lowered(s, exec, {{kDispB_AcqS_RelA, kDisp, kDispB_AcqA, kBarB_RelS}});
  }
  SUBCASE("diamond") {
    lrrt::Graph g(s.device);
    g.add_kernel(s.add, cfg, AddArgs{X.data(), X.data(), A.data(), n}, {lrrt::read_access(X), lrrt::write_access(A)});
    g.add_kernel(s.add, cfg, AddArgs{A.data(), A.data(), B.data(), n}, {lrrt::read_access(A), lrrt::write_access(B)});
    g.add_kernel(s.add, cfg, AddArgs{A.data(), A.data(), C.data(), n}, {lrrt::read_access(A), lrrt::write_access(C)});
    g.add_kernel(s.add, cfg, AddArgs{B.data(), C.data(), D.data(), n},
                 {lrrt::read_access(B), lrrt::read_access(C), lrrt::write_access(D)});
    auto single = g.instantiate(&one);
    check_lowered(s, single, {{kDispB_AcqS_RelA, kDispB_AcqA_RelA, kDisp_AcqA_RelA, kDispB_AcqA, kBarB_RelS}});
    auto exec = g.instantiate(&two);
    check_lowered(s, exec,
                  {{kBarB, kDisp_AcqS_RelA, kDispB_AcqA_RelA, kBar, kDispB_AcqA, kBarB_RelS},
                   {kBarB, kBar, kDisp_AcqS_RelA, kBarB_RelS}});
  }
}

// Issue 24, defect 1: the copy engine bypasses the agent's L2. A kernel's
// output that a fill or a host-to-device copy of the same graph overwrites
// must be written back before the copy runs, or the dirty lines land on top
// of the copy at the replay's terminal system release (the stand-in's L2
// model does exactly that). Also when the ordering comes through a reader
// whose RAW release is only agent scope.
TEST_CASE("hsa graph: a fill or copy over a kernel's output keeps the copy's data, in both orders") {
  Setup s;
  const uint32_t n = 4096 + 13;
  const float a = std::array{0.5f, 2.0f, -1.0f}[rng()() % 3];
  auto x = random_whole(n, -64, 64), y = random_whole(n, -1000, 1000), fresh = random_whole(n, -5000, 5000);
  const float pattern = float(int(rng()() % 1000) + 7);
  lrrt::PinnedHostBuffer hx(s.device, n * 4), hy(s.device, n * 4), hfresh(s.device, n * 4);
  std::memcpy(hx.data(), x.data(), n * 4);
  std::memcpy(hy.data(), y.data(), n * 4);
  std::memcpy(hfresh.data(), fresh.data(), n * 4);
  lrrt::DeviceBuffer dx(s.device, n * 4), dy(s.device, n * 4), dz(s.device, n * 4);
  auto download = [&](const lrrt::DeviceBuffer& d) {
    std::vector<float> out(n, kPoison);
    lrrt::copy_to_host(out.data(), d, n * 4);
    return out;
  };
  auto poison = [&](const lrrt::DeviceBuffer& d) {
    std::vector<float> p(n, kPoison);
    lrrt::copy_to_device(d, p.data(), n * 4);
  };
  enum class Over { Fill, Copy };
  for (Over over : {Over::Fill, Over::Copy}) {
    for (bool reader : {false, true}) {
      CAPTURE(int(over));
      CAPTURE(reader);
      lrrt::Graph g(s.device);
      g.add_copy(dx.data(), hx.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE);
      g.add_copy(dy.data(), hy.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE);
      auto writer = g.add_kernel(s.saxpy, config_for(n, 256), SaxpyArgs{a, dx.data(), dy.data(), n},
                                 {lrrt::read_access(dx), lrrt::read_write_access(dy)});
      if (reader)  // z = y + x: reads the writer's output (a RAW release at agent scope)
        g.add_kernel(s.add, config_for(n, 256), AddArgs{dy.data(), dx.data(), dz.data(), n},
                     {lrrt::read_access(dy), lrrt::read_access(dx), lrrt::write_access(dz)});
      if (over == Over::Fill)
        g.add_fill(dy.data(), n, pattern);
      else
        g.add_copy(dy.data(), hfresh.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE);
      auto exec = g.instantiate();
      auto plan = plan_of(exec);
      size_t writers = 0;
      for (const auto& p : plan["aql"]["lanes"][0])
        if (p["type"] == "dispatch" && p["node"] == writer) {
          ++writers;
          CHECK(p["release"] == "system");
        }
      CHECK(writers == 1);
      in_both_orders(s, [&](bool) {
        for (int replay = 0; replay < 2; ++replay) {
          poison(dy);
          poison(dz);
          exec.launch();
          exec.synchronize();
          auto got = download(dy);
          for (uint32_t i = 0; i < n; ++i)
            REQUIRE_MESSAGE(got[i] == (over == Over::Fill ? pattern : fresh[i]), "y element ", i);
          if (reader) {
            auto z = download(dz);
            for (uint32_t i = 0; i < n; ++i) REQUIRE_MESSAGE(z[i] == a * x[i] + y[i] + x[i], "z element ", i);
          }
        }
      });
    }
  }
}

// The eager path: a dispatch's packet releases at system scope, so a copy
// queued after it over its output keeps the copy's data.
TEST_CASE("hsa graph: eager launches and copies over a kernel's output keep the copy's data") {
  Setup s;
  const uint32_t n = 2048 + 5;
  auto x = random_whole(n, -64, 64), y = random_whole(n, -1000, 1000), fresh = random_whole(n, -5000, 5000);
  lrrt::DeviceBuffer dx(s.device, n * 4), dy(s.device, n * 4);
  lrrt::copy_to_device(dx, x.data(), n * 4);
  lrrt::copy_to_device(dy, y.data(), n * 4);
  lrrt::launch(s.saxpy, config_for(n, 256), SaxpyArgs{2.0f, dx.data(), dy.data(), n});
  REQUIRE(lr_memcpy_async(s.device.get(), dy.data(), fresh.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE, nullptr) ==
          LR_SUCCESS);
  s.device.synchronize();
  std::vector<float> got(n, kPoison);
  lrrt::copy_to_host(got.data(), dy, n * 4);
  for (uint32_t i = 0; i < n; ++i) REQUIRE_MESSAGE(got[i] == fresh[i], "element ", i);
}

// Suspected defect 5, settled by a fix: on gfx942 an agent has an L2 per XCD
// (the stand-in models two, dispatches alternating), and two kernels that
// write the same bytes need the first to release at agent scope, or its
// dirty lines may be written back after the second's.
TEST_CASE("hsa graph: on gfx942 (an L2 per XCD) the second of two writers of a buffer wins, in both orders") {
  setenv("LRRT_HSA_STANDIN_ISA", "gfx942", 1);
  struct Unset {
    ~Unset() { unsetenv("LRRT_HSA_STANDIN_ISA"); }
  } unset;
  Setup s("gfx942");
  REQUIRE(std::string(s.device.properties().arch) == "gfx942");
  const uint32_t n = 4096 + 9;
  auto a0 = random_whole(n, -500, 500), b0 = random_whole(n, -500, 500);
  auto a1 = random_whole(n, -500, 500), b1 = random_whole(n, -500, 500);
  lrrt::DeviceBuffer A0(s.device, n * 4), B0(s.device, n * 4), A1(s.device, n * 4), B1(s.device, n * 4),
      C(s.device, n * 4);
  lrrt::copy_to_device(A0, a0.data(), n * 4);
  lrrt::copy_to_device(B0, b0.data(), n * 4);
  lrrt::copy_to_device(A1, a1.data(), n * 4);
  lrrt::copy_to_device(B1, b1.data(), n * 4);
  lrrt::Graph g(s.device);
  g.add_kernel(s.add, config_for(n, 256), AddArgs{A0.data(), B0.data(), C.data(), n},
               {lrrt::read_access(A0), lrrt::read_access(B0), lrrt::write_access(C)});
  g.add_kernel(s.add, config_for(n, 256), AddArgs{A1.data(), B1.data(), C.data(), n},
               {lrrt::read_access(A1), lrrt::read_access(B1), lrrt::write_access(C)});
  auto exec = g.instantiate();
  CHECK(planned_headers(plan_of(exec)) == std::vector<std::vector<uint16_t>>{{kDispB_AcqS_RelA, kDispB, kBarB_RelS}});
  in_both_orders(s, [&](bool) {
    for (int replay = 0; replay < 3; ++replay) {
      std::vector<float> p(n, kPoison), got(n, kPoison);
      lrrt::copy_to_device(C, p.data(), n * 4);
      exec.launch();
      exec.synchronize();
      lrrt::copy_to_host(got.data(), C, n * 4);
      for (uint32_t i = 0; i < n; ++i) REQUIRE_MESSAGE(got[i] == a1[i] + b1[i], "element ", i);
    }
  });
}

TEST_CASE("hsa graph: a fan-in of 7 copies waits in barrier-AND packets of 5 and 2 signals") {
  Setup s;
  const uint32_t n = 256;
  std::vector<lrrt::PinnedHostBuffer> hosts;
  std::vector<lrrt::DeviceBuffer> parts;
  lrrt::DeviceBuffer A(s.device, n * 4), out(s.device, n * 4);
  auto a = random_whole(n, -50, 50);
  lrrt::copy_to_device(A, a);
  lrrt::Graph g(s.device);
  std::vector<lr_graph_access_t> accesses{lrrt::read_access(A), lrrt::write_access(out)};
  std::vector<std::vector<float>> values;
  for (int i = 0; i < 7; ++i) {
    hosts.emplace_back(s.device, n * 4);
    parts.emplace_back(s.device, n * 4);
    values.push_back(random_whole(n, -50, 50));
    std::memcpy(hosts.back().data(), values.back().data(), n * 4);
    g.add_copy(parts.back().data(), hosts.back().data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE);
    accesses.push_back(lrrt::read_access(parts.back()));  // declared reads: the consumer waits for every copy
  }
  // out = parts[6] + A (the kernel reads two of the eight buffers it declares).
  const AddArgs args{parts[6].data(), A.data(), out.data(), n};
  g.add_kernel(s.add, config_for(n, 64), std::as_bytes(std::span(&args, 1)),
               std::span<const lr_graph_access_t>(accesses));
  auto exec = g.instantiate();
  auto plan = plan_of(exec);
  const auto& lane = plan["aql"]["lanes"][0];
  REQUIRE(lane.size() == 5);  // fork, 5 + 2 signals, the consumer, terminal
  CHECK(lane[1]["wait"].size() == 5);
  CHECK(lane[2]["wait"].size() == 2);
  CHECK(plan["aql"]["copy_engine"].size() == 7);
  // The consumer acquires at system scope: the copy engine is outside the agent's caches.
  check_lowered(s, exec, {{kBarB, kBar, kBar, kDisp_AcqS, kBarB_RelS}});
  in_both_orders(s, [&](bool) {
    std::vector<float> result(n, kPoison);
    lrrt::copy_to_device(out, result);
    exec.launch();
    exec.synchronize();
    lrrt::copy_to_host(result, out);
    for (uint32_t i = 0; i < n; ++i) REQUIRE(result[i] == values[6][i] + a[i]);
    CHECK(s.standin.counter("copies") >= 7);
  });
}

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

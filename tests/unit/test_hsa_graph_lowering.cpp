// The packets of the hsa lowering of retained replay on the stand-in
// (test_hsa_graph.cpp has the results in both orders): the packet headers
// the stand-in's packet processor saw are the plan's (pinned like
// test_graph_aql_plan.cpp pins the planner), one replay is one write-index
// add and one doorbell per queue, a fan-in waits in barrier-AND packets of
// at most 5 signals; and the memory scopes that keep data right (issue 24: a
// fill or copy over a kernel's output; gfx942's L2 per XCD).
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

}  // namespace

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

#endif

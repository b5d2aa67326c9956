// Retained replay lowered to a CUDA graph (test_graph_replay.cpp has the
// scenarios on every backend): kernel, memcpy and memset nodes, fills at any
// alignment, a pageable copy back, an empty graph. Without a cuda device and
// the PTX kernels the case says the lowering is not exercised.
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

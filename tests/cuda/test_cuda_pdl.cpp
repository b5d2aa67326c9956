// Programmatic dependent launch on cuda (issue 22, part 3), on a real GPU:
// chains of kernels/rmw.cpp's read-modify-write kernels (counter[i] += 1 per
// step) flagged LR_KERNEL_WAITS_FOR_PRODUCER get programmatic graph edges
// between flagged kernels only, and every counter is exact after back-to-back
// replays and after eager launches (programmatic stream serialization); the
// negative control, a flagged kernel that lets its dependents start and never
// waits, loses updates: why the flag is opt-in. Exits 77 without a device.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lrrt/lrrt.hpp"

namespace {

std::vector<std::byte> pdl_read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "missing file ", path);
  std::vector<char> c((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(c.size());
  std::memcpy(out.data(), c.data(), c.size());
  return out;
}

std::string pdl_kernel_dir() {
  const char* v = std::getenv("LRRT_TEST_KERNEL_DIR");
  return v && *v ? v : LRRT_TEST_KERNEL_DIR;
}

struct RmwArgs {
  uint32_t* counter;
  uint32_t n;
  uint32_t spin;
};

constexpr uint32_t kCounters = 8192, kBlock = 256;

struct Pdl {
  lrrt::Runtime runtime;
  lrrt::Device device = lrrt::Device::select("cuda");
  lrrt::Module module{device, pdl_read(pdl_kernel_dir() + "/rmw.sm_" + std::to_string(LRRT_CUDA_ARCH_NUMBER) + ".cubin")};
  lrrt::DeviceBuffer counters{device, kCounters * 4};
  std::mt19937 rng{std::random_device{}()};
  bool sm90 = std::atoi(device.properties().arch + 3) >= 90;  // "sm_90"
  std::vector<uint32_t> start() {
    std::vector<uint32_t> s(kCounters);
    for (auto& v : s) v = uint32_t(rng() % 1000000);
    lrrt::copy_to_device(counters, s);
    return s;
  }
  std::vector<uint32_t> read() {
    std::vector<uint32_t> got(kCounters, 0xDEADBEEFu);
    lrrt::copy_to_host(got, counters);
    return got;
  }
  lrrt::Kernel kernel(const char* name, bool flagged) {
    lrrt::Kernel k = module.kernel(name);
    k.set_flags(flagged ? LR_KERNEL_WAITS_FOR_PRODUCER : 0);
    CHECK(k.flags() == (flagged ? uint32_t(LR_KERNEL_WAITS_FOR_PRODUCER) : 0u));
    return k;
  }
  lrrt::GraphNode add(lrrt::Graph& g, const lrrt::Kernel& k, uint32_t spin) {
    return g.add_kernel(k, lr_launch_config_t{{kCounters / kBlock, 1, 1}, {kBlock, 1, 1}, 0},
                        RmwArgs{static_cast<uint32_t*>(counters.data()), kCounters, spin},
                        {lrrt::read_write_access(counters)});
  }
};

size_t programmatic_edges(const nlohmann::json& plan) {
  size_t n = 0;
  for (const auto& e : plan["edges"]) n += e.value("programmatic", false);
  return n;
}

uint32_t wrong_counters(const std::vector<uint32_t>& got, const std::vector<uint32_t>& start, uint64_t add) {
  uint32_t wrong = 0;
  for (size_t i = 0; i < got.size(); ++i) wrong += got[i] != uint32_t(start[i] + add);
  return wrong;
}

}  // namespace

TEST_CASE("cuda pdl: chains of kernels that wait get programmatic edges, every counter exact") {
  Pdl p;
  for (const char* name : {"rmw_wait", "rmw_trigger_wait"}) {
    CAPTURE(name);
    lrrt::Kernel k = p.kernel(name, true);
    const uint32_t steps = 256, replays = 20;
    lrrt::Graph g(p.device);
    for (uint32_t i = 0; i < steps; ++i) p.add(g, k, 64);
    lrrt::GraphExec exec = g.instantiate();
    auto plan = nlohmann::json::parse(exec.plan_json());
    CHECK(plan["lowering"] == "cuda-graph");
    // sm_90+ and a 12.3+ driver: every edge joins two flagged kernels.
    if (p.sm90) CHECK(programmatic_edges(plan) == steps - 1);
    MESSAGE(name, ": ", programmatic_edges(plan), " programmatic edges of ", plan["edges"].size());
    auto start = p.start();
    for (uint32_t r = 0; r < replays; ++r) exec.launch();
    exec.synchronize();
    CHECK(wrong_counters(p.read(), start, uint64_t(steps) * replays) == 0);
    // Eager launches: programmatic stream serialization.
    start = p.start();
    const RmwArgs a{static_cast<uint32_t*>(p.counters.data()), kCounters, 64};
    for (uint32_t i = 0; i < steps; ++i)
      lrrt::launch(k, lr_launch_config_t{{kCounters / kBlock, 1, 1}, {kBlock, 1, 1}, 0}, a);
    p.device.synchronize();
    CHECK(wrong_counters(p.read(), start, steps) == 0);
  }
}

TEST_CASE("cuda pdl: only edges between two flagged kernels are programmatic") {
  Pdl p;
  lrrt::Kernel w = p.kernel("rmw_wait", true), plain = p.kernel("rmw_plain", false);
  lrrt::Graph g(p.device);
  // w0 -> w1 -> plain2 -> w3 -> w4: programmatic 0->1 and 3->4 only.
  p.add(g, w, 16);
  p.add(g, w, 16);
  p.add(g, plain, 16);
  p.add(g, w, 16);
  p.add(g, w, 16);
  lrrt::GraphExec exec = g.instantiate();
  auto plan = nlohmann::json::parse(exec.plan_json());
  for (const auto& e : plan["edges"]) {
    const uint32_t from = e["from"], to = e["to"];
    const bool expect = p.sm90 && ((from == 0 && to == 1) || (from == 3 && to == 4));
    CHECK_MESSAGE(e.value("programmatic", false) == expect, from, " -> ", to);
  }
  const auto start = p.start();
  for (int r = 0; r < 50; ++r) exec.launch();
  exec.synchronize();
  CHECK(wrong_counters(p.read(), start, 5 * 50) == 0);
}

TEST_CASE("cuda pdl: negative control, a flagged kernel that never waits loses updates") {
  Pdl p;
  if (!p.sm90) {
    MESSAGE("before sm_90 the flag has no effect: nothing to show");
    return;
  }
  const uint32_t steps = 64, replays = 20, spin = 4096;
  // The same kernel without the flag: exact (the kernel itself is fine).
  {
    lrrt::Kernel k = p.kernel("rmw_no_wait", false);
    lrrt::Graph g(p.device);
    for (uint32_t i = 0; i < steps; ++i) p.add(g, k, spin);
    lrrt::GraphExec exec = g.instantiate();
    const auto start = p.start();
    for (uint32_t r = 0; r < replays; ++r) exec.launch();
    exec.synchronize();
    CHECK(wrong_counters(p.read(), start, uint64_t(steps) * replays) == 0);
  }
  // Flagged: each step lets the next start at once and never waits, so the
  // next reads counters before this one wrote them.
  lrrt::Kernel k = p.kernel("rmw_no_wait", true);
  lrrt::Graph g(p.device);
  for (uint32_t i = 0; i < steps; ++i) p.add(g, k, spin);
  lrrt::GraphExec exec = g.instantiate();
  REQUIRE(programmatic_edges(nlohmann::json::parse(exec.plan_json())) == steps - 1);
  const auto start = p.start();
  for (uint32_t r = 0; r < replays; ++r) exec.launch();
  exec.synchronize();
  const uint32_t wrong = wrong_counters(p.read(), start, uint64_t(steps) * replays);
  MESSAGE("rmw_no_wait under waits_for_producer: ", wrong, " of ", kCounters, " counters wrong");
  CHECK(wrong > 0);
}

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  alarm(280);  // a hang fails the test rather than stalling the suite
  lr_device_t dev{};
  if (lr_init() != LR_SUCCESS || lr_device_select("cuda", 0, &dev) != LR_SUCCESS) {
    std::printf("skipped: no cuda device (%s)\n", lr_last_error_message());
    lr_shutdown();
    return 77;
  }
  lr_shutdown();
  doctest::Context ctx(argc, argv);
  return ctx.run();
}

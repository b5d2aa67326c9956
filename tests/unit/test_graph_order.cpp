// What the derived edges of a replayed graph are worth, proven by negative
// controls: with one edge dropped (LRRT_TEST_DROP_EDGE) and ready work run
// in the worst legal order (LRRT_TEST_WORST_ORDER: one thread, the ready
// node latest in recording order first), an RMW chain, a diamond and a
// two-stage reduction give wrong results, deterministically; with nothing
// dropped they are right in both orders. Also: independent dispatches are
// not serialised (on host two of them meet while both run), and a fault or
// a hang inside a replay is reported and leaves an exec that can be
// destroyed.
//
// Backend: host, whose lowering has the worst-order mode. The hsa stand-in's
// worst order lives in the stand-in's packet processor (switched by its own
// hook), and its negative controls for the same three sequences are in
// test_hsa_graph.cpp.
#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "lrrt/lrrt.hpp"
#include "replay_test_support.hpp"

namespace {

using namespace lrrt::test;

// Backends whose lowering runs in the worst order when LRRT_TEST_WORST_ORDER
// is set at instantiation (each scenario checks that the plan reports it).
std::vector<std::string> worst_order_backends() { return {"host"}; }

// Sets (or, with nullptr, unsets) an environment variable for a scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// lr_set_wait_timeout_ms for a scope (0: wait forever again).
struct WaitTimeout {
  explicit WaitTimeout(uint64_t ms) { REQUIRE(lr_set_wait_timeout_ms(ms) == LR_SUCCESS); }
  ~WaitTimeout() { (void)lr_set_wait_timeout_ms(0); }
};

struct RendezvousArgs {
  void* mine;
  int32_t partner;  // in 32-bit words from `mine`
  uint32_t spin_limit;
};

nlohmann::json plan_of(const lrrt::GraphExec& exec) { return nlohmann::json::parse(exec.plan_json()); }

// Index of edge from -> to in the plan's (reduced) edge list, -1 if absent.
int edge_index(const nlohmann::json& plan, uint32_t from, uint32_t to) {
  const auto& edges = plan["edges"];
  for (size_t i = 0; i < edges.size(); ++i)
    if (edges[i]["from"] == from && edges[i]["to"] == to) return int(i);
  return -1;
}

bool reports_worst_order(const nlohmann::json& plan) { return plan.value("test_worst_order", false); }

struct Kernels {
  lrrt::Device device;
  lrrt::Module saxpy_module, add_module, reduce_module;
  lrrt::Kernel saxpy, add, reduce;
  explicit Kernels(const std::string& b)
      : device(lrrt::Device::select(b)),
        saxpy_module(device, read_file(kernel_file(b, "saxpy"))),
        add_module(device, read_file(kernel_file(b, "vector_add"))),
        reduce_module(device, read_file(kernel_file(b, "reduce"))),
        saxpy(saxpy_module.kernel("saxpy")),
        add(add_module.kernel("vector_add_f32")),
        reduce(reduce_module.kernel("reduce_sum_f32")) {}
};

template <typename T>
void poison_device(const lrrt::DeviceBuffer& buffer, size_t count, T value) {
  std::vector<T> poison(count, value);
  lrrt::copy_to_device(buffer, poison);
}

// ---- The three scenarios ---------------------------------------------------
// Each records its graph once; prepare() writes fresh random inputs and
// poisons the outputs and every intermediate buffer (so that a value left by
// an earlier replay cannot pass for a right one); wrong() checks every
// element and returns how many are wrong. controls() are the edges whose
// loss the worst order must expose.

// y = a*x + y, 1000 times: expected y0 + 1000*a*x.
struct RmwChain {
  static constexpr const char* kName = "RMW chain";
  static constexpr uint32_t n = 2048 + 13, steps = 1000;
  lrrt::PinnedHostBuffer hx, hy0, out;
  lrrt::DeviceBuffer dx, dy;
  lrrt::Graph graph;
  float a = std::array{0.25f, 0.5f, 2.0f}[rng()() % 3];
  explicit RmwChain(Kernels& k)
      : hx(k.device, n * 4), hy0(k.device, n * 4), out(k.device, n * 4), dx(k.device, n * 4), dy(k.device, n * 4),
        graph(k.device) {
    graph.add_copy(dx.data(), hx.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE);   // 0
    graph.add_copy(dy.data(), hy0.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE);  // 1
    for (uint32_t i = 0; i < steps; ++i)                                     // 2 .. steps + 1
      graph.add_kernel(k.saxpy, config_for(n, 256), SaxpyArgs{a, dx.data(), dy.data(), n},
                       {lrrt::read_access(dx), lrrt::read_write_access(dy)});
    graph.add_copy(out.data(), dy.data(), n * 4, LR_MEMCPY_DEVICE_TO_HOST);  // steps + 2
  }
  void prepare() {
    fill_whole({hx.as<float>(), n}, -64, 64);
    fill_whole({hy0.as<float>(), n}, -1000, 1000);
    poison_device(dx, n, kPoison);
    poison_device(dy, n, kPoison);
    std::fill_n(out.as<float>(), n, kPoison);
  }
  size_t wrong() const {
    size_t bad = 0;
    for (uint32_t i = 0; i < n; ++i)
      bad += out.as<float>()[i] != hy0.as<float>()[i] + float(steps) * a * hx.as<float>()[i];
    return bad;
  }
  // The x copy before the first step, a step in the middle before the next,
  // the last step before the copy out.
  std::vector<std::pair<uint32_t, uint32_t>> controls() const {
    return {{0, 2}, {2 + steps / 2, 3 + steps / 2}, {steps + 1, steps + 2}};
  }
};

// P: b = 2*in + b0; C1: c1 = b + u; C2: c2 = b + b; J: out = c1 + c2.
struct Diamond {
  static constexpr const char* kName = "diamond";
  static constexpr uint32_t n = 5000;
  static constexpr uint32_t P = 3, C1 = 4, C2 = 5, J = 6;
  lrrt::PinnedHostBuffer h_in, h_b0, h_u, out;
  lrrt::DeviceBuffer d_in, d_b, d_u, d_c1, d_c2, d_out;
  lrrt::Graph graph;
  explicit Diamond(Kernels& k)
      : h_in(k.device, n * 4), h_b0(k.device, n * 4), h_u(k.device, n * 4), out(k.device, n * 4),
        d_in(k.device, n * 4), d_b(k.device, n * 4), d_u(k.device, n * 4), d_c1(k.device, n * 4),
        d_c2(k.device, n * 4), d_out(k.device, n * 4), graph(k.device) {
    auto cfg = config_for(n, 128);
    graph.add_copy(d_in.data(), h_in.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE);  // 0
    graph.add_copy(d_b.data(), h_b0.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE);   // 1
    graph.add_copy(d_u.data(), h_u.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE);    // 2
    CHECK(graph.add_kernel(k.saxpy, cfg, SaxpyArgs{2.0f, d_in.data(), d_b.data(), n},
                           {lrrt::read_access(d_in), lrrt::read_write_access(d_b)}) == P);
    CHECK(graph.add_kernel(k.add, cfg, AddArgs{d_b.data(), d_u.data(), d_c1.data(), n},
                           {lrrt::read_access(d_b), lrrt::read_access(d_u), lrrt::write_access(d_c1)}) == C1);
    CHECK(graph.add_kernel(k.add, cfg, AddArgs{d_b.data(), d_b.data(), d_c2.data(), n},
                           {lrrt::read_access(d_b), lrrt::write_access(d_c2)}) == C2);
    CHECK(graph.add_kernel(k.add, cfg, AddArgs{d_c1.data(), d_c2.data(), d_out.data(), n},
                           {lrrt::read_access(d_c1), lrrt::read_access(d_c2), lrrt::write_access(d_out)}) == J);
    graph.add_copy(out.data(), d_out.data(), n * 4, LR_MEMCPY_DEVICE_TO_HOST);  // 7
  }
  void prepare() {
    fill_whole({h_in.as<float>(), n}, -100, 100);
    fill_whole({h_b0.as<float>(), n}, -100, 100);
    fill_whole({h_u.as<float>(), n}, -100, 100);
    for (const auto* d : {&d_in, &d_b, &d_u, &d_c1, &d_c2, &d_out}) poison_device(*d, n, kPoison);
    std::fill_n(out.as<float>(), n, kPoison);
  }
  size_t wrong() const {
    size_t bad = 0;
    for (uint32_t i = 0; i < n; ++i) {
      float b = 2.0f * h_in.as<float>()[i] + h_b0.as<float>()[i];
      bad += out.as<float>()[i] != (b + h_u.as<float>()[i]) + (b + b);
    }
    return bad;
  }
  // Both branches from the producer, one into the join.
  std::vector<std::pair<uint32_t, uint32_t>> controls() const { return {{P, C1}, {P, C2}, {C1, J}}; }
};

// Stage 1: one partial sum per workgroup; stage 2: their sum.
struct TwoStageReduction {
  static constexpr const char* kName = "two-stage reduction";
  static constexpr uint32_t block = 256, groups = 256, n = block * groups - 77;  // the last group is partial
  std::vector<float> in, partial, total;
  lrrt::DeviceBuffer d_in, d_partial, d_total;
  lrrt::Graph graph;
  explicit TwoStageReduction(Kernels& k)
      : in(n), partial(groups), total(1), d_in(k.device, size_t(n) * 4), d_partial(k.device, groups * 4),
        d_total(k.device, 64), graph(k.device) {
    graph.add_copy(d_in.data(), in.data(), size_t(n) * 4, LR_MEMCPY_HOST_TO_DEVICE);  // 0 (pageable)
    graph.add_fill(d_partial.data(), groups, 0.0f);                                     // 1
    graph.add_fill(d_total.data(), 16, 0.0f);                                           // 2
    graph.add_kernel(k.reduce, lr_launch_config_t{{groups, 1, 1}, {block, 1, 1}, 0},  // 3
                     ReduceArgs{d_in.data(), d_partial.data(), n},
                     {lrrt::read_access(d_in), lrrt::write_access(d_partial)});
    graph.add_kernel(k.reduce, lr_launch_config_t{{1, 1, 1}, {groups, 1, 1}, 0},  // 4
                     ReduceArgs{d_partial.data(), d_total.data(), groups},
                     {lrrt::read_access(d_partial), lrrt::write_access(d_total.data(), 4)});
    graph.add_copy(partial.data(), d_partial.data(), groups * 4, LR_MEMCPY_DEVICE_TO_HOST);  // 5
    graph.add_copy(total.data(), d_total.data(), 4, LR_MEMCPY_DEVICE_TO_HOST);               // 6
  }
  void prepare() {
    fill_whole(in, -100, 100);
    poison_device(d_in, n, kPoison);
    poison_device(d_partial, groups, kPoison);
    poison_device(d_total, 16, kPoison);
    std::fill(partial.begin(), partial.end(), kPoison);
    total[0] = kPoison;
  }
  size_t wrong() const {
    size_t bad = 0;
    float sum = 0;
    for (uint32_t g = 0; g < groups; ++g) {
      float expect = 0;
      for (uint32_t i = g * block; i < std::min(n, (g + 1) * block); ++i) expect += in[i];
      bad += partial[g] != expect;
      sum += expect;
    }
    return bad + (total[0] != sum);
  }
  // The input before stage 1, stage 1 before stage 2, stage 2 before the copy back.
  std::vector<std::pair<uint32_t, uint32_t>> controls() const { return {{0, 3}, {3, 4}, {4, 6}}; }
};

// Replays `exec` twice on fresh inputs; returns the wrong elements of each.
template <typename Scenario>
std::array<size_t, 2> replay_twice(Scenario& sc, const lrrt::GraphExec& exec) {
  std::array<size_t, 2> wrong{};
  for (auto& w : wrong) {
    sc.prepare();
    exec.launch();
    exec.synchronize();
    w = sc.wrong();
  }
  return wrong;
}

// With nothing dropped: right in the normal and the worst order. With each
// control edge dropped, in the worst order: wrong, in every replay.
template <typename Scenario>
void check_negative_controls(const std::string& backend) {
  CAPTURE(backend);
  const std::string scenario = Scenario::kName;
  CAPTURE(scenario);
  Kernels k(backend);
  Scenario sc(k);
  nlohmann::json normal_plan;
  {
    ScopedEnv order("LRRT_TEST_WORST_ORDER", nullptr);
    ScopedEnv drop("LRRT_TEST_DROP_EDGE", nullptr);
    auto exec = sc.graph.instantiate();
    normal_plan = plan_of(exec);
    CHECK_FALSE(reports_worst_order(normal_plan));
    auto wrong = replay_twice(sc, exec);
    CHECK_MESSAGE(wrong[0] + wrong[1] == 0, wrong[0], " and ", wrong[1], " elements wrong in the normal order");
  }
  {
    ScopedEnv order("LRRT_TEST_WORST_ORDER", "1");
    ScopedEnv drop("LRRT_TEST_DROP_EDGE", nullptr);
    auto exec = sc.graph.instantiate();
    auto plan = plan_of(exec);
    if (!reports_worst_order(plan)) {
      // Only a backend whose lowering has no worst-order mode yet gets here.
      CHECK_MESSAGE(backend != "host", "the host plan does not report the worst order: ", plan["lowering"]);
      MESSAGE(backend, ": the lowering (", plan["lowering"].template get<std::string>(),
              ") has no worst-order mode: its negative controls are NOT covered yet");
      return;
    }
    CHECK(plan["edges"] == normal_plan["edges"]);
    auto wrong = replay_twice(sc, exec);
    CHECK_MESSAGE(wrong[0] + wrong[1] == 0, wrong[0], " and ", wrong[1], " elements wrong in the worst order");
  }
  for (auto [from, to] : sc.controls()) {
    CAPTURE(from);
    CAPTURE(to);
    const int index = edge_index(normal_plan, from, to);
    REQUIRE_MESSAGE(index >= 0, "the plan has no edge ", from, " -> ", to);
    ScopedEnv order("LRRT_TEST_WORST_ORDER", "1");
    ScopedEnv drop("LRRT_TEST_DROP_EDGE", std::to_string(index).c_str());
    auto exec = sc.graph.instantiate();
    auto plan = plan_of(exec);
    REQUIRE(plan.contains("dropped_for_test"));
    CHECK(plan["dropped_for_test"]["from"] == from);
    CHECK(plan["dropped_for_test"]["to"] == to);
    CHECK(edge_index(plan, from, to) < 0);
    CHECK(plan["edges"].size() + 1 == normal_plan["edges"].size());
    CHECK(reports_worst_order(plan));
    auto wrong = replay_twice(sc, exec);
    CHECK_MESSAGE(wrong[0] > 0, "dropping edge ", index, " (", from, " -> ", to, ") went unnoticed");
    CHECK_MESSAGE(wrong[1] > 0, "dropping edge ", index, " (", from, " -> ", to, ") went unnoticed the second time");
  }
}

}  // namespace

TEST_CASE("graph order: an RMW chain with one edge dropped is wrong in the worst order, right without the drop") {
  point_hsa_at_standin();
  lrrt::Runtime runtime;
  for (const auto& backend : worst_order_backends()) check_negative_controls<RmwChain>(backend);
}

TEST_CASE("graph order: a diamond with one edge dropped is wrong in the worst order, right without the drop") {
  point_hsa_at_standin();
  lrrt::Runtime runtime;
  for (const auto& backend : worst_order_backends()) check_negative_controls<Diamond>(backend);
}

TEST_CASE("graph order: a two-stage reduction with one edge dropped is wrong in the worst order, right without") {
  point_hsa_at_standin();
  lrrt::Runtime runtime;
  for (const auto& backend : worst_order_backends()) check_negative_controls<TwoStageReduction>(backend);
}

TEST_CASE("graph order: independent dispatches are not serialised, on host two of them run at the same time") {
  // Two pool threads at least (the host pool is sized when the device opens).
  std::optional<ScopedEnv> threads;
  if (std::thread::hardware_concurrency() < 2 || std::getenv("LRRT_HOST_THREADS"))
    threads.emplace("LRRT_HOST_THREADS", "2");
  lrrt::Runtime runtime;
  lrrt::Device device = lrrt::Device::select("host");
  REQUIRE(device.properties().compute_units >= 2);
  lrrt::Module module(device, read_file(error_kernels_file("host")));
  lrrt::Kernel rendezvous = module.kernel("rendezvous");
  // Words 0-1 belong to A (flag, result), 2-3 to B; each declares its own.
  // One fill clears all four words before either kernel: with a fill per
  // kernel, B could read A's flag while A's fill still wrote it (a real
  // race, which ThreadSanitizer reported).
  lrrt::DeviceBuffer flags(device, 16);
  auto* base = static_cast<std::byte*>(flags.data());
  lrrt::Graph g(device);
  g.add_fill(base, 4, uint32_t(0));  // 0
  const uint32_t patient = 1u << 31, impatient = 1u << 22;
  auto a = g.add_kernel(rendezvous, lr_launch_config_t{{1, 1, 1}, {1, 1, 1}, 0}, RendezvousArgs{base, 2, patient},
                        {lrrt::read_write_access(base, 8)});                                     // 1
  auto b = g.add_kernel(rendezvous, lr_launch_config_t{{1, 1, 1}, {1, 1, 1}, 0},
                        RendezvousArgs{base + 8, -2, patient}, {lrrt::read_write_access(base + 8, 8)});  // 2
  auto results = [&] {
    std::vector<uint32_t> words(4, 0xDEADu);
    lrrt::copy_to_host(words, flags);
    return std::pair{words[1], words[3]};
  };
  {
    ScopedEnv order("LRRT_TEST_WORST_ORDER", nullptr);
    auto exec = g.instantiate();
    auto plan = plan_of(exec);
    CHECK(plan["edges"].size() == 2);  // the fill before each kernel, nothing across
    CHECK(edge_index(plan, 0, a) >= 0);
    CHECK(edge_index(plan, 0, b) >= 0);
    MESSAGE(plan["lowering"].get<std::string>());
    for (int replay = 0; replay < 3; ++replay) {
      poison_device(flags, 4, 0xDEADu);
      exec.launch();
      exec.synchronize();
      auto [ra, rb] = results();
      CHECK_MESSAGE(ra == 1, "A gave up waiting for B (", ra, "): they did not run at the same time");
      CHECK_MESSAGE(rb == 1, "B gave up waiting for A (", rb, "): they did not run at the same time");
    }
  }
  // The check can fail: on one thread (the worst order) B runs first after
  // the fill, waits in vain and gives up; A then finds B's flag up.
  {
    ScopedEnv order("LRRT_TEST_WORST_ORDER", "1");
    auto exec = g.instantiate();
    exec.set_kernarg(b, offsetof(RendezvousArgs, spin_limit), impatient);
    poison_device(flags, 4, 0xDEADu);
    exec.launch();
    exec.synchronize();
    auto [ra, rb] = results();
    CHECK(ra == 1);
    CHECK(rb == 2);
  }
}

TEST_CASE("graph order: a fault inside a replay names the kernel, cancels what follows, the exec goes away") {
  lrrt::Runtime runtime;
  Kernels k("host");
  lrrt::Module errors(k.device, read_file(error_kernels_file("host")));
  lrrt::Kernel fault = errors.kernel("write_to_address");
  const uint32_t n = 1024;
  std::vector<float> x(n), y0(n);
  fill_whole(x, -64, 64);
  fill_whole(y0, -1000, 1000);
  lrrt::DeviceBuffer dx(k.device, n * 4), dy(k.device, n * 4), after(k.device, n * 4);
  lrrt::copy_to_device(dx, x);
  lrrt::Graph g(k.device);
  g.add_copy(dy.data(), y0.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE);                             // 0
  auto step = g.add_kernel(k.saxpy, config_for(n, 64), SaxpyArgs{2.0f, dx.data(), dy.data(), n},
                           {lrrt::read_access(dx), lrrt::read_write_access(dy)});               // 1
  auto bad = g.add_kernel(fault, lr_launch_config_t{{1, 1, 1}, {1, 1, 1}, 0}, uint64_t{8}, {});  // 2: never mapped
  g.add_dependency(step, bad);
  auto marker = g.add_fill(after.data(), n, 1.0f);  // 3: after the fault
  g.add_dependency(bad, marker);
  for (const char* order : {static_cast<const char*>(nullptr), "1"}) {
    const std::string mode = order ? "worst order" : "normal order";
    CAPTURE(mode);
    ScopedEnv worst("LRRT_TEST_WORST_ORDER", order);
    lr_graph_exec_t* exec = nullptr;
    REQUIRE(lr_graph_instantiate(g.get(), nullptr, &exec) == LR_SUCCESS);
    poison_device(after, n, kPoison);
    REQUIRE(lr_graph_exec_launch(exec, nullptr) == LR_SUCCESS);
    CHECK(lr_graph_exec_synchronize(exec) == LR_ERROR_KERNEL_FAULT);
    const std::string message = lr_last_error_message();
    CHECK_MESSAGE(message.find("'write_to_address'") != std::string::npos, message);
    CHECK_MESSAGE(message.find("node 2") != std::string::npos, message);
    MESSAGE(message);
    // Reported once by the exec; the queue it ran on reports it too.
    CHECK(lr_graph_exec_synchronize(exec) == LR_SUCCESS);
    CHECK(lr_synchronize(k.device.get()) == LR_ERROR_KERNEL_FAULT);
    CHECK(lr_synchronize(k.device.get()) == LR_SUCCESS);
    // What came before the fault ran, what followed it did not.
    std::vector<float> y(n, kPoison), marks(n, 0.0f);
    lrrt::copy_to_host(y, dy);
    lrrt::copy_to_host(marks, after);
    for (uint32_t i = 0; i < n; ++i) REQUIRE(y[i] == y0[i] + 2.0f * x[i]);
    for (uint32_t i = 0; i < n; ++i) REQUIRE_MESSAGE(std::isnan(marks[i]), "the node after the fault ran: ", i);
    CHECK(lr_graph_exec_destroy(exec) == LR_SUCCESS);
  }
  // The device runs replays again.
  lrrt::Graph fine(k.device);
  fine.add_copy(dy.data(), y0.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE);
  fine.add_kernel(k.saxpy, config_for(n, 64), SaxpyArgs{-1.0f, dx.data(), dy.data(), n},
                  {lrrt::read_access(dx), lrrt::read_write_access(dy)});
  auto exec = fine.instantiate();
  exec.launch();
  exec.synchronize();
  std::vector<float> y(n, kPoison);
  lrrt::copy_to_host(y, dy);
  for (uint32_t i = 0; i < n; ++i) REQUIRE(y[i] == y0[i] - x[i]);
}

TEST_CASE("graph order: a hanging node times out with lr_set_wait_timeout_ms, and the exec goes away once it ends") {
  lrrt::Runtime runtime;
  Kernels k("host");
  lrrt::Module errors(k.device, read_file(error_kernels_file("host")));
  lrrt::Kernel spin = errors.kernel("spin_forever");
  lrrt::PinnedHostBuffer flag(k.device, 64), after(k.device, 256 * 4);
  lrrt::Graph g(k.device);
  const void* flag_ptr = flag.data();
  auto hang = g.add_kernel(spin, lr_launch_config_t{{1, 1, 1}, {1, 1, 1}, 0}, flag_ptr,
                           {lrrt::read_access(flag.data(), 64)});  // 0
  auto marker = g.add_fill(after.data(), 256, 7.0f);               // 1
  g.add_dependency(hang, marker);
  auto open = [&] { std::atomic_ref<uint32_t>(*flag.as<uint32_t>()).store(1); };
  auto marked = [&] {
    for (uint32_t i = 0; i < 256; ++i)
      if (after.as<float>()[i] != 7.0f) return false;
    return true;
  };

  lr_graph_exec_t* exec = nullptr;
  REQUIRE(lr_graph_instantiate(g.get(), nullptr, &exec) == LR_SUCCESS);
  // Timed out, then finished once the kernel ends.
  {
    std::memset(flag.data(), 0, 64);
    std::fill_n(after.as<float>(), 256, kPoison);
    REQUIRE(lr_graph_exec_launch(exec, nullptr) == LR_SUCCESS);
    {
      const uint64_t limit_ms = 200;
      WaitTimeout timeout(limit_ms);
      CHECK(lr_graph_exec_synchronize(exec) == LR_ERROR_TIMEOUT);
      const std::string message = lr_last_error_message();
      CHECK_MESSAGE(message.find("spin_forever") != std::string::npos, message);
      CHECK_MESSAGE(message.find("200 ms") != std::string::npos, message);
      MESSAGE(message);
      uint32_t complete = 1;
      CHECK(lr_graph_exec_query(exec, &complete) == LR_SUCCESS);
      CHECK(complete == 0);
      CHECK_FALSE(marked());
    }
    open();
    CHECK(lr_graph_exec_synchronize(exec) == LR_SUCCESS);
    CHECK(marked());
  }
  // Destroyed while it hangs: the call waits for the replay to end (here a
  // thread opens the flag), whether or not its wait timed out first.
  {
    std::memset(flag.data(), 0, 64);
    std::fill_n(after.as<float>(), 256, kPoison);
    REQUIRE(lr_graph_exec_launch(exec, nullptr) == LR_SUCCESS);
    WaitTimeout timeout(100);
    std::thread opener([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      open();
    });
    lr_status_t status = lr_graph_exec_destroy(exec);
    opener.join();
    CHECK_MESSAGE((status == LR_SUCCESS || status == LR_ERROR_TIMEOUT), lr_status_string(status));
    CHECK(marked());  // the replay had finished when destroy returned
  }
  CHECK(lr_synchronize(k.device.get()) == LR_SUCCESS);
}

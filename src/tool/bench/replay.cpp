// replay: retained replay (lr_graph_*) per kernel beside lrrt's per-launch
// loop, the backend's native graph and the native per-launch loop, in the
// same run and on the same buffers (docs/benchmarks.md, "replay").
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <random>

#include <fmt/format.h>

#include "tool/bench/context.hpp"

namespace lrrt::tool::bench {
namespace {

// One kernel dispatch of a case, as lrrt and the native baseline take it.
struct Step {
  const lrrt::Kernel* kernel = nullptr;
  int native_kernel = -1;
  lr_dim3_t grid{1, 1, 1}, block{1, 1, 1};
  std::vector<std::byte> args;
  std::vector<lr_graph_access_t> accesses;  // what lrrt derives the edges from
  std::vector<size_t> after;                // the same edges, for the native graph
};

// A float argument rewritten before every replay (lr_graph_exec_set_kernargs;
// the native graph's patch; the per-launch loops pass it in the arguments).
struct Patch {
  size_t step = 0;
  size_t offset = 0;
  static float value(uint64_t replay) { return 0.25f * float(1 + replay % 4); }
};

struct Case {
  std::string metric;  // chain, diamond, fan-out, spin, saxpy-chain, patched-replay
  std::string title;   // for summaries
  std::vector<Step> steps;
  size_t replays = 1;  // replays (or per-launch passes) per sample
  std::optional<Patch> patch;
  // Runs `pass` once (from fresh inputs it sets up) and checks the outputs;
  // throws naming `way` when they are wrong. Null: nothing to check.
  std::function<void(const std::string& way, const std::function<void()>& pass)> verify;
  std::string key() const { return fmt::format("{}-{}", metric, steps.size()); }
};

template <typename T>
std::vector<std::byte> pack(const T& value) {
  std::vector<std::byte> b(sizeof(T));
  std::memcpy(b.data(), &value, sizeof(T));
  return b;
}

std::vector<std::byte> empty_args() { return pack(uint32_t{0}); }

// Packed arguments of kernels/spin.cpp: iterations, seed, out (0, 4, 8).
std::vector<std::byte> spin_args(uint32_t iterations, uint32_t seed, void* out) {
  std::vector<std::byte> b(16);
  std::memcpy(b.data(), &iterations, 4);
  std::memcpy(b.data() + 4, &seed, 4);
  std::memcpy(b.data() + 8, &out, 8);
  return b;
}

uint32_t spin_expected(uint32_t iterations, uint32_t seed, uint32_t id) {
  uint32_t x = seed + id;
  for (uint32_t i = 0; i < iterations; ++i) x = x * 1664525u + 1013904223u;
  return x;
}

lr_graph_access_t access(const void* p, uint64_t offset, uint64_t bytes, lr_access_mode_t mode) {
  return lr_graph_access_t{p, offset, bytes, mode};
}

// LRRT_BENCH_REPLAY_CASES=chain-1,diamond-4,...: only those cases (their
// `<metric>-<kernels>` keys), for bisecting runs (scripts/replay-gpu-check).
bool replay_case_selected(const std::string& key) {
  const char* v = std::getenv("LRRT_BENCH_REPLAY_CASES");
  if (!v || !*v) return true;
  const std::string list = std::string(",") + v + ",";
  return list.find("," + key + ",") != std::string::npos;
}

// LRRT_BENCH_REPLAY_WAYS=lrrt: lrrt's own ways only (replay, per-launch,
// one-at-a-time), no native graph or native loop beside them: the shape of a
// front end that has only lrrt (the Rust example), for comparisons with it.
bool native_ways_selected() {
  const char* v = std::getenv("LRRT_BENCH_REPLAY_WAYS");
  return !(v && std::string(v) == "lrrt");
}

// Measures one case: the four ways alternate within every sample (the order
// rotated each sample), so drift in clocks or load hits all of them alike.
void measure(Context& c, const Case& k) {
  if (!replay_case_selected(k.key())) return;
  const std::string& B = c.benchmark;
  const auto& so = c.options.sampling;
  const size_t n = k.steps.size(), R = k.replays;
  c.progress(fmt::format("{} {} {} ({} kernels)", B, c.backend, k.metric, n));

  lrrt::Graph graph(c.dev);
  std::vector<lrrt::GraphNode> nodes;
  for (const Step& s : k.steps)
    nodes.push_back(graph.add_kernel(*s.kernel, lrrt::launch_config(s.grid, s.block), s.args, s.accesses));
  const lrrt::GraphExec exec = graph.instantiate();
  std::vector<lr_launch_config_t> configs;
  for (const Step& s : k.steps) configs.push_back(lrrt::launch_config(s.grid, s.block));
  // Per-launch arguments: a copy, so the patched float can change in it.
  std::vector<std::vector<std::byte>> args;
  for (const Step& s : k.steps) args.push_back(s.args);

  const bool native = c.native != nullptr && native_ways_selected();
  const bool native_graph = native && c.native->has_graph();
  int ngraph = -1;
  if (native_graph) {
    std::vector<native::GraphStep> steps;
    for (const Step& s : k.steps) steps.push_back({s.native_kernel, s.grid, s.block, s.args, s.after});
    ngraph = c.native->build_graph(steps);
  }
  struct Release {
    native::Baseline* baseline;
    int graph;
    ~Release() {
      try {
        if (graph >= 0) baseline->destroy_graph(graph);
      } catch (...) {  // the baseline's destructor releases it
      }
    }
  } release{c.native.get(), ngraph};

  auto patch_bytes = [&](uint64_t replay) { return pack(Patch::value(replay)); };
  auto set_patch_arg = [&](uint64_t replay) {
    std::vector<std::byte> v = patch_bytes(replay);
    std::copy(v.begin(), v.end(), args[k.patch->step].begin() + std::ptrdiff_t(k.patch->offset));
  };
  auto sync = [&] { check(lr_synchronize(c.dev.get()), "lr_synchronize"); };
  // Each way runs `replays` replays (or passes of per-launch) from replay
  // number `first` and waits: once at the end, or after every replay when a
  // scalar is patched before each (the patch needs the replay finished).
  // Each returns the host time spent until the final wait began (the
  // submission; with patches it includes the waits between replays).
  // hsa stages a patch for the next replay (lrrt.h): its patched replays
  // need no wait in between, so they stay back to back.
  const bool patch_waits = k.patch && c.backend != "hsa";
  auto lrrt_replay = [&](size_t replays, uint64_t first) {
    const double t0 = now_ns();
    for (size_t r = 0; r < replays; ++r) {
      if (k.patch) exec.set_kernargs(nodes[k.patch->step], k.patch->offset, patch_bytes(first + r));
      exec.launch();
      if (patch_waits) exec.synchronize();
    }
    const double submitted = now_ns() - t0;
    exec.synchronize();
    return submitted;
  };
  // One replay at a time: launch, wait, launch (what a loop that reads each
  // replay's result pays); against lrrt_replay's back-to-back replays.
  auto lrrt_one = [&](size_t replays, uint64_t first) {
    const double t0 = now_ns();
    double submitted = 0;
    for (size_t r = 0; r < replays; ++r) {
      if (k.patch) exec.set_kernargs(nodes[k.patch->step], k.patch->offset, patch_bytes(first + r));
      exec.launch();
      if (r + 1 == replays) submitted = now_ns() - t0;
      exec.synchronize();
    }
    return submitted;
  };
  auto lrrt_launch = [&](size_t replays, uint64_t first) {
    const double t0 = now_ns();
    for (size_t r = 0; r < replays; ++r) {
      if (k.patch) set_patch_arg(first + r);
      for (size_t i = 0; i < n; ++i)
        check(lr_launch(k.steps[i].kernel->get(), &configs[i], args[i].data(), args[i].size()), "lr_launch");
      if (k.patch) sync();
    }
    const double submitted = now_ns() - t0;
    sync();
    return submitted;
  };
  auto native_replay = [&](size_t replays, uint64_t first) {
    const double t0 = now_ns();
    for (size_t r = 0; r < replays; ++r) {
      if (k.patch) c.native->patch_graph(ngraph, k.patch->step, k.patch->offset, patch_bytes(first + r));
      c.native->launch_graph(ngraph);
      if (k.patch) c.native->synchronize();
    }
    const double submitted = now_ns() - t0;
    c.native->synchronize();
    return submitted;
  };
  auto native_launch = [&](size_t replays, uint64_t first) {
    const double t0 = now_ns();
    for (size_t r = 0; r < replays; ++r) {
      if (k.patch) set_patch_arg(first + r);
      for (size_t i = 0; i < n; ++i)
        c.native->launch(k.steps[i].native_kernel, k.steps[i].grid, k.steps[i].block, args[i]);
      if (k.patch) c.native->synchronize();
    }
    const double submitted = now_ns() - t0;
    c.native->synchronize();
    return submitted;
  };

  struct Way {
    std::string impl, mode, api;
    std::function<double(size_t, uint64_t)> run;
  };
  std::vector<Way> ways = {
      {"lrrt", "replay",
       patch_waits ? "lr_graph_exec_set_kernargs + lr_graph_exec_launch + lr_graph_exec_synchronize"
       : k.patch   ? "(lr_graph_exec_set_kernargs + lr_graph_exec_launch) x R + lr_graph_exec_synchronize"
                   : "lr_graph_exec_launch x R + lr_graph_exec_synchronize",
       lrrt_replay},
      {"lrrt", "per-launch", k.patch ? "lr_launch per kernel + lr_synchronize per pass"
                                     : "lr_launch per kernel x R + lr_synchronize",
       lrrt_launch}};
  // Back to back against one at a time where a sample has several replays.
  const bool one_at_a_time = R > 1;
  if (one_at_a_time)
    ways.push_back({"lrrt", "one-at-a-time",
                    k.patch ? "(lr_graph_exec_set_kernargs + lr_graph_exec_launch + lr_graph_exec_synchronize) x R"
                            : "(lr_graph_exec_launch + lr_graph_exec_synchronize) x R",
                    lrrt_one});
  if (native_graph) ways.push_back({"native", "replay", c.native->graph_description(), native_replay});
  if (native) ways.push_back({"native", "per-launch", c.native_api, native_launch});

  // Results first: a benchmark that computes garbage fast is worthless.
  if (k.verify)
    for (const Way& w : ways) k.verify(w.impl + " " + w.mode, [&] { w.run(1, 0); });

  // v[w]: the way's time per kernel; v[ways + w]: its submission alone.
  const size_t W = ways.size();
  std::vector<uint64_t> replay_count(W, 0);
  size_t turn = 0;
  auto r = sample_multi(so, 2 * W, [&](double* v) {
    const size_t start = turn++ % W;
    for (size_t j = 0; j < W; ++j) {
      const size_t w = (start + j) % W;
      const double t0 = now_ns();
      const double submitted = ways[w].run(R, replay_count[w]);
      v[w] = (now_ns() - t0) / double(R * n);
      v[W + w] = submitted / double(R * n);
      replay_count[w] += R;
    }
  });
  const std::string kernels = std::to_string(n);
  for (size_t w = 0; w < W; ++w) {
    c.add(k.metric, ways[w].impl, {{"kernels", kernels}, {"mode", ways[w].mode}}, 0, 0,
          ways[w].api + " (per kernel)", std::move(r[w]));
    // The host's part: until the last submission call returned (not with
    // patches, whose replays each wait, nor one at a time).
    if (!k.patch && ways[w].mode != "one-at-a-time")
      c.add(k.metric, ways[w].impl, {{"kernels", kernels}, {"mode", ways[w].mode}, {"timed", "submit"}}, 0, 0,
            ways[w].api + " (per kernel, submission only)", std::move(r[W + w]));
  }

  const std::map<std::string, std::string> replay{{"kernels", kernels}, {"mode", "replay"}};
  const std::map<std::string, std::string> per_launch{{"kernels", kernels}, {"mode", "per-launch"}};
  const double lr = c.median(k.metric, "lrrt", replay), ll = c.median(k.metric, "lrrt", per_launch);
  const double nr = c.median(k.metric, "native", replay);
  c.summary(k.key() + "-replay-vs-native-graph", k.title + ": lrrt replay per kernel", lr, "ns", nr,
            "native graph", native_graph ? "" : fmt::format("{} has no native graph", c.backend));
  c.summary(k.key() + "-per-launch-vs-replay", k.title + ": lrrt per-launch per kernel", ll, "ns", lr,
            "lrrt replay");
  if (one_at_a_time) {
    const std::map<std::string, std::string> one{{"kernels", kernels}, {"mode", "one-at-a-time"}};
    const double l1 = c.median(k.metric, "lrrt", one);
    const lr_graph_exec_stats_t st = exec.stats();
    c.summary(k.key() + "-back-to-back-vs-one-at-a-time", k.title + ": lrrt back-to-back replays per kernel", lr, "ns",
              l1, "one replay at a time",
              fmt::format("{:.0f} replays/s back to back, {:.0f} one at a time; at most {} in flight (0: not "
                          "bounded by lrrt), {} of {} launches waited for an earlier replay",
                          lr > 0 ? 1e9 / (lr * double(n)) : 0.0, l1 > 0 ? 1e9 / (l1 * double(n)) : 0.0,
                          st.max_in_flight, st.launch_waits, st.replays));
  }
  // Submission per replayed kernel where one replay is one sample (the
  // host-side work per packet, without waiting for earlier replays).
  if (R == 1 && !k.patch) {
    auto submit = replay;
    submit["timed"] = "submit";
    c.summary(k.key() + "-replay-submit", k.title + ": lrrt replay submission per kernel",
              c.median(k.metric, "lrrt", submit), "ns", c.median(k.metric, "native", submit), "native graph");
  }
}

// y[i] == y0[i] + coef * x[i] for every element, else throws naming `way`.
void check_saxpy(const std::string& what, const std::string& way, const std::vector<float>& got,
                 const std::vector<float>& x, const std::vector<float>& y0, float coef) {
  for (size_t i = 0; i < got.size(); ++i) {
    const float want = y0[i] + coef * x[i];
    if (got[i] != want)
      throw lrrt::Error(LR_ERROR_RUNTIME, fmt::format("replay {}: {} computed y[{}] = {}, expected {} (y0 {} + {} * x {})",
                                                      what, way, i, got[i], want, y0[i], coef, x[i]));
  }
}

}  // namespace

void replay(Context& c) {
  const auto empty = c.load_kernel("empty");
  const auto saxpy = c.load_kernel("saxpy");
  const auto spin = c.load_kernel("spin");
  int n_empty = -1, n_saxpy = -1, n_spin = -1;
  if (c.native) {
    n_empty = c.native->load_kernel(empty.image, "empty");
    n_saxpy = c.native->load_kernel(saxpy.image, "saxpy");
    n_spin = c.native->load_kernel(spin.image, "spin");
  }
  auto empty_step = [&](std::vector<lr_graph_access_t> accesses, std::vector<size_t> after) {
    return Step{&empty.kernel, n_empty, {1, 1, 1}, {64, 1, 1}, empty_args(), std::move(accesses), std::move(after)};
  };

  // Chains of empty kernels: each reads and writes one token buffer, a
  // read-after-write chain as serial as a stream-captured graph.
  lrrt::DeviceBuffer token(c.dev, 256);
  for (size_t n : {size_t{1}, size_t{16}, size_t{256}, size_t{1024}}) {
    Case k{"chain", fmt::format("chain of {} empty kernels", n), {}, std::max<size_t>(1, 256 / n), {}, {}};
    for (size_t i = 0; i < n; ++i)
      k.steps.push_back(empty_step({access(token.data(), 0, 0, LR_ACCESS_READ_WRITE)},
                                   i ? std::vector<size_t>{i - 1} : std::vector<size_t>{}));
    measure(c, k);
  }

  // Diamond: A writes r0; B and C read r0 and write r1, r2; D reads both.
  {
    lrrt::DeviceBuffer regions(c.dev, 4 * 256);
    const void* p = regions.data();
    Case k{"diamond", "diamond of 4 empty kernels", {}, 64, {}, {}};
    k.steps.push_back(empty_step({access(p, 0, 256, LR_ACCESS_WRITE)}, {}));
    k.steps.push_back(empty_step({access(p, 0, 256, LR_ACCESS_READ), access(p, 256, 256, LR_ACCESS_WRITE)}, {0}));
    k.steps.push_back(empty_step({access(p, 0, 256, LR_ACCESS_READ), access(p, 512, 256, LR_ACCESS_WRITE)}, {0}));
    k.steps.push_back(empty_step({access(p, 256, 256, LR_ACCESS_READ), access(p, 512, 256, LR_ACCESS_READ),
                                  access(p, 768, 256, LR_ACCESS_WRITE)},
                                 {1, 2}));
    measure(c, k);
  }

  // Fan-out: 8 independent spin kernels, each writing its own 64 words; and
  // one alone, the reference for overlap. The spin is calibrated on this
  // device to run at least 30 us (and 4 empty round trips).
  {
    constexpr uint32_t kWidth = 8, kThreads = 64;
    lrrt::DeviceBuffer out(c.dev, kWidth * kThreads * 4);
    auto round_trip = [&](const std::vector<std::byte>& a, const lrrt::Kernel& kernel, lr_dim3_t block) {
      const auto cfg = lrrt::launch_config({1, 1, 1}, block);
      double best = 1e300;
      for (int i = 0; i < 3; ++i) {
        const double t0 = now_ns();
        check(lr_launch(kernel.get(), &cfg, a.data(), a.size()), "lr_launch");
        check(lr_synchronize(c.dev.get()), "lr_synchronize");
        best = std::min(best, now_ns() - t0);
      }
      return best;
    };
    const double empty_rt = round_trip(empty_args(), empty.kernel, {64, 1, 1});
    uint32_t iterations = 256;
    while (iterations < (1u << 24) &&
           round_trip(spin_args(iterations, 0, out.data()), spin.kernel, {kThreads, 1, 1}) <
               std::max(30e3, 4 * empty_rt))
      iterations *= 2;

    std::mt19937 rng{std::random_device{}()};
    auto verify_spin = [&](uint32_t width, const std::vector<uint32_t>& seeds) {
      return [&out, width, seeds, iterations](const std::string& way, const std::function<void()>& pass) {
        std::vector<uint32_t> got(width * kThreads, 0xDEADBEEFu);
        lrrt::copy_to_device(out, got.data(), got.size() * 4);  // poisoned
        pass();
        lrrt::copy_to_host(got.data(), out, got.size() * 4);
        for (uint32_t k = 0; k < width; ++k)
          for (uint32_t i = 0; i < kThreads; ++i)
            if (got[k * kThreads + i] != spin_expected(iterations, seeds[k], i))
              throw lrrt::Error(LR_ERROR_RUNTIME,
                                fmt::format("replay {}: {} wrote out[{}] = {:#x}, expected {:#x}",
                                            width == 1 ? "spin" : "fan-out", way, k * kThreads + i,
                                            got[k * kThreads + i], spin_expected(iterations, seeds[k], i)));
      };
    };
    for (uint32_t width : {1u, kWidth}) {
      Case k{width == 1 ? "spin" : "fan-out",
             width == 1 ? "one spin kernel" : fmt::format("fan-out of {} independent spin kernels", width),
             {},
             4,
             {},
             {}};
      std::vector<uint32_t> seeds;
      for (uint32_t i = 0; i < width; ++i) {
        seeds.push_back(static_cast<uint32_t>(rng()));
        void* dst = static_cast<std::byte*>(out.data()) + size_t(i) * kThreads * 4;
        k.steps.push_back(Step{&spin.kernel, n_spin, {1, 1, 1}, {kThreads, 1, 1},
                               spin_args(iterations, seeds.back(), dst),
                               {access(out.data(), uint64_t(i) * kThreads * 4, kThreads * 4, LR_ACCESS_WRITE)},
                               {}});
      }
      k.verify = verify_spin(width, seeds);
      measure(c, k);
    }
    // Overlap: the fan-out's replay against 8 times one kernel's.
    const std::map<std::string, std::string> one{{"kernels", "1"}, {"mode", "replay"}};
    const std::map<std::string, std::string> eight{{"kernels", std::to_string(kWidth)}, {"mode", "replay"}};
    const std::string note = fmt::format("spin of {} iterations; below 1x the kernels overlapped", iterations);
    for (const std::string impl : {"lrrt", "native"}) {
      const double single = c.median("spin", impl, one), fan = c.median("fan-out", impl, eight);
      const bool lrrt = impl == "lrrt";
      c.summary(lrrt ? "fan-out-overlap" : "fan-out-overlap-native-graph",
                fmt::format("{} of {} independent spin kernels", lrrt ? "lrrt replay" : "native graph", kWidth),
                fan * kWidth, "ns", single * kWidth, fmt::format("{} x one kernel", kWidth), note);
    }
  }

  // saxpy read-modify-write chains: y = a*x + y, 1000 times, and 16 times
  // with the first step's a patched before every replay. Values are
  // multiples of 1/4 of small integers: every sum is exact in float.
  {
    constexpr uint32_t kN = 1024;
    lrrt::DeviceBuffer x(c.dev, kN * 4), y(c.dev, kN * 4);
    std::mt19937 rng{std::random_device{}()};
    std::vector<float> hx(kN), hy0(kN);
    for (uint32_t i = 0; i < kN; ++i) {
      hx[i] = float(1 + rng() % 16);
      hy0[i] = float(rng() % 1000);
    }
    lrrt::copy_to_device(x, hx);
    constexpr float a = 0.25f;
    auto saxpy_step = [&](size_t i) {
      const auto b = saxpy_args(a, x.data(), y.data(), kN);
      return Step{&saxpy.kernel, n_saxpy, {kN / 256, 1, 1}, {256, 1, 1}, std::vector<std::byte>(b.begin(), b.end()),
                  {access(x.data(), 0, 0, LR_ACCESS_READ), access(y.data(), 0, 0, LR_ACCESS_READ_WRITE)},
                  i ? std::vector<size_t>{i - 1} : std::vector<size_t>{}};
    };
    for (size_t steps : {size_t{1000}, size_t{16}}) {
      const bool patched = steps == 16;
      Case k{patched ? "patched-replay" : "saxpy-chain",
             patched ? "16 saxpy steps, a patched before every replay" : "saxpy chain of 1000 steps",
             {},
             patched ? size_t{16} : size_t{1},
             {},
             {}};
      for (size_t i = 0; i < steps; ++i) k.steps.push_back(saxpy_step(i));
      if (patched) k.patch = Patch{0, 0};
      // One replay (patched: the first, with a = Patch::value(0) in step 0).
      const float coef = patched ? Patch::value(0) + float(steps - 1) * a : float(steps) * a;
      k.verify = [&, coef, title = k.metric](const std::string& way, const std::function<void()>& pass) {
        lrrt::copy_to_device(y, hy0);
        pass();
        std::vector<float> got(kN, NAN);
        lrrt::copy_to_host(got, y);
        check_saxpy(title, way, got, hx, hy0, coef);
      };
      measure(c, k);
    }
  }

  // Programmatic dependent launch (issue 22): a read-modify-write chain of
  // rmw kernels (kernels/rmw.cpp), each counter + 1 per step, replayed plain
  // (rmw_plain, no flag) and with LR_KERNEL_WAITS_FOR_PRODUCER on kernels
  // that wait first (rmw_wait) or let their dependents start and then wait
  // (rmw_trigger_wait): on cuda sm_90+ the graph joins them with
  // programmatic edges and eager launches use programmatic stream
  // serialization; elsewhere the flag changes nothing. Counters are checked
  // exactly for every way.
  {
    const size_t steps = c.options.quick ? 64 : 1024;
    constexpr uint32_t kCounters = 4096, kBlock = 256;
    lrrt::DeviceBuffer counters(c.dev, kCounters * 4);
    std::mt19937 rng{std::random_device{}()};
    const std::vector<std::byte> image = c.kernel_image("rmw");
    for (const char* variant : {"plain", "wait", "trigger-wait"}) {
      const std::string name = fmt::format("rmw_{}", variant == std::string("trigger-wait") ? "trigger_wait" : variant);
      Context::LoadedKernel rmw(c.dev, image, name);
      const bool flagged = variant != std::string("plain");
      if (flagged) rmw.kernel.set_flags(LR_KERNEL_WAITS_FOR_PRODUCER);
      const int native_rmw = c.native ? c.native->load_kernel(rmw.image, name) : -1;
      std::vector<std::byte> a(16, std::byte{0});
      void* p = counters.data();
      const uint32_t n = kCounters, spin = 0;
      std::memcpy(a.data(), &p, 8);
      std::memcpy(a.data() + 8, &n, 4);
      std::memcpy(a.data() + 12, &spin, 4);
      Case k{fmt::format("pdl-{}", variant),
             fmt::format("chain of {} read-modify-write kernels, {}", steps,
                         flagged ? fmt::format("{} (waits_for_producer)", name) : std::string("plain")),
             {},
             1,
             {},
             {}};
      for (size_t i = 0; i < steps; ++i)
        k.steps.push_back(Step{&rmw.kernel, native_rmw, {kCounters / kBlock, 1, 1}, {kBlock, 1, 1}, a,
                               {access(p, 0, 0, LR_ACCESS_READ_WRITE)},
                               i ? std::vector<size_t>{i - 1} : std::vector<size_t>{}});
      k.verify = [&, steps](const std::string& way, const std::function<void()>& pass) {
        std::vector<uint32_t> start(kCounters), got(kCounters, 0);
        for (auto& v : start) v = uint32_t(rng() % 100000);
        lrrt::copy_to_device(counters, start.data(), kCounters * 4);
        pass();
        lrrt::copy_to_host(got.data(), counters, kCounters * 4);
        for (uint32_t i = 0; i < kCounters; ++i)
          if (got[i] != start[i] + steps)
            throw lrrt::Error(LR_ERROR_RUNTIME, fmt::format("replay pdl-{}: {} left counter[{}] = {}, expected {} "
                                                            "(start {} + {} steps)",
                                                            variant, way, i, got[i], start[i] + steps, start[i],
                                                            steps));
      };
      measure(c, k);
    }
    const std::map<std::string, std::string> replay{{"kernels", std::to_string(steps)}, {"mode", "replay"}};
    const std::map<std::string, std::string> per_launch{{"kernels", std::to_string(steps)}, {"mode", "per-launch"}};
    for (const char* variant : {"wait", "trigger-wait"}) {
      const std::string metric = fmt::format("pdl-{}", variant);
      c.summary(fmt::format("{}-{}-replay-vs-plain", metric, steps),
                fmt::format("lrrt replay per kernel, {} kernels under waits_for_producer", variant),
                c.median(metric, "lrrt", replay), "ns", c.median("pdl-plain", "lrrt", replay), "lrrt plain replay",
                "programmatic edges on cuda sm_90+ (target <= 0.75x); the flag has no effect on hsa and host");
      c.summary(fmt::format("{}-{}-per-launch-vs-plain", metric, steps),
                fmt::format("lrrt per-launch per kernel, {} kernels under waits_for_producer", variant),
                c.median(metric, "lrrt", per_launch), "ns", c.median("pdl-plain", "lrrt", per_launch),
                "lrrt plain per-launch",
                "programmatic stream serialization on cuda sm_90+; no effect on hsa and host");
    }
  }
}

}  // namespace lrrt::tool::bench

#include "tool/bench_suite.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "lrrt/native_baseline.hpp"
#include "tool/errors.hpp"
#include "tool/units.hpp"

namespace lrrt::tool::bench {
namespace {

constexpr uint64_t KiB = 1024, MiB = KiB * 1024, GiB = MiB * 1024;

// ---- context ---------------------------------------------------------------

struct Ctx {
  lrrt::Device dev;
  std::string backend;
  lr_device_properties_t props;
  const BenchOptions& options;
  ResultSet& out;
  std::unique_ptr<lrrt::native::Baseline> native;
  std::string native_api;

  void progress(const std::string& what) const {
    if (options.progress) options.progress(what);
  }
};

std::vector<std::byte> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("cannot read {}", path.string()));
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(bytes.size());
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

// The compiled kernel for this backend in the kernel folder.
std::vector<std::byte> kernel_image(const Ctx& c, const std::string& name) {
  const auto& dir = c.options.kernel_dir;
  std::vector<std::string> candidates;
  std::string arch = c.props.arch;
  if (c.backend == "host") candidates = {name + ".host.so"};
  else if (c.backend == "cuda") candidates = {name + "." + arch + ".cubin", name + ".fatbin", name + ".ptx"};
  else if (c.backend == "hsa") candidates = {name + "." + arch + ".hsaco", name + ".bundle.hsaco"};
  for (const auto& f : candidates)
    if (std::filesystem::exists(dir / f)) return read_file(dir / f);
  std::string list;
  for (const auto& f : candidates) list += (list.empty() ? "" : ", ") + f;
  throw InputError(fmt::format("no {} build of kernel '{}' in {} (looked for {}); pass --kernel-dir", c.backend,
                               name, dir.string(), list));
}

void add(Ctx& c, const std::string& benchmark, const std::string& metric, const std::string& impl,
         std::map<std::string, std::string> params, uint64_t size, uint64_t bytes, std::string api,
         std::vector<double> samples) {
  Measurement m;
  m.benchmark = benchmark;
  m.metric = metric;
  m.backend = c.backend;
  m.impl = impl;
  m.params = std::move(params);
  m.size = size;
  m.bytes = bytes;
  m.api = std::move(api);
  m.stats = compute_stats(samples);
  m.samples = std::move(samples);
  c.out.measurements.push_back(std::move(m));
}

// A headline number of the benchmark (bench_result.hpp, Summary). A value
// that was not measured (NaN) adds nothing; a NaN baseline leaves it without
// one.
void summary(Ctx& c, const std::string& benchmark, const std::string& name, const std::string& label, double value,
             const std::string& unit, double baseline = NAN, const std::string& baseline_label = "",
             const std::string& note = "") {
  if (std::isnan(value)) return;
  Summary s;
  s.benchmark = benchmark;
  s.backend = c.backend;
  s.name = name;
  s.label = label;
  s.value = value;
  s.unit = unit;
  if (!std::isnan(baseline)) {
    s.baseline = baseline;
    s.baseline_label = baseline_label;
  }
  s.note = note;
  c.out.summaries.push_back(std::move(s));
}

double median_of(const Ctx& c, const std::string& benchmark, const std::string& metric, const std::string& impl,
                 const std::map<std::string, std::string>& params = {}, uint64_t size = 0) {
  const Measurement* m = c.out.find(benchmark, metric, c.backend, impl, params, size);
  return m ? m->stats.median : NAN;
}

// Packed explicit arguments of kernels/saxpy.cpp: float a, const float* x,
// float* y, uint32_t n (natural alignment: 0, 8, 16, 24).
std::array<std::byte, 28> saxpy_args(float a, const void* x, void* y, uint32_t n) {
  std::array<std::byte, 28> b{};
  std::memcpy(b.data(), &a, 4);
  std::memcpy(b.data() + 8, &x, 8);
  std::memcpy(b.data() + 16, &y, 8);
  std::memcpy(b.data() + 24, &n, 4);
  return b;
}

void check(lr_status_t s, const char* what) { lrrt::check(s, what); }

// ---- launch-overhead ----------------------------------------------------------

double thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e9 + double(ts.tv_nsec);
}

// A wait for ~20 ms of queued GPU work (saxpy launches): wall time and the
// waiting thread's CPU time, lrrt's spin-then-block wait beside the native
// default and blocking waits. Shows what the spin costs on long work.
void bench_long_wait(Ctx& c, bool native_blocking) {
  const std::string B = "launch-overhead";
  const auto& so = c.options.sampling;
  auto image = kernel_image(c, "saxpy");
  lrrt::Module module(c.dev, image);
  lrrt::Kernel kernel = module.kernel("saxpy");
  const uint32_t n = 4u << 20;
  lrrt::DeviceBuffer x(c.dev, size_t(n) * 4), y(c.dev, size_t(n) * 4);
  {
    std::vector<float> zeros(n, 0.0f);
    lrrt::copy_to_device(x, zeros.data(), size_t(n) * 4);
    lrrt::copy_to_device(y, zeros.data(), size_t(n) * 4);
  }
  const auto cfg = lrrt::launch_config({(n + 255) / 256, 1, 1}, {256, 1, 1});
  const auto args = saxpy_args(1.0f, x.data(), y.data(), n);
  auto launch = [&] { check(lr_launch(kernel.get(), &cfg, args.data(), args.size()), "lr_launch"); };
  auto sync = [&] { check(lr_synchronize(c.dev.get()), "lr_synchronize"); };
  // Launches per sample: about 20 ms of work (10x the default spin), from
  // the time per launch of a timed batch.
  launch();
  sync();
  double t0 = now_ns();
  for (int i = 0; i < 20; ++i) launch();
  sync();
  const double one = std::max((now_ns() - t0) / 20, 1000.0);
  const int reps = static_cast<int>(std::clamp(20e6 / one, 1.0, 5000.0));
  // The count is calibrated per run, so it stays out of the parameters and
  // the API text (lrrt compare matches runs by those); the summary names it.
  const std::map<std::string, std::string> p;
  const std::string what = "saxpy launches (~20 ms), then ";
  c.progress(fmt::format("{} {} long-wait ({} saxpy launches)", B, c.backend, reps));

  auto measure = [&](auto&& enqueue, auto&& wait) {
    return sample_multi(so, 2, [&](double* v) {
      enqueue();
      double w0 = now_ns(), c0 = thread_cpu_ns();
      wait();
      v[0] = now_ns() - w0;
      v[1] = thread_cpu_ns() - c0;
    });
  };
  auto r = measure([&] { for (int i = 0; i < reps; ++i) launch(); }, sync);
  add(c, B, "long-wait", "lrrt", p, 0, 0, what + "lr_synchronize", std::move(r[0]));
  add(c, B, "long-wait-cpu", "lrrt", p, 0, 0, what + "lr_synchronize: the waiting thread's CPU time", std::move(r[1]));
  if (!c.native) return;
  int nk = c.native->load_kernel(image, "saxpy");
  std::span<const std::byte> nargs(args.data(), args.size());
  auto nlaunch = [&] {
    for (int i = 0; i < reps; ++i) c.native->launch(nk, {(n + 255) / 256, 1, 1}, {256, 1, 1}, nargs);
  };
  for (bool blocking : {false, true}) {
    if (blocking && !native_blocking) continue;
    auto q = p;
    if (blocking) q["wait"] = "blocking";
    auto nr = measure(nlaunch, [&] {
      if (blocking) c.native->synchronize_blocking();
      else c.native->synchronize();
    });
    std::string api = what + c.native_api + (blocking ? " (blocking wait)" : "");
    add(c, B, "long-wait", "native", q, 0, 0, api, std::move(nr[0]));
    add(c, B, "long-wait-cpu", "native", q, 0, 0, api, std::move(nr[1]));
  }
  const double wall = median_of(c, B, "long-wait", "lrrt"), cpu = median_of(c, B, "long-wait-cpu", "lrrt");
  const double nwall = median_of(c, B, "long-wait", "native"), ncpu = median_of(c, B, "long-wait-cpu", "native");
  const double bcpu = median_of(c, B, "long-wait-cpu", "native", {{"wait", "blocking"}});
  const std::string launches = fmt::format("{} saxpy launches", reps);
  summary(c, B, "long-wait", "a wait for ~20 ms of queued work", wall, "ns", nwall, "native default wait", launches);
  summary(c, B, "long-wait-cpu", "the waiting thread's CPU time over that wait", cpu, "ns", ncpu,
          "native default wait", launches);
  if (!std::isnan(bcpu))
    summary(c, B, "long-wait-cpu-blocking", "the waiting thread's CPU time over that wait", cpu, "ns", bcpu,
            "native blocking wait", launches);
}

void bench_launch_overhead(Ctx& c) {
  const std::string B = "launch-overhead";
  auto image = kernel_image(c, "empty");
  lrrt::Module module(c.dev, image);
  lrrt::Kernel kernel = module.kernel("empty");
  const uint32_t arg = 0;
  const auto cfg = lrrt::launch_config({1, 1, 1}, {64, 1, 1});
  const size_t batch = c.options.quick ? 100 : 200;
  const auto& so = c.options.sampling;
  auto launch = [&] { check(lr_launch(kernel.get(), &cfg, &arg, sizeof(arg)), "lr_launch"); };
  auto sync = [&] { check(lr_synchronize(c.dev.get()), "lr_synchronize"); };
  const std::string api = "lr_launch / lr_synchronize";

  int nk = -1;
  std::span<const std::byte> nargs(reinterpret_cast<const std::byte*>(&arg), sizeof(arg));
  if (c.native) nk = c.native->load_kernel(image, "empty");
  auto nlaunch = [&] { c.native->launch(nk, {1, 1, 1}, {64, 1, 1}, nargs); };

  // lrrt and native samples alternate (order swapped every sample), so
  // drift in clocks or load hits both sides of a ratio alike.
  auto paired = [&](const std::string& metric, const std::function<double()>& lrrt_op,
                    const std::function<double()>& native_op) {
    if (!c.native) {
      add(c, B, metric, "lrrt", {}, 0, 0, api, sample(so, lrrt_op));
      return;
    }
    size_t turn = 0;
    auto r = sample_multi(so, 2, [&](double* v) {
      if (turn++ % 2) {
        v[1] = native_op();
        v[0] = lrrt_op();
      } else {
        v[0] = lrrt_op();
        v[1] = native_op();
      }
    });
    add(c, B, metric, "lrrt", {}, 0, 0, api, std::move(r[0]));
    add(c, B, metric, "native", {}, 0, 0, c.native_api, std::move(r[1]));
  };

  c.progress(B + " " + c.backend + " enqueue");
  paired(
      "enqueue",
      [&] {
        double t0 = now_ns();
        for (size_t i = 0; i < batch; ++i) launch();
        double t = now_ns() - t0;
        sync();
        return t / double(batch);
      },
      [&] {
        double t0 = now_ns();
        for (size_t i = 0; i < batch; ++i) nlaunch();
        double t = now_ns() - t0;
        c.native->synchronize();
        return t / double(batch);
      });

  c.progress(B + " " + c.backend + " throughput");
  paired(
      "throughput",
      [&] {
        double t0 = now_ns();
        for (size_t i = 0; i < batch; ++i) launch();
        sync();
        return (now_ns() - t0) / double(batch);
      },
      [&] {
        double t0 = now_ns();
        for (size_t i = 0; i < batch; ++i) nlaunch();
        c.native->synchronize();
        return (now_ns() - t0) / double(batch);
      });

  c.progress(B + " " + c.backend + " round-trip");
  paired(
      "round-trip",
      [&] {
        double t0 = now_ns();
        launch();
        sync();
        return now_ns() - t0;
      },
      [&] {
        double t0 = now_ns();
        nlaunch();
        c.native->synchronize();
        return now_ns() - t0;
      });

  // Blocking waits (the thread sleeps until the device signals), which
  // lrrt's spin-then-block wait is meant to beat on short work: lrrt's own
  // with no spin (lr_set_wait_spin_us(0)), and the native API's.
  {
    struct NoSpin {  // restores the caller's spin window however the sampling ends
      uint64_t saved = [] {
        uint64_t us = 0;
        check(lr_get_wait_spin_us(&us), "lr_get_wait_spin_us");
        return us;
      }();
      NoSpin() { check(lr_set_wait_spin_us(0), "lr_set_wait_spin_us"); }
      ~NoSpin() { lr_set_wait_spin_us(saved); }
    } no_spin;
    add(c, B, "round-trip", "lrrt", {{"wait", "blocking"}}, 0, 0, api + " with lr_set_wait_spin_us(0)",
        sample(so, [&] {
          double t0 = now_ns();
          launch();
          sync();
          return now_ns() - t0;
        }));
  }
  const bool native_blocking = c.native && c.native->synchronize_blocking();
  if (native_blocking)
    add(c, B, "round-trip", "native", {{"wait", "blocking"}}, 0, 0, c.native_api + " (blocking wait)",
        sample(so, [&] {
          double t0 = now_ns();
          nlaunch();
          c.native->synchronize_blocking();
          return now_ns() - t0;
        }));

  c.progress(B + " " + c.backend + " idle-synchronize");
  constexpr int kSyncs = 16;
  sync();
  add(c, B, "idle-synchronize", "lrrt", {}, 0, 0, "lr_synchronize", sample(so, [&] {
        double t0 = now_ns();
        for (int i = 0; i < kSyncs; ++i) sync();
        return (now_ns() - t0) / kSyncs;
      }));
  if (c.native && c.native->has_synchronize()) {
    c.native->synchronize();
    add(c, B, "idle-synchronize", "native", {}, 0, 0, c.native_api, sample(so, [&] {
          double t0 = now_ns();
          for (int i = 0; i < kSyncs; ++i) c.native->synchronize();
          return (now_ns() - t0) / kSyncs;
        }));
  }

  if (c.backend != "host") bench_long_wait(c, native_blocking);

  const double rt_l = median_of(c, B, "round-trip", "lrrt"), rt_n = median_of(c, B, "round-trip", "native");
  const double rt_b = median_of(c, B, "round-trip", "native", {{"wait", "blocking"}});
  const double rt_lb = median_of(c, B, "round-trip", "lrrt", {{"wait", "blocking"}});
  const double tp_l = median_of(c, B, "throughput", "lrrt"), tp_n = median_of(c, B, "throughput", "native");
  const double eq_l = median_of(c, B, "enqueue", "lrrt"), eq_n = median_of(c, B, "enqueue", "native");
  const std::string empty = "empty dispatch, ";
  summary(c, B, "empty-dispatch-round-trip", empty + "launch + synchronize", rt_l, "ns", rt_n, "native");
  if (!std::isnan(rt_b))
    summary(c, B, "empty-dispatch-round-trip-blocking", empty + "launch + synchronize", rt_l, "ns", rt_b,
            "native blocking wait");
  summary(c, B, "empty-dispatch-round-trip-no-spin", empty + "launch + synchronize without lrrt's spin", rt_lb, "ns",
          rt_l, "with the spin", "lr_set_wait_spin_us(0)");
  summary(c, B, "empty-dispatch-throughput", empty + "per launch at throughput", tp_l, "ns", tp_n, "native");
  summary(c, B, "empty-dispatch-enqueue", empty + "enqueue per launch", eq_l, "ns", eq_n, "native");
}

// ---- copy-bandwidth ------------------------------------------------------------

struct CopyCase {
  const char* direction;
  const char* memory;
  lr_memcpy_kind_t kind;
};

void bench_copy_bandwidth(Ctx& c) {
  const std::string B = "copy-bandwidth";
  std::vector<uint64_t> sizes = c.options.sizes.empty() ? default_sizes(c.options.quick) : c.options.sizes;
  const uint64_t cap = max_copy_size(c.dev);
  std::vector<uint64_t> skipped;
  std::erase_if(sizes, [&](uint64_t s) {
    if (s <= cap) return false;
    skipped.push_back(s);
    return true;
  });
  if (!skipped.empty())
    c.out.errors.push_back(fmt::format("copy-bandwidth on {}: sizes above {} skipped (memory): {}", c.backend,
                                       format_bytes(cap), fmt::join(skipped, ", ")));
  if (sizes.empty()) return;
  const uint64_t S = sizes.back();

  lrrt::DeviceBuffer da(c.dev, S), db(c.dev, S);
  lrrt::PinnedHostBuffer pinned(c.dev, S);
  std::unique_ptr<std::byte[]> pageable(new std::byte[S]);
  std::memset(pageable.get(), 0x5a, S);  // touch every page
  std::memset(pinned.data(), 0xa5, S);
  check(lr_memcpy(c.dev.get(), da.data(), pinned.data(), S, LR_MEMCPY_HOST_TO_DEVICE), "lr_memcpy");
  check(lr_memcpy(c.dev.get(), db.data(), pinned.data(), S, LR_MEMCPY_HOST_TO_DEVICE), "lr_memcpy");

  const CopyCase cases[] = {
      {"h2d", "pageable", LR_MEMCPY_HOST_TO_DEVICE},
      {"h2d", "pinned", LR_MEMCPY_HOST_TO_DEVICE},
      {"d2h", "pageable", LR_MEMCPY_DEVICE_TO_HOST},
      {"d2h", "pinned", LR_MEMCPY_DEVICE_TO_HOST},
      {"d2d", "device", LR_MEMCPY_DEVICE_TO_DEVICE},
  };
  for (const auto& cc : cases) {
    void* host = std::string_view(cc.memory) == "pageable" ? static_cast<void*>(pageable.get()) : pinned.data();
    void* dst;
    const void* src;
    switch (cc.kind) {
      case LR_MEMCPY_HOST_TO_DEVICE: dst = da.data(); src = host; break;
      case LR_MEMCPY_DEVICE_TO_HOST: dst = host; src = da.data(); break;
      default: dst = db.data(); src = da.data(); break;
    }
    const bool native_async = std::string_view(cc.memory) != "pageable";
    for (uint64_t size : sizes) {
      c.progress(fmt::format("{} {} {} {} {}", B, c.backend, cc.direction, cc.memory, format_bytes(size)));
      const size_t ops = static_cast<size_t>(std::clamp<uint64_t>(MiB / size, 1, 64));
      std::map<std::string, std::string> params{{"direction", cc.direction}, {"memory", cc.memory}};
      SamplingOptions so = c.options.sampling;
      if (size >= 256 * MiB) so.warmup = 1;
      // Like for like: pinned and device memory go through the asynchronous
      // copy and one synchronize, as the native baseline does with
      // cuMemcpy*Async + cuStreamSynchronize; pageable memory through the
      // blocking lr_memcpy (and its staging pipeline) against the native
      // blocking copy.
      const char* lrrt_api = native_async ? "lr_memcpy_async + lr_synchronize" : "lr_memcpy";
      add(c, B, "copy", "lrrt", params, size, size, lrrt_api, sample(so, [&] {
            double t0 = now_ns();
            if (native_async) {
              for (size_t i = 0; i < ops; ++i)
                check(lr_memcpy_async(c.dev.get(), dst, src, size, cc.kind, nullptr), "lr_memcpy_async");
              check(lr_synchronize(c.dev.get()), "lr_synchronize");
            } else {
              for (size_t i = 0; i < ops; ++i) check(lr_memcpy(c.dev.get(), dst, src, size, cc.kind), "lr_memcpy");
            }
            return (now_ns() - t0) / double(ops);
          }));
      if (!c.native) continue;
      if (!c.native->copy(dst, src, size, cc.kind, native_async)) continue;  // not supported
      c.native->synchronize();
      std::string api = native_async ? "native asynchronous copy + stream synchronize" : "native blocking copy";
      add(c, B, "copy", "native", params, size, size, api, sample(so, [&] {
            double t0 = now_ns();
            for (size_t i = 0; i < ops; ++i) c.native->copy(dst, src, size, cc.kind, native_async);
            if (native_async) c.native->synchronize();
            return (now_ns() - t0) / double(ops);
          }));
    }
    std::map<std::string, std::string> params{{"direction", cc.direction}, {"memory", cc.memory}};
    const Measurement* l = c.out.find(B, "copy", c.backend, "lrrt", params, S);
    const Measurement* n = c.out.find(B, "copy", c.backend, "native", params, S);
    if (l)
      summary(c, B, fmt::format("{}-{}-{}", cc.direction, cc.memory, S),
              fmt::format("{} {} {}", cc.direction, cc.memory, format_bytes(S)), l->gbps(), "GB/s",
              n ? n->gbps() : NAN, "native");
  }
}

// ---- async-copy-launch -----------------------------------------------------------

void bench_async_copy_launch(Ctx& c) {
  const std::string B = "async-copy-launch";
  auto image = kernel_image(c, "saxpy");
  lrrt::Module module(c.dev, image);
  lrrt::Kernel kernel = module.kernel("saxpy");
  std::vector<uint64_t> sizes = c.options.quick ? std::vector<uint64_t>{1 * MiB}
                                                : std::vector<uint64_t>{64 * KiB, 16 * MiB};
  const uint64_t S = sizes.back();
  lrrt::PinnedHostBuffer in(c.dev, S), out(c.dev, S);
  lrrt::DeviceBuffer x(c.dev, S), y(c.dev, S);
  std::memset(in.data(), 0, S);
  check(lr_memcpy(c.dev.get(), x.data(), in.data(), S, LR_MEMCPY_HOST_TO_DEVICE), "lr_memcpy");
  check(lr_memcpy(c.dev.get(), y.data(), in.data(), S, LR_MEMCPY_HOST_TO_DEVICE), "lr_memcpy");
  lrrt::Event e1(c.dev), e2(c.dev);
  int nk = c.native ? c.native->load_kernel(image, "saxpy") : -1;
  const auto& so = c.options.sampling;
  const auto dev = c.dev.get();

  for (uint64_t size : sizes) {
    const uint32_t n = static_cast<uint32_t>(size / 4);
    const auto cfg = lrrt::launch_config({(n + 255) / 256, 1, 1}, {256, 1, 1});
    const auto args = saxpy_args(1.0f, x.data(), y.data(), n);
    auto launch = [&](lr_event_t* const* deps, size_t ndeps) {
      check(lr_launch_with_dependencies(kernel.get(), &cfg, args.data(), args.size(), deps, ndeps),
            "lr_launch_with_dependencies");
    };
    c.progress(fmt::format("{} {} {}", B, c.backend, format_bytes(size)));

    // copy -> kernel -> copy, the host waiting after each step.
    auto host_waits = sample_multi(so, 2, [&](double* v) {
      double t0 = now_ns();
      check(lr_memcpy_async(dev, x.data(), in.data(), size, LR_MEMCPY_HOST_TO_DEVICE, e1.get()), "lr_memcpy_async");
      e1.synchronize();
      launch(nullptr, 0);
      check(lr_synchronize(dev), "lr_synchronize");
      check(lr_memcpy_async(dev, out.data(), y.data(), size, LR_MEMCPY_DEVICE_TO_HOST, e2.get()), "lr_memcpy_async");
      v[0] = now_ns() - t0;
      e2.synchronize();
      v[1] = now_ns() - t0;
    });
    // The same chain with device-side dependencies and one wait at the end.
    auto device_deps = sample_multi(so, 2, [&](double* v) {
      double t0 = now_ns();
      check(lr_memcpy_async(dev, x.data(), in.data(), size, LR_MEMCPY_HOST_TO_DEVICE, e1.get()), "lr_memcpy_async");
      lr_event_t* deps[] = {e1.get()};
      launch(deps, 1);
      check(lr_memcpy_async(dev, out.data(), y.data(), size, LR_MEMCPY_DEVICE_TO_HOST, e2.get()), "lr_memcpy_async");
      v[0] = now_ns() - t0;
      e2.synchronize();
      v[1] = now_ns() - t0;
    });
    const std::string api_hw = "lr_memcpy_async + lr_event_synchronize, lr_launch + lr_synchronize, ...";
    const std::string api_dd = "lr_memcpy_async, lr_launch_with_dependencies, lr_memcpy_async, one wait";
    add(c, B, "submit", "lrrt", {{"variant", "host-waits"}}, size, 0, api_hw, std::move(host_waits[0]));
    add(c, B, "end-to-end", "lrrt", {{"variant", "host-waits"}}, size, 0, api_hw, std::move(host_waits[1]));
    add(c, B, "submit", "lrrt", {{"variant", "device-deps"}}, size, 0, api_dd, std::move(device_deps[0]));
    add(c, B, "end-to-end", "lrrt", {{"variant", "device-deps"}}, size, 0, api_dd, std::move(device_deps[1]));

    if (c.native) {
      std::span<const std::byte> nargs(args.data(), args.size());
      for (bool waits : {true, false}) {
        auto r = sample_multi(so, 2, [&](double* v) {
          double t0 = now_ns();
          c.native->copy(x.data(), in.data(), size, LR_MEMCPY_HOST_TO_DEVICE, true);
          if (waits) c.native->synchronize();
          c.native->launch(nk, {(n + 255) / 256, 1, 1}, {256, 1, 1}, nargs);
          if (waits) c.native->synchronize();
          c.native->copy(out.data(), y.data(), size, LR_MEMCPY_DEVICE_TO_HOST, true);
          v[0] = now_ns() - t0;
          c.native->synchronize();
          v[1] = now_ns() - t0;
        });
        std::string variant = waits ? "host-waits" : "device-deps";
        add(c, B, "submit", "native", {{"variant", variant}}, size, 0, c.native_api, std::move(r[0]));
        add(c, B, "end-to-end", "native", {{"variant", variant}}, size, 0, c.native_api, std::move(r[1]));
      }
    }
    const double hw = median_of(c, B, "end-to-end", "lrrt", {{"variant", "host-waits"}}, size);
    const double dd = median_of(c, B, "end-to-end", "lrrt", {{"variant", "device-deps"}}, size);
    const double sub = median_of(c, B, "submit", "lrrt", {{"variant", "device-deps"}}, size);
    const std::string chain = format_bytes(size) + " copy -> saxpy -> copy";
    summary(c, B, fmt::format("device-deps-end-to-end-{}", size), chain + " end-to-end, device-side dependencies", dd,
            "ns", hw, "host waits");
    summary(c, B, fmt::format("device-deps-submit-{}", size), chain + " submitted, device-side dependencies", sub,
            "ns");
  }
}

// ---- double-buffer -------------------------------------------------------------

void bench_double_buffer(Ctx& c) {
  const std::string B = "double-buffer";
  auto image = kernel_image(c, "saxpy");
  lrrt::Module module(c.dev, image);
  lrrt::Kernel kernel = module.kernel("saxpy");
  const size_t iterations = c.options.quick ? 8 : 16;
  uint64_t S = c.options.quick ? 4 * MiB : 16 * MiB;
  S = std::min<uint64_t>(S, std::max<uint64_t>(MiB, max_copy_size(c.dev) / 4));
  const uint32_t n = static_cast<uint32_t>(S / 4);
  const auto dev = c.dev.get();
  lrrt::PinnedHostBuffer host(c.dev, S);
  lrrt::DeviceBuffer xs[2] = {lrrt::DeviceBuffer(c.dev, S), lrrt::DeviceBuffer(c.dev, S)};
  lrrt::DeviceBuffer y(c.dev, S);
  std::memset(host.data(), 0, S);
  check(lr_memcpy(dev, y.data(), host.data(), S, LR_MEMCPY_HOST_TO_DEVICE), "lr_memcpy");
  const auto cfg = lrrt::launch_config({(n + 255) / 256, 1, 1}, {256, 1, 1});
  auto launch = [&](void* x) {
    auto args = saxpy_args(1.0f, x, y.data(), n);
    check(lr_launch(kernel.get(), &cfg, args.data(), args.size()), "lr_launch");
  };
  // The CPU stage: produce the next input (a cheap generator, one thread).
  auto prepare = [&](void* p, size_t it) {
    auto* f = static_cast<float*>(p);
    for (uint32_t j = 0; j < n; ++j) f[j] = float((j + it) & 1023) * 0.25f;
  };
  lrrt::PinnedHostDoubleBuffer buffers(c.dev, S);

  SamplingOptions so = c.options.sampling;
  so.min_samples = c.options.quick ? 3 : 5;
  so.warmup = 1;
  c.progress(fmt::format("{} {} {} x {}", B, c.backend, iterations, format_bytes(S)));
  auto r = sample_multi(so, 5, [&](double* v) {
    const double per = double(iterations);
    double t0 = now_ns();
    for (size_t it = 0; it < iterations; ++it) {
      prepare(host.data(), it);
      check(lr_memcpy(dev, xs[0].data(), host.data(), S, LR_MEMCPY_HOST_TO_DEVICE), "lr_memcpy");
      launch(xs[0].data());
      check(lr_synchronize(dev), "lr_synchronize");
    }
    v[0] = (now_ns() - t0) / per;

    t0 = now_ns();
    for (size_t it = 0; it < iterations; ++it) {
      auto& slot = buffers.acquire();
      prepare(slot.host.data(), it);
      buffers.copy_to_device_async(slot, xs[it & 1].data(), S);
      launch(xs[it & 1].data());
      buffers.mark_work_submitted(slot);
    }
    buffers.finish();
    v[1] = (now_ns() - t0) / per;

    t0 = now_ns();
    for (size_t it = 0; it < iterations; ++it) prepare(host.data(), it);
    v[2] = (now_ns() - t0) / per;

    t0 = now_ns();
    for (size_t it = 0; it < iterations; ++it)
      check(lr_memcpy_async(dev, xs[it & 1].data(), host.data(), S, LR_MEMCPY_HOST_TO_DEVICE, nullptr),
            "lr_memcpy_async");
    check(lr_synchronize(dev), "lr_synchronize");
    v[3] = (now_ns() - t0) / per;

    t0 = now_ns();
    for (size_t it = 0; it < iterations; ++it) launch(xs[it & 1].data());
    check(lr_synchronize(dev), "lr_synchronize");
    v[4] = (now_ns() - t0) / per;
  });
  const char* names[] = {"sequential", "double-buffered", "stage-prepare", "stage-copy", "stage-kernel"};
  const char* apis[] = {"prepare; lr_memcpy; lr_launch; lr_synchronize (per iteration)",
                        "PinnedHostDoubleBuffer: prepare slot; copy_to_device_async; lr_launch",
                        "CPU preparation alone", "lr_memcpy_async alone (pinned H2D)", "lr_launch alone (saxpy)"};
  for (int i = 0; i < 5; ++i)
    add(c, B, names[i], "lrrt", {{"per", "iteration"}}, S, 0, apis[i], std::move(r[i]));
  auto med = [&](const char* m) { return median_of(c, B, m, "lrrt", {{"per", "iteration"}}, S); };
  double seq = med("sequential"), dbl = med("double-buffered");
  double stages[3] = {med("stage-prepare"), med("stage-copy"), med("stage-kernel")};
  int slowest = int(std::max_element(stages, stages + 3) - stages);
  double ideal = stages[slowest];
  summary(c, B, "speedup", fmt::format("{} x {} double-buffered, speedup over sequential", iterations, format_bytes(S)),
          seq / dbl, "x", seq / ideal, "ideal", fmt::format("the ideal: {} alone", names[2 + slowest]));
}

// ---- saxpy-bandwidth -------------------------------------------------------------

void bench_saxpy_bandwidth(Ctx& c) {
  const std::string B = "saxpy-bandwidth";
  auto image = kernel_image(c, "saxpy");
  lrrt::Module module(c.dev, image);
  lrrt::Kernel kernel = module.kernel("saxpy");
  uint64_t n = c.options.quick ? (4u << 20) : (16u << 20);  // floats
  n = std::min<uint64_t>(n, std::max<uint64_t>(MiB, max_copy_size(c.dev) / 4) / 4);
  const uint64_t bytes = n * 4;
  const auto dev = c.dev.get();
  lrrt::DeviceBuffer x(c.dev, bytes), y(c.dev, bytes);
  {
    std::vector<float> init(n);
    for (uint64_t i = 0; i < n; ++i) init[i] = float(i % 1000) * 0.001f;
    check(lr_memcpy(dev, x.data(), init.data(), bytes, LR_MEMCPY_HOST_TO_DEVICE), "lr_memcpy");
    check(lr_memcpy(dev, y.data(), init.data(), bytes, LR_MEMCPY_HOST_TO_DEVICE), "lr_memcpy");
  }
  const uint32_t groups = static_cast<uint32_t>((n + 255) / 256);
  const auto cfg = lrrt::launch_config({groups, 1, 1}, {256, 1, 1});
  const auto args = saxpy_args(0.5f, x.data(), y.data(), static_cast<uint32_t>(n));
  const auto& so = c.options.sampling;
  std::map<std::string, std::string> p{{"traffic", "read+write"}};

  // saxpy reads x and y and writes y: 12 bytes per element.
  c.progress(fmt::format("{} {} saxpy {}", B, c.backend, format_bytes(bytes)));
  add(c, B, "saxpy", "lrrt", p, bytes, 3 * bytes, "lr_launch + lr_synchronize", sample(so, [&] {
        double t0 = now_ns();
        check(lr_launch(kernel.get(), &cfg, args.data(), args.size()), "lr_launch");
        check(lr_synchronize(dev), "lr_synchronize");
        return now_ns() - t0;
      }));
  if (c.native) {
    int nk = c.native->load_kernel(image, "saxpy");
    std::span<const std::byte> nargs(args.data(), args.size());
    add(c, B, "saxpy", "native", p, bytes, 3 * bytes, c.native_api, sample(so, [&] {
          double t0 = now_ns();
          c.native->launch(nk, {groups, 1, 1}, {256, 1, 1}, nargs);
          c.native->synchronize();
          return now_ns() - t0;
        }));
  }
  // memcpy of one array reads and writes it: 8 bytes per element.
  c.progress(fmt::format("{} {} memcpy {}", B, c.backend, format_bytes(bytes)));
  add(c, B, "memcpy", "lrrt", p, bytes, 2 * bytes, "lr_memcpy device-to-device", sample(so, [&] {
        double t0 = now_ns();
        check(lr_memcpy(dev, y.data(), x.data(), bytes, LR_MEMCPY_DEVICE_TO_DEVICE), "lr_memcpy");
        return now_ns() - t0;
      }));
  if (c.backend == "host") {
    // Host memory is plain memory: memcpy on one thread and on every core.
    add(c, B, "memcpy", "native", p, bytes, 2 * bytes, "memcpy, 1 thread", sample(so, [&] {
          double t0 = now_ns();
          std::memcpy(y.data(), x.data(), bytes);
          return now_ns() - t0;
        }));
    unsigned threads = std::max(1u, c.props.compute_units);
    auto pm = p;
    pm["threads"] = std::to_string(threads);
    if (c.native && c.native->parallel_host_memcpy(y.data(), x.data(), bytes, threads))
      add(c, B, "memcpy-parallel", "native", pm, bytes, 2 * bytes, fmt::format("memcpy, {} threads", threads),
          sample(so, [&] {
            double t0 = now_ns();
            c.native->parallel_host_memcpy(y.data(), x.data(), bytes, threads);
            return now_ns() - t0;
          }));
  } else if (c.native) {
    add(c, B, "memcpy", "native", p, bytes, 2 * bytes, c.native_api, sample(so, [&] {
          double t0 = now_ns();
          c.native->copy(y.data(), x.data(), bytes, LR_MEMCPY_DEVICE_TO_DEVICE, true);
          c.native->synchronize();
          return now_ns() - t0;
        }));
  }

  const Measurement* saxpy = c.out.find(B, "saxpy", c.backend, "lrrt", p, bytes);
  double best = 0;
  std::string best_name;
  for (const auto& m : c.out.measurements)
    if (m.benchmark == B && m.backend == c.backend && m.metric.rfind("memcpy", 0) == 0 && m.gbps() > best) {
      best = m.gbps();
      best_name = m.api;
    }
  if (saxpy && best > 0)
    summary(c, B, "saxpy-traffic-vs-memcpy", fmt::format("saxpy over {} floats, memory traffic", n), saxpy->gbps(),
            "GB/s", best, "memcpy", best_name);
}

}  // namespace

double now_ns() {
  return double(std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::steady_clock::now().time_since_epoch())
                    .count());
}

SamplingOptions default_sampling(bool quick) {
  SamplingOptions o;
  if (quick) {
    o.min_time_s = 0.03;
    o.min_samples = 5;
    o.max_samples = 300;
    o.max_time_s = 0.5;
    o.warmup = 1;
  }
  return o;
}

std::vector<uint64_t> default_sizes(bool quick) {
  if (quick) return {4 * KiB, 64 * KiB, 1 * MiB, 16 * MiB, 64 * MiB};
  std::vector<uint64_t> out;
  for (uint64_t s = 4 * KiB; s <= GiB; s *= 4) out.push_back(s);
  return out;
}

std::vector<std::vector<double>> sample_multi(const SamplingOptions& o, size_t count,
                                              const std::function<void(double*)>& op) {
  std::vector<double> tmp(count);
  const double start = now_ns();
  for (size_t i = 0; i < o.warmup; ++i) {
    op(tmp.data());
    if (now_ns() - start > o.max_time_s * 0.25e9) break;  // slow ops: one warm-up is enough
  }
  std::vector<std::vector<double>> out(count);
  const double t0 = now_ns();
  for (;;) {
    op(tmp.data());
    for (size_t k = 0; k < count; ++k) out[k].push_back(tmp[k]);
    const size_t n = out[0].size();
    const double elapsed = (now_ns() - t0) / 1e9;
    if (n >= o.max_samples) break;
    if (n >= o.min_samples && elapsed >= o.min_time_s) break;
    if (n >= 3 && elapsed >= o.max_time_s) break;
  }
  return out;
}

std::vector<double> sample(const SamplingOptions& o, const std::function<double()>& op) {
  return std::move(sample_multi(o, 1, [&](double* v) { v[0] = op(); })[0]);
}

const std::vector<BenchmarkInfo>& benchmarks() {
  static const std::vector<BenchmarkInfo> list = {
      {"launch-overhead",
       "empty kernel: host enqueue per launch, throughput (N launches + one synchronize), launch + synchronize "
       "round trip (also with blocking waits: lrrt without its spin, the native blocking wait), idle synchronize; "
       "GPUs: a ~20 ms wait's wall and CPU time"},
      {"copy-bandwidth", "H2D, D2H (pageable and pinned) and D2D lr_memcpy over a size sweep"},
      {"async-copy-launch",
       "copy -> saxpy -> copy with host waits between steps vs device-side dependencies: submission and "
       "end-to-end time"},
      {"double-buffer",
       "CPU preparation + H2D copy + kernel per iteration, sequential vs PinnedHostDoubleBuffer, with each "
       "stage alone (the ideal)"},
      {"saxpy-bandwidth", "saxpy memory traffic in GB/s as a fraction of memcpy bandwidth on the same device"},
  };
  return list;
}

void run_benchmark(const std::string& name, lrrt::Device device, const BenchOptions& options, ResultSet& out) {
  Ctx c{device, "", device.properties(), options, out, nullptr, ""};
  c.backend = c.props.backend;
  try {
    c.native = lrrt::native::make_baseline(device);
    c.native_api = c.native->description();
  } catch (const std::exception& e) {
    out.errors.push_back(fmt::format("{} on {}: no native baseline: {}", name, c.backend, e.what()));
  }
  if (name == "launch-overhead") bench_launch_overhead(c);
  else if (name == "copy-bandwidth") bench_copy_bandwidth(c);
  else if (name == "async-copy-launch") bench_async_copy_launch(c);
  else if (name == "double-buffer") bench_double_buffer(c);
  else if (name == "saxpy-bandwidth") bench_saxpy_bandwidth(c);
  else {
    std::string names;
    for (const auto& b : benchmarks()) names += (names.empty() ? "" : ", ") + b.name;
    throw InputError(fmt::format("unknown benchmark '{}': choose all, {}", name, names));
  }
}

uint64_t max_copy_size(lrrt::Device device) {
  auto p = device.properties();
  uint64_t host_available = 0;
  {
    std::ifstream in("/proc/meminfo");
    std::string key;
    uint64_t kb;
    std::string unit;
    while (in >> key >> kb >> unit)
      if (key == "MemAvailable:") host_available = kb * 1024;
  }
  if (!host_available) {
    long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    host_available = pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : GiB;
  }
  // Host: a pageable and a pinned buffer (and, on the host backend, the two
  // "device" buffers too), with room to spare.
  uint64_t cap = host_available / (std::string(p.backend) == "host" ? 6 : 4);
  if (p.memory_bytes && std::string(p.backend) != "host") cap = std::min<uint64_t>(cap, p.memory_bytes / 4);
  uint64_t pow2 = 4 * KiB;
  while (pow2 * 2 <= cap) pow2 *= 2;
  return pow2;
}

}  // namespace lrrt::tool::bench

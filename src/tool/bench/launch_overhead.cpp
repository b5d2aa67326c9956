// launch-overhead: an empty kernel's enqueue, throughput, launch +
// synchronize round trip (also with blocking waits), idle synchronize; on
// GPUs a long wait's wall and CPU time (docs/benchmarks.md).
#include <ctime>

#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "tool/bench/context.hpp"
#include "tool/units.hpp"

namespace lrrt::tool::bench {
namespace {

// A wait for ~20 ms of queued GPU work (saxpy launches): wall time and the
// waiting thread's CPU time, lrrt's spin-then-block wait beside the native
// default and blocking waits. Shows what the spin costs on long work.
void long_wait(Context& c, bool native_blocking) {
  const std::string& B = c.benchmark;
  const auto& so = c.options.sampling;
  const auto [image, module, kernel] = c.load_kernel("saxpy");
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
  c.add("long-wait", "lrrt", p, 0, 0, what + "lr_synchronize", std::move(r[0]));
  c.add("long-wait-cpu", "lrrt", p, 0, 0, what + "lr_synchronize: the waiting thread's CPU time", std::move(r[1]));
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
    c.add("long-wait", "native", q, 0, 0, api, std::move(nr[0]));
    c.add("long-wait-cpu", "native", q, 0, 0, api, std::move(nr[1]));
  }
  const double wall = c.median("long-wait", "lrrt"), cpu = c.median("long-wait-cpu", "lrrt");
  const double nwall = c.median("long-wait", "native"), ncpu = c.median("long-wait-cpu", "native");
  const double bcpu = c.median("long-wait-cpu", "native", {{"wait", "blocking"}});
  const std::string launches = fmt::format("{} saxpy launches", reps);
  c.summary("long-wait", "a wait for ~20 ms of queued work", wall, "ns", nwall, "native default wait", launches);
  c.summary("long-wait-cpu", "the waiting thread's CPU time over that wait", cpu, "ns", ncpu,
          "native default wait", launches);
  if (!std::isnan(bcpu))
    c.summary("long-wait-cpu-blocking", "the waiting thread's CPU time over that wait", cpu, "ns", bcpu,
            "native blocking wait", launches);
}

}  // namespace

void launch_overhead(Context& c) {
  const std::string& B = c.benchmark;
  const auto [image, module, kernel] = c.load_kernel("empty");
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
      c.add(metric, "lrrt", {}, 0, 0, api, sample(so, lrrt_op));
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
    c.add(metric, "lrrt", {}, 0, 0, api, std::move(r[0]));
    c.add(metric, "native", {}, 0, 0, c.native_api, std::move(r[1]));
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
    c.add("round-trip", "lrrt", {{"wait", "blocking"}}, 0, 0, api + " with lr_set_wait_spin_us(0)",
        sample(so, [&] {
          double t0 = now_ns();
          launch();
          sync();
          return now_ns() - t0;
        }));
  }
  const bool native_blocking = c.native && c.native->synchronize_blocking();
  if (native_blocking)
    c.add("round-trip", "native", {{"wait", "blocking"}}, 0, 0, c.native_api + " (blocking wait)",
        sample(so, [&] {
          double t0 = now_ns();
          nlaunch();
          c.native->synchronize_blocking();
          return now_ns() - t0;
        }));

  // What a completion word the stream writes can gain over the API's own
  // wait (issue 22 part 4), natively.
  if (c.native) {
    nlaunch();
    if (c.native->synchronize_by_stream_flag())
      c.add("round-trip", "native", {{"wait", "stream-flag"}}, 0, 0,
            c.native_api + ", waiting by a stream-written word (cuStreamWriteValue32)", sample(so, [&] {
              double t0 = now_ns();
              nlaunch();
              c.native->synchronize_by_stream_flag();
              return now_ns() - t0;
            }));
    else
      c.native->synchronize();
    // The word written by the launch itself (LRRT_CUDA_SYNC=launch's way).
    if (c.native->launch_and_wait_by_graph_ticket(nk, {1, 1, 1}, {64, 1, 1}, nargs))
      c.add("round-trip", "native", {{"wait", "graph-ticket"}}, 0, 0,
            c.native_api + " as one replay of a graph of the kernel and a write of its ticket, waiting by that word",
            sample(so, [&] {
              double t0 = now_ns();
              c.native->launch_and_wait_by_graph_ticket(nk, {1, 1, 1}, {64, 1, 1}, nargs);
              return now_ns() - t0;
            }));
  }

  c.progress(B + " " + c.backend + " idle-synchronize");
  constexpr int kSyncs = 16;
  sync();
  c.add("idle-synchronize", "lrrt", {}, 0, 0, "lr_synchronize", sample(so, [&] {
        double t0 = now_ns();
        for (int i = 0; i < kSyncs; ++i) sync();
        return (now_ns() - t0) / kSyncs;
      }));
  if (c.native && c.native->has_synchronize()) {
    c.native->synchronize();
    c.add("idle-synchronize", "native", {}, 0, 0, c.native_api, sample(so, [&] {
          double t0 = now_ns();
          for (int i = 0; i < kSyncs; ++i) c.native->synchronize();
          return (now_ns() - t0) / kSyncs;
        }));
  }

  if (c.backend != "host") long_wait(c, native_blocking);

  const double rt_l = c.median("round-trip", "lrrt"), rt_n = c.median("round-trip", "native");
  const double rt_b = c.median("round-trip", "native", {{"wait", "blocking"}});
  const double rt_lb = c.median("round-trip", "lrrt", {{"wait", "blocking"}});
  const double tp_l = c.median("throughput", "lrrt"), tp_n = c.median("throughput", "native");
  const double eq_l = c.median("enqueue", "lrrt"), eq_n = c.median("enqueue", "native");
  const std::string empty = "empty dispatch, ";
  c.summary("empty-dispatch-round-trip", empty + "launch + synchronize", rt_l, "ns", rt_n, "native");
  if (!std::isnan(rt_b))
    c.summary("empty-dispatch-round-trip-blocking", empty + "launch + synchronize", rt_l, "ns", rt_b,
            "native blocking wait");
  c.summary("empty-dispatch-round-trip-no-spin", empty + "launch + synchronize without lrrt's spin", rt_lb, "ns",
          rt_l, "with the spin", "lr_set_wait_spin_us(0)");
  if (const double flag = c.median("round-trip", "native", {{"wait", "stream-flag"}}); !std::isnan(flag))
    c.summary("native-round-trip-stream-flag", empty + "native launch + wait by a stream-written word", flag, "ns",
              rt_n, "native synchronize");
  if (const double ticket = c.median("round-trip", "native", {{"wait", "graph-ticket"}}); !std::isnan(ticket))
    c.summary("native-round-trip-graph-ticket", empty + "native launch that writes its own completion word + wait by it",
              ticket, "ns", rt_n, "native synchronize");
  c.summary("empty-dispatch-throughput", empty + "per launch at throughput", tp_l, "ns", tp_n, "native");
  c.summary("empty-dispatch-enqueue", empty + "enqueue per launch", eq_l, "ns", eq_n, "native");
}

}  // namespace lrrt::tool::bench

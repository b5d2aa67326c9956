// double-buffer: prepare + H2D copy + kernel per iteration, sequential
// against PinnedHostDoubleBuffer, with each stage alone, swept over the
// stages' sizes (docs/benchmarks.md).

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "tool/bench/context.hpp"
#include "tool/bench/double_buffer_model.hpp"
#include "tool/units.hpp"

namespace lrrt::tool::bench {

namespace {

// Packed arguments of kernels/mix.cpp: uint32_t iterations, const float* x,
// float* y, uint32_t n (natural alignment: 0, 8, 16, 24).
std::array<std::byte, 28> double_buffer_mix_args(uint32_t iterations, const void* x, void* y, uint32_t n) {
  std::array<std::byte, 28> a{};
  std::memcpy(a.data(), &iterations, 4);
  std::memcpy(a.data() + 8, &x, 8);
  std::memcpy(a.data() + 16, &y, 8);
  std::memcpy(a.data() + 24, &n, 4);
  return a;
}

// The CPU stage: produce iteration `it`'s input on one thread, `rounds` LCG
// steps an element. Out of line, so every loop below runs the same machine
// code for it.
[[gnu::noinline]] void double_buffer_prepare(float* f, uint32_t n, size_t it, int rounds) {
  for (uint32_t j = 0; j < n; ++j) {
    uint32_t v = j + static_cast<uint32_t>(it);
    for (int r = 0; r < rounds; ++r) v = v * 1664525u + 1013904223u;
    f[j] = float(v & 1023) * 0.25f;
  }
}

// Where one timed loop's wall time went, summed over its iterations.
struct StageClock {
  double prepare_wall = 0, prepare_cpu = 0, host_wait = 0, copy_wall = 0, kernel_wall = 0;
  template <class F>
  static void time_into(double& total, F&& f) {
    const double w = now_ns();
    f();
    total += now_ns() - w;
  }
  template <class F>
  void time_prepare(F&& f) {
    const double w = now_ns(), c = thread_cpu_ns();
    f();
    prepare_cpu += thread_cpu_ns() - c;
    prepare_wall += now_ns() - w;
  }
  template <class F>
  void time_wait(F&& f) {
    time_into(host_wait, f);
  }
};

}  // namespace

// A sweep over the three stages' sizes (docs/benchmarks.md, "double-buffer"):
// chunk (bytes per iteration), cpu_work (the CPU stage: "none" = the input is
// ready, else LCG rounds per element of a one-thread generator) and gpu_work
// (multiply-adds per element of kernels/mix.cpp). Per state: sequential,
// double-buffered and each stage alone, and summaries with the ideal (the
// slowest stage alone) and how balanced the stages are.
void double_buffer(Context& c) {
  const std::string& B = c.benchmark;
  const auto [image, module, kernel] = c.load_kernel("mix");
  const bool quick = c.options.quick;
  std::vector<uint64_t> chunks = quick ? std::vector<uint64_t>{1 * MiB} : std::vector<uint64_t>{4 * MiB, 16 * MiB};
  const std::vector<int> cpu_works = quick ? std::vector<int>{-1, 0} : std::vector<int>{-1, 0, 8};  // -1: none
  const std::vector<uint32_t> gpu_works = quick ? std::vector<uint32_t>{1, 64} : std::vector<uint32_t>{1, 256, 2048, 8192};
  const uint64_t cap = std::max<uint64_t>(MiB, max_copy_size(c.dev) / 4);
  for (auto& S : chunks) S = std::min(S, cap);
  chunks.erase(std::unique(chunks.begin(), chunks.end()), chunks.end());
  const auto dev = c.dev.get();
  const size_t states = chunks.size() * cpu_works.size() * gpu_works.size();
  size_t state = 0;
  for (uint64_t S : chunks) {
    const uint32_t n = static_cast<uint32_t>(S / 4);
    // The ideal is the slowest stage per iteration; a pipeline of N
    // iterations also pays one fill (a chunk's other stage), 1/N of it: at
    // least 256 MiB a measurement (16 iterations of 4 MiB lost 6% to the
    // fill alone on the H100 at 2c81efc).
    const size_t iterations = quick ? 8 : std::max<size_t>(16, (256 * MiB) / S);
    lrrt::PinnedHostBuffer host(c.dev, S);
    lrrt::DeviceBuffer xs[2] = {lrrt::DeviceBuffer(c.dev, S), lrrt::DeviceBuffer(c.dev, S)};
    lrrt::DeviceBuffer y(c.dev, S);
    std::memset(host.data(), 0, S);
    check(lr_memcpy(dev, y.data(), host.data(), S, LR_MEMCPY_HOST_TO_DEVICE), "lr_memcpy");
    const auto cfg = lrrt::launch_config({(n + 255) / 256, 1, 1}, {256, 1, 1});
    lrrt::PinnedHostDoubleBuffer buffers(c.dev, S);
    for (int cpu : cpu_works)
      for (uint32_t gpu : gpu_works) {
        ++state;
        auto launch = [&](void* x) {
          auto args = double_buffer_mix_args(gpu, x, y.data(), n);
          check(lr_launch(kernel.get(), &cfg, args.data(), args.size()), "lr_launch");
        };
        // The CPU stage (none: the input is ready and the stage is skipped).
        auto prepare = [&](void* p, size_t it) {
          if (cpu >= 0) double_buffer_prepare(static_cast<float*>(p), n, it, cpu);
        };
        const std::map<std::string, std::string> params = {{"per", "iteration"},
                                                           {"chunk", format_bytes(double(S))},
                                                           {"cpu_work", cpu < 0 ? "none" : std::to_string(cpu)},
                                                           {"gpu_work", std::to_string(gpu)}};
        SamplingOptions so = c.options.sampling;
        // The CPU stage inside the pipeline ran slow for the first seconds of
        // a state on the H100 (up to 1.94x, decaying within two states): two
        // passes of every loop first, and the median of seven.
        so.min_samples = quick ? 3 : 7;
        so.warmup = quick ? 1 : 2;
        c.progress(fmt::format("{} {} state {}/{}: chunk {}, cpu_work {}, gpu_work {}", B, c.backend, state, states,
                               format_bytes(double(S)), params.at("cpu_work"), gpu));
        // The copy alone, as the pipeline runs it: the double buffer's own
        // slots, its copy queue, its waits (acquire, mark_work_submitted,
        // finish); no CPU stage, no kernel.
        auto copies_alone = [&](size_t count) {
          for (size_t it = 0; it < count; ++it) {
            auto& slot = buffers.acquire();
            buffers.copy_to_device_async(slot, xs[it & 1].data(), S);
            buffers.mark_work_submitted(slot);
          }
          buffers.finish();
        };
        // The kernel alone, on the default queue as in the pipeline.
        auto kernels_alone = [&](size_t count) {
          for (size_t it = 0; it < count; ++it) launch(xs[it & 1].data());
          check(lr_synchronize(dev), "lr_synchronize");
        };
        const size_t stage_warmup = std::min<size_t>(2, iterations);
        // 0-4: the loops; 5-9: where their time went (the CPU stage's wall and
        // CPU time in the sequential and the double-buffered loop, the
        // double-buffered loop's host waits), to find what a pipeline loses;
        // 10-11: the copy and the kernel inside the sequential loop.
        auto r = sample_multi(so, 12, [&](double* v) {
          const double per = double(iterations);
          StageClock seq, dbl;
          double t0 = now_ns();
          for (size_t it = 0; it < iterations; ++it) {
            seq.time_prepare([&] { prepare(host.data(), it); });
            StageClock::time_into(seq.copy_wall, [&] {
              check(lr_memcpy(dev, xs[0].data(), host.data(), S, LR_MEMCPY_HOST_TO_DEVICE), "lr_memcpy");
            });
            StageClock::time_into(seq.kernel_wall, [&] {
              launch(xs[0].data());
              check(lr_synchronize(dev), "lr_synchronize");
            });
          }
          v[0] = (now_ns() - t0) / per;

          t0 = now_ns();
          for (size_t it = 0; it < iterations; ++it) {
            lrrt::PinnedHostDoubleBuffer::Slot* slot = nullptr;
            dbl.time_wait([&] { slot = &buffers.acquire(); });
            dbl.time_prepare([&] { prepare(slot->host.data(), it); });
            buffers.copy_to_device_async(*slot, xs[it & 1].data(), S);
            const auto args = double_buffer_mix_args(gpu, xs[it & 1].data(), y.data(), n);
            buffers.launch_after_copy(*slot, kernel, cfg, args);
            dbl.time_wait([&] { buffers.mark_work_submitted(*slot); });
          }
          dbl.time_wait([&] { buffers.finish(); });
          v[1] = (now_ns() - t0) / per;

          StageClock alone;
          t0 = now_ns();
          for (size_t it = 0; it < iterations; ++it) alone.time_prepare([&] { prepare(host.data(), it); });
          v[2] = (now_ns() - t0) / per;

          // Each GPU stage alone follows a short untimed run of itself, as
          // inside the pipeline it follows its own previous iteration (not
          // the other engine's loop, nor an idle device).
          copies_alone(stage_warmup);
          t0 = now_ns();
          copies_alone(iterations);
          v[3] = (now_ns() - t0) / per;

          kernels_alone(stage_warmup);
          t0 = now_ns();
          kernels_alone(iterations);
          v[4] = (now_ns() - t0) / per;

          v[5] = seq.prepare_wall / per;
          v[6] = dbl.prepare_wall / per;
          v[7] = dbl.prepare_cpu / per;
          v[8] = alone.prepare_cpu / per;
          v[9] = dbl.host_wait / per;
          v[10] = seq.copy_wall / per;
          v[11] = seq.kernel_wall / per;
        });
        const char* names[] = {"sequential",         "double-buffered",         "stage-prepare",
                               "stage-copy",         "stage-kernel",            "sequential-prepare",
                               "double-buffered-prepare", "double-buffered-prepare-cpu", "stage-prepare-cpu",
                               "double-buffered-host-wait", "sequential-copy", "sequential-kernel"};
        const char* apis[] = {"prepare; lr_memcpy; lr_launch; lr_synchronize (per iteration)",
                              "PinnedHostDoubleBuffer: prepare slot; copy_to_device_async (copy queue); launch_after_copy",
                              "CPU preparation alone (one thread)",
                              "PinnedHostDoubleBuffer copies alone (its slots, copy queue and waits; pinned H2D)",
                              "lr_launch alone (mix, default queue)",
                              "the CPU stage's wall time inside the sequential loop",
                              "the CPU stage's wall time inside the double-buffered loop",
                              "the CPU stage's thread CPU time inside the double-buffered loop",
                              "the CPU stage's thread CPU time alone",
                              "the double-buffered loop's host waits (acquire, mark_work_submitted, finish)",
                              "lr_memcpy's wall time inside the sequential loop (the copy and its wait)",
                              "lr_launch + lr_synchronize's wall time inside the sequential loop"};
        for (int i = 0; i < 12; ++i) c.add(names[i], "lrrt", params, S, 0, apis[i], std::move(r[i]));
        auto med = [&](const char* m) { return c.median(m, "lrrt", params, S); };
        const double seq = med("sequential"), dbl = med("double-buffered");
        // The ideal (double_buffer_model.hpp): each stage at the least it was
        // seen to cost, the slowest one per iteration, plus the pipeline's
        // fill and drain. The CPU stage: inside the sequential loop or inside
        // the pipeline (alone, in a loop of its own, it ran up to 20% slower
        // on the H100 at 4ea4547, and an ideal made of it was beaten by
        // 13-23%). The copy and the kernel: alone, in the pipeline's own
        // conditions (queues, slots, warm-up), or inside the sequential loop
        // (their wall time there, wait included): at 19d0d02 the copy alone
        // ran on the default queue from another buffer and the kernel alone
        // followed an idle-SM copy loop, both 1-3% slower than inside the
        // sequential loop at 16 MiB, and the pipeline beat that ideal by 4%
        // (docs/benchmarks.md). The pipeline runs every stage in full, so it
        // cannot beat an ideal made of what each stage costs where it is
        // fastest.
        const double prepare_cost =
            cpu < 0 ? 0.0 : double_buffer_stage_cost({med("sequential-prepare"), med("double-buffered-prepare")});
        const double copy_cost = double_buffer_stage_cost({med("stage-copy"), med("sequential-copy")});
        const double kernel_cost = double_buffer_stage_cost({med("stage-kernel"), med("sequential-kernel")});
        const auto model = double_buffer_ideal({prepare_cost, copy_cost, kernel_cost}, iterations);
        const double ideal = model.per_iteration, balance = model.balance;
        // What the pipeline did to the CPU stage: its wall time against the
        // sequential loop's, and its CPU time against its wall time (below
        // 1: the preparing thread was descheduled).
        const double seq_prepare = cpu < 0 ? 0.0 : med("sequential-prepare");
        const double prepare_slowdown = cpu < 0 || seq_prepare <= 0 ? 1.0 : med("double-buffered-prepare") / seq_prepare;
        const double prepare_on_cpu = cpu < 0 ? 1.0 : med("double-buffered-prepare-cpu") / std::max(1.0, med("double-buffered-prepare"));
        const std::string where = fmt::format("chunk {}, cpu_work {}, gpu_work {}", format_bytes(double(S)), params.at("cpu_work"), gpu);
        c.summary("speedup " + where, fmt::format("{} iterations double-buffered, speedup over sequential ({})", iterations, where),
                  seq / dbl, "x", seq / ideal, "ideal",
                  fmt::format("ideal = the slowest stage at its fastest (alone or inside the sequential loop; the CPU "
                              "stage inside either loop) plus fill and drain; {:.1f}% of the ideal speedup; stage balance "
                              "{:.2f}; stages per iteration: prepare {:.1f} us, copy {:.1f} us (alone {:.1f}, in sequential "
                              "{:.1f}), kernel {:.1f} us (alone {:.1f}, in sequential {:.1f}); CPU stage {:.2f}x its "
                              "sequential time inside the pipeline, on a CPU {:.0f}% of it; host waits {:.1f}% of the pipeline",
                              100.0 * ideal / dbl, balance, prepare_cost / 1e3, copy_cost / 1e3,
                              med("stage-copy") / 1e3, med("sequential-copy") / 1e3, kernel_cost / 1e3,
                              med("stage-kernel") / 1e3, med("sequential-kernel") / 1e3, prepare_slowdown,
                              100 * prepare_on_cpu, 100 * med("double-buffered-host-wait") / std::max(1.0, dbl)));
      }
  }
}

}  // namespace lrrt::tool::bench

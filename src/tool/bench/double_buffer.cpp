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
  double prepare_wall = 0, prepare_cpu = 0, host_wait = 0;
  template <class F>
  void time_prepare(F&& f) {
    const double w = now_ns(), c = thread_cpu_ns();
    f();
    prepare_cpu += thread_cpu_ns() - c;
    prepare_wall += now_ns() - w;
  }
  template <class F>
  void time_wait(F&& f) {
    const double w = now_ns();
    f();
    host_wait += now_ns() - w;
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
        // 0-4: the loops; 5-9: where their time went (the CPU stage's wall and
        // CPU time in the sequential and the double-buffered loop, the
        // double-buffered loop's host waits), to find what a pipeline loses.
        auto r = sample_multi(so, 10, [&](double* v) {
          const double per = double(iterations);
          StageClock seq, dbl;
          double t0 = now_ns();
          for (size_t it = 0; it < iterations; ++it) {
            seq.time_prepare([&] { prepare(host.data(), it); });
            check(lr_memcpy(dev, xs[0].data(), host.data(), S, LR_MEMCPY_HOST_TO_DEVICE), "lr_memcpy");
            launch(xs[0].data());
            check(lr_synchronize(dev), "lr_synchronize");
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

          v[5] = seq.prepare_wall / per;
          v[6] = dbl.prepare_wall / per;
          v[7] = dbl.prepare_cpu / per;
          v[8] = alone.prepare_cpu / per;
          v[9] = dbl.host_wait / per;
        });
        const char* names[] = {"sequential",         "double-buffered",         "stage-prepare",
                               "stage-copy",         "stage-kernel",            "sequential-prepare",
                               "double-buffered-prepare", "double-buffered-prepare-cpu", "stage-prepare-cpu",
                               "double-buffered-host-wait"};
        const char* apis[] = {"prepare; lr_memcpy; lr_launch; lr_synchronize (per iteration)",
                              "PinnedHostDoubleBuffer: prepare slot; copy_to_device_async (copy queue); launch_after_copy",
                              "CPU preparation alone (one thread)", "lr_memcpy_async alone (pinned H2D)",
                              "lr_launch alone (mix)",
                              "the CPU stage's wall time inside the sequential loop",
                              "the CPU stage's wall time inside the double-buffered loop",
                              "the CPU stage's thread CPU time inside the double-buffered loop",
                              "the CPU stage's thread CPU time alone",
                              "the double-buffered loop's host waits (acquire, mark_work_submitted, finish)"};
        for (int i = 0; i < 10; ++i) c.add(names[i], "lrrt", params, S, 0, apis[i], std::move(r[i]));
        auto med = [&](const char* m) { return c.median(m, "lrrt", params, S); };
        const double seq = med("sequential"), dbl = med("double-buffered");
        // The ideal: each stage at what it costs where it is fastest (the CPU
        // stage as timed inside the sequential loop or inside the pipeline,
        // whichever is less; the copy and the kernel each alone), the slowest
        // one per iteration, plus the pipeline's fill and drain (the other
        // stages once, over the iterations). The pipeline cannot beat it: it
        // runs its own CPU stage in full. Measured on the H100 (4ea4547): the
        // CPU stage alone, in a loop of its own, ran up to 20% slower than
        // inside either loop (an ideal made of it was beaten, 113-123%), and
        // inside the pipeline it ran 0.87-1.94x its sequential time on a
        // thread never descheduled (CPU time = wall time) and never waiting.
        const double prepare_cost =
            cpu < 0 ? 0.0 : std::min(med("sequential-prepare"), med("double-buffered-prepare"));
        double stages[3] = {prepare_cost, med("stage-copy"), med("stage-kernel")};
        std::sort(stages, stages + 3);
        const double ideal = stages[2] + (stages[0] + stages[1]) / double(iterations);
        // How close the two slowest stages are: 1 when they take the same
        // time, where overlapping them gains the most.
        const double balance = stages[2] > 0 ? stages[1] / stages[2] : 0;
        // What the pipeline did to the CPU stage: its wall time against the
        // sequential loop's, and its CPU time against its wall time (below
        // 1: the preparing thread was descheduled).
        const double seq_prepare = cpu < 0 ? 0.0 : med("sequential-prepare");
        const double prepare_slowdown = cpu < 0 || seq_prepare <= 0 ? 1.0 : med("double-buffered-prepare") / seq_prepare;
        const double prepare_on_cpu = cpu < 0 ? 1.0 : med("double-buffered-prepare-cpu") / std::max(1.0, med("double-buffered-prepare"));
        const std::string where = fmt::format("chunk {}, cpu_work {}, gpu_work {}", format_bytes(double(S)), params.at("cpu_work"), gpu);
        c.summary("speedup " + where, fmt::format("{} iterations double-buffered, speedup over sequential ({})", iterations, where),
                  seq / dbl, "x", seq / ideal, "ideal",
                  fmt::format("ideal = the slowest stage at its fastest (the CPU stage inside either loop) plus fill and drain; "
                              "{:.0f}% of the ideal speedup; stage balance {:.2f}; CPU stage {:.2f}x its sequential time "
                              "inside the pipeline, on a CPU {:.0f}% of it; host waits {:.1f}% of the pipeline",
                              100.0 * (seq / dbl) / (seq / ideal), balance, prepare_slowdown, 100 * prepare_on_cpu,
                              100 * med("double-buffered-host-wait") / std::max(1.0, dbl)));
      }
  }
}

}  // namespace lrrt::tool::bench

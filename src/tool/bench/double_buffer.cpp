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
        // The CPU stage: produce the next input on one thread (none: the
        // input is ready and the stage is skipped).
        auto prepare = [&](void* p, size_t it) {
          if (cpu < 0) return;
          auto* f = static_cast<float*>(p);
          for (uint32_t j = 0; j < n; ++j) {
            uint32_t v = j + static_cast<uint32_t>(it);
            for (int r = 0; r < cpu; ++r) v = v * 1664525u + 1013904223u;
            f[j] = float(v & 1023) * 0.25f;
          }
        };
        const std::map<std::string, std::string> params = {{"per", "iteration"},
                                                           {"chunk", format_bytes(double(S))},
                                                           {"cpu_work", cpu < 0 ? "none" : std::to_string(cpu)},
                                                           {"gpu_work", std::to_string(gpu)}};
        SamplingOptions so = c.options.sampling;
        so.min_samples = quick ? 3 : 5;
        so.warmup = 1;
        c.progress(fmt::format("{} {} state {}/{}: chunk {}, cpu_work {}, gpu_work {}", B, c.backend, state, states,
                               format_bytes(double(S)), params.at("cpu_work"), gpu));
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
            const auto args = double_buffer_mix_args(gpu, xs[it & 1].data(), y.data(), n);
            buffers.launch_after_copy(slot, kernel, cfg, args);
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
                              "PinnedHostDoubleBuffer: prepare slot; copy_to_device_async (copy queue); launch_after_copy",
                              "CPU preparation alone (one thread)", "lr_memcpy_async alone (pinned H2D)",
                              "lr_launch alone (mix)"};
        for (int i = 0; i < 5; ++i) c.add(names[i], "lrrt", params, S, 0, apis[i], std::move(r[i]));
        auto med = [&](const char* m) { return c.median(m, "lrrt", params, S); };
        const double seq = med("sequential"), dbl = med("double-buffered");
        double stages[3] = {med("stage-prepare"), med("stage-copy"), med("stage-kernel")};
        std::sort(stages, stages + 3);
        const double ideal = stages[2];
        // How close the two slowest stages are: 1 when they take the same
        // time, where overlapping them gains the most.
        const double balance = stages[2] > 0 ? stages[1] / stages[2] : 0;
        const std::string where = fmt::format("chunk {}, cpu_work {}, gpu_work {}", format_bytes(double(S)), params.at("cpu_work"), gpu);
        c.summary("speedup " + where, fmt::format("{} iterations double-buffered, speedup over sequential ({})", iterations, where),
                  seq / dbl, "x", seq / ideal, "ideal",
                  fmt::format("ideal = the slowest stage alone; {:.0f}% of the ideal speedup; stage balance {:.2f}",
                              100.0 * (seq / dbl) / (seq / ideal), balance));
      }
  }
}

}  // namespace lrrt::tool::bench

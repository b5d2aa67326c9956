// double-buffer: prepare + H2D copy + kernel per iteration, sequential
// against PinnedHostDoubleBuffer, with each stage alone (docs/benchmarks.md).
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "tool/bench/context.hpp"
#include "tool/units.hpp"

namespace lrrt::tool::bench {

void double_buffer(Context& c) {
  const std::string& B = c.benchmark;
  const auto [image, module, kernel] = c.load_kernel("saxpy");
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
    c.add(names[i], "lrrt", {{"per", "iteration"}}, S, 0, apis[i], std::move(r[i]));
  auto med = [&](const char* m) { return c.median(m, "lrrt", {{"per", "iteration"}}, S); };
  double seq = med("sequential"), dbl = med("double-buffered");
  double stages[3] = {med("stage-prepare"), med("stage-copy"), med("stage-kernel")};
  int slowest = int(std::max_element(stages, stages + 3) - stages);
  double ideal = stages[slowest];
  c.summary("speedup", fmt::format("{} x {} double-buffered, speedup over sequential", iterations, format_bytes(S)),
          seq / dbl, "x", seq / ideal, "ideal", fmt::format("the ideal: {} alone", names[2 + slowest]));
}

}  // namespace lrrt::tool::bench

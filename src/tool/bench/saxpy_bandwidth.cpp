// saxpy-bandwidth: saxpy's memory traffic against memcpy's on the same
// device (docs/benchmarks.md).
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "tool/bench/context.hpp"
#include "tool/units.hpp"

namespace lrrt::tool::bench {

void saxpy_bandwidth(Context& c) {
  const std::string& B = c.benchmark;
  const auto [image, module, kernel] = c.load_kernel("saxpy");
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
  c.add("saxpy", "lrrt", p, bytes, 3 * bytes, "lr_launch + lr_synchronize", sample(so, [&] {
        double t0 = now_ns();
        check(lr_launch(kernel.get(), &cfg, args.data(), args.size()), "lr_launch");
        check(lr_synchronize(dev), "lr_synchronize");
        return now_ns() - t0;
      }));
  if (c.native) {
    int nk = c.native->load_kernel(image, "saxpy");
    std::span<const std::byte> nargs(args.data(), args.size());
    c.add("saxpy", "native", p, bytes, 3 * bytes, c.native_api, sample(so, [&] {
          double t0 = now_ns();
          c.native->launch(nk, {groups, 1, 1}, {256, 1, 1}, nargs);
          c.native->synchronize();
          return now_ns() - t0;
        }));
  }
  // memcpy of one array reads and writes it: 8 bytes per element.
  c.progress(fmt::format("{} {} memcpy {}", B, c.backend, format_bytes(bytes)));
  c.add("memcpy", "lrrt", p, bytes, 2 * bytes, "lr_memcpy device-to-device", sample(so, [&] {
        double t0 = now_ns();
        check(lr_memcpy(dev, y.data(), x.data(), bytes, LR_MEMCPY_DEVICE_TO_DEVICE), "lr_memcpy");
        return now_ns() - t0;
      }));
  if (c.backend == "host") {
    // Host memory is plain memory: memcpy on one thread and on every core.
    c.add("memcpy", "native", p, bytes, 2 * bytes, "memcpy, 1 thread", sample(so, [&] {
          double t0 = now_ns();
          std::memcpy(y.data(), x.data(), bytes);
          return now_ns() - t0;
        }));
    unsigned threads = std::max(1u, c.props.compute_units);
    auto pm = p;
    pm["threads"] = std::to_string(threads);
    if (c.native && c.native->parallel_host_memcpy(y.data(), x.data(), bytes, threads))
      c.add("memcpy-parallel", "native", pm, bytes, 2 * bytes, fmt::format("memcpy, {} threads", threads),
          sample(so, [&] {
            double t0 = now_ns();
            c.native->parallel_host_memcpy(y.data(), x.data(), bytes, threads);
            return now_ns() - t0;
          }));
  } else if (c.native) {
    c.add("memcpy", "native", p, bytes, 2 * bytes, c.native_api, sample(so, [&] {
          double t0 = now_ns();
          c.native->copy(y.data(), x.data(), bytes, LR_MEMCPY_DEVICE_TO_DEVICE, true);
          c.native->synchronize();
          return now_ns() - t0;
        }));
  }

  const Measurement* saxpy = c.results().find(B, "saxpy", c.backend, "lrrt", p, bytes);
  double best = 0;
  std::string best_name;
  for (const auto& m : c.results().measurements)
    if (m.benchmark == B && m.backend == c.backend && m.metric.rfind("memcpy", 0) == 0 && m.gbps() > best) {
      best = m.gbps();
      best_name = m.api;
    }
  if (saxpy && best > 0)
    c.summary("saxpy-traffic-vs-memcpy", fmt::format("saxpy over {} floats, memory traffic", n), saxpy->gbps(),
            "GB/s", best, "memcpy", best_name);
}

}  // namespace lrrt::tool::bench

// async-copy-launch: copy -> saxpy -> copy with the host waiting after each
// step against device-side dependencies and one wait (docs/benchmarks.md).
#include <cstring>

#include <fmt/format.h>

#include "tool/bench/context.hpp"
#include "tool/units.hpp"

namespace lrrt::tool::bench {

void async_copy_launch(Context& c) {
  const std::string& B = c.benchmark;
  const auto [image, module, kernel] = c.load_kernel("saxpy");
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
    c.add("submit", "lrrt", {{"variant", "host-waits"}}, size, 0, api_hw, std::move(host_waits[0]));
    c.add("end-to-end", "lrrt", {{"variant", "host-waits"}}, size, 0, api_hw, std::move(host_waits[1]));
    c.add("submit", "lrrt", {{"variant", "device-deps"}}, size, 0, api_dd, std::move(device_deps[0]));
    c.add("end-to-end", "lrrt", {{"variant", "device-deps"}}, size, 0, api_dd, std::move(device_deps[1]));

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
        c.add("submit", "native", {{"variant", variant}}, size, 0, c.native_api, std::move(r[0]));
        c.add("end-to-end", "native", {{"variant", variant}}, size, 0, c.native_api, std::move(r[1]));
      }
    }
    const double hw = c.median("end-to-end", "lrrt", {{"variant", "host-waits"}}, size);
    const double dd = c.median("end-to-end", "lrrt", {{"variant", "device-deps"}}, size);
    const double sub = c.median("submit", "lrrt", {{"variant", "device-deps"}}, size);
    const std::string chain = format_bytes(size) + " copy -> saxpy -> copy";
    c.summary(fmt::format("device-deps-end-to-end-{}", size), chain + " end-to-end, device-side dependencies", dd,
            "ns", hw, "host waits");
    c.summary(fmt::format("device-deps-submit-{}", size), chain + " submitted, device-side dependencies", sub,
            "ns");
  }
}

}  // namespace lrrt::tool::bench

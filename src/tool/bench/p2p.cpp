// p2p: copies between the devices of one backend (several GPUs in one
// machine; the host backend with LRRT_HOST_DEVICES=N): for every ordered
// pair with peer access, unidirectional bandwidth over a size sweep and the
// latency of a 4-byte copy; for every unordered pair, both directions at
// once; and every device's host-to-device copy at once against one alone.
// Each beside the native API's peer copy in the same run (docs/benchmarks.md,
// "p2p"). Parameters: src and dst (device indices), direction.
#include <algorithm>
#include <cstring>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "tool/bench/context.hpp"
#include "tool/units.hpp"

namespace lrrt::tool::bench {

void p2p(Context& c) {
  const std::string& B = c.benchmark;
  uint32_t count = 0;
  for (const auto& b : lrrt::Runtime::backends())
    if (b.name == c.backend) count = b.device_count;
  if (count < 2) {
    c.error(fmt::format("{} on {}: one device: p2p needs two or more devices of a backend (host: "
                        "LRRT_HOST_DEVICES=N)",
                        B, c.backend));
    return;
  }
  std::vector<lrrt::Device> devices;
  std::vector<std::unique_ptr<lrrt::native::Baseline>> natives;
  for (uint32_t i = 0; i < count; ++i) {
    devices.push_back(lrrt::Device::select(c.backend, i));
    try {
      natives.push_back(lrrt::native::make_baseline(devices.back()));
    } catch (const lrrt::Error&) {
      natives.push_back(nullptr);
    }
  }
  std::vector<uint64_t> sizes = c.options.sizes.empty()
                                    ? (c.options.quick ? std::vector<uint64_t>{64 * KiB, 4 * MiB}
                                                       : std::vector<uint64_t>{64 * KiB, 1 * MiB, 16 * MiB, 256 * MiB})
                                    : c.options.sizes;
  const uint64_t cap = max_copy_size(c.dev) / 2;
  std::erase_if(sizes, [&](uint64_t s) { return s > cap; });
  if (sizes.empty()) return;
  const uint64_t S = sizes.back();
  std::vector<lrrt::DeviceBuffer> a, b;  // per device: a source and a destination
  for (auto& d : devices) {
    a.emplace_back(d, S);
    b.emplace_back(d, S);
    std::vector<std::byte> pattern(S, std::byte{0x5a});
    lrrt::copy_to_device(a.back(), pattern.data(), S);
  }
  auto pair_params = [](uint32_t src, uint32_t dst, const char* direction) {
    return std::map<std::string, std::string>{
        {"src", std::to_string(src)}, {"dst", std::to_string(dst)}, {"direction", direction}};
  };

  // Each ordered pair: dst's copy queue reads src's memory.
  for (uint32_t dst = 0; dst < count; ++dst)
    for (uint32_t src = 0; src < count; ++src) {
      if (src == dst) continue;
      if (!devices[dst].can_access_peer(devices[src])) {
        c.error(fmt::format("{} on {}: device {} cannot reach device {}'s memory: pair not measured", B, c.backend, dst,
                            src));
        continue;
      }
      devices[dst].enable_peer_access(devices[src]);
      for (uint64_t size : sizes) {
        c.progress(fmt::format("{} {} {} -> {} {}", B, c.backend, src, dst, format_bytes(double(size))));
        const size_t ops = static_cast<size_t>(std::clamp<uint64_t>(16 * MiB / size, 1, 64));
        c.add("copy", "lrrt", pair_params(src, dst, "uni"), size, size, "lr_memcpy_peer_async + lr_synchronize",
              sample(c.options.sampling, [&] {
                const double t0 = now_ns();
                for (size_t i = 0; i < ops; ++i)
                  check(lr_memcpy_peer_async(devices[dst].get(), b[dst].data(), devices[src].get(), a[src].data(), size,
                                             nullptr, nullptr, 0),
                        "lr_memcpy_peer_async");
                check(lr_synchronize(devices[dst].get()), "lr_synchronize");
                return (now_ns() - t0) / double(ops);
              }));
        auto& nd = natives[dst];
        if (nd && natives[src] && nd->copy_from_peer(*natives[src], b[dst].data(), a[src].data(), size)) {
          nd->synchronize();
          c.add("copy", "native", pair_params(src, dst, "uni"), size, size, "native peer copy + synchronize",
                sample(c.options.sampling, [&] {
                  const double t0 = now_ns();
                  for (size_t i = 0; i < ops; ++i) nd->copy_from_peer(*natives[src], b[dst].data(), a[src].data(), size);
                  nd->synchronize();
                  return (now_ns() - t0) / double(ops);
                }));
        }
      }
      // Latency: one 4-byte copy, waited for.
      c.add("latency", "lrrt", pair_params(src, dst, "uni"), 4, 0, "lr_memcpy_peer (4 bytes)",
            sample(c.options.sampling, [&] {
              const double t0 = now_ns();
              check(lr_memcpy_peer(devices[dst].get(), b[dst].data(), devices[src].get(), a[src].data(), 4),
                    "lr_memcpy_peer");
              return now_ns() - t0;
            }));
      if (auto& nd = natives[dst]; nd && natives[src] && nd->copy_from_peer(*natives[src], b[dst].data(), a[src].data(), 4)) {
        nd->synchronize();
        c.add("latency", "native", pair_params(src, dst, "uni"), 4, 0, "native peer copy (4 bytes) + synchronize",
              sample(c.options.sampling, [&] {
                const double t0 = now_ns();
                nd->copy_from_peer(*natives[src], b[dst].data(), a[src].data(), 4);
                nd->synchronize();
                return now_ns() - t0;
              }));
      }
      const Measurement* l = c.results().find(B, "copy", c.backend, "lrrt", pair_params(src, dst, "uni"), S);
      const Measurement* n = c.results().find(B, "copy", c.backend, "native", pair_params(src, dst, "uni"), S);
      if (l)
        c.summary(fmt::format("p2p-{}-to-{}-{}", src, dst, S),
                  fmt::format("device {} -> device {}, {}", src, dst, format_bytes(double(S))), l->gbps(), "GB/s",
                  n ? n->gbps() : NAN, "native");
    }

  // Both directions of each unordered pair at once (2 x size moved).
  for (uint32_t x = 0; x < count; ++x)
    for (uint32_t y = x + 1; y < count; ++y) {
      if (!devices[x].can_access_peer(devices[y]) || !devices[y].can_access_peer(devices[x])) continue;
      c.progress(fmt::format("{} {} {} <-> {} {}", B, c.backend, x, y, format_bytes(double(S))));
      c.add("copy", "lrrt", pair_params(x, y, "bi"), S, 2 * S, "lr_memcpy_peer_async both ways + lr_synchronize x2",
            sample(c.options.sampling, [&] {
              const double t0 = now_ns();
              check(lr_memcpy_peer_async(devices[y].get(), b[y].data(), devices[x].get(), a[x].data(), S, nullptr,
                                         nullptr, 0),
                    "lr_memcpy_peer_async");
              check(lr_memcpy_peer_async(devices[x].get(), b[x].data(), devices[y].get(), a[y].data(), S, nullptr,
                                         nullptr, 0),
                    "lr_memcpy_peer_async");
              check(lr_synchronize(devices[x].get()), "lr_synchronize");
              check(lr_synchronize(devices[y].get()), "lr_synchronize");
              return now_ns() - t0;
            }));
    }

  // Every device's host-to-device copy at once, against device 0's alone.
  std::vector<lrrt::PinnedHostBuffer> pinned;
  for (auto& d : devices) {
    pinned.emplace_back(d, S);
    std::memset(pinned.back().data(), 0xa5, S);
  }
  auto h2d = [&](size_t first, size_t last) {
    const double t0 = now_ns();
    for (size_t d = first; d < last; ++d)
      check(lr_memcpy_async(devices[d].get(), b[d].data(), pinned[d].data(), S, LR_MEMCPY_HOST_TO_DEVICE, nullptr),
            "lr_memcpy_async");
    for (size_t d = first; d < last; ++d) check(lr_synchronize(devices[d].get()), "lr_synchronize");
    return now_ns() - t0;
  };
  c.progress(fmt::format("{} {} host -> every device at once", B, c.backend));
  c.add("h2d", "lrrt", {{"devices", "1"}}, S, S, "lr_memcpy_async (pinned) on device 0 alone",
        sample(c.options.sampling, [&] { return h2d(0, 1); }));
  c.add("h2d", "lrrt", {{"devices", std::to_string(count)}}, S, S * count,
        "lr_memcpy_async (pinned) on every device at once", sample(c.options.sampling, [&] { return h2d(0, count); }));
  const Measurement* one = c.results().find(B, "h2d", c.backend, "lrrt", {{"devices", "1"}}, S);
  const Measurement* all = c.results().find(B, "h2d", c.backend, "lrrt", {{"devices", std::to_string(count)}}, S);
  if (one && all)
    c.summary(fmt::format("h2d-all-{}", S), fmt::format("host -> {} devices at once, {} each", count, format_bytes(double(S))),
              all->gbps(), "GB/s", one->gbps(), "one device alone",
              fmt::format("{:.2f}x one device's bandwidth with {} devices", all->gbps() / one->gbps(), count));
}

}  // namespace lrrt::tool::bench

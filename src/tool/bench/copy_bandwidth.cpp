// copy-bandwidth: H2D and D2H from pageable and pinned memory, and D2D,
// lr_memcpy beside the native copy over a size sweep (docs/benchmarks.md).
#include <algorithm>
#include <cstring>
#include <memory>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tool/bench/context.hpp"
#include "tool/units.hpp"

namespace lrrt::tool::bench {
namespace {

struct CopyCase {
  const char* direction;
  const char* memory;
  lr_memcpy_kind_t kind;
};

// Default sweep: 4 KiB..1 GiB in x4 steps; quick: 4 KiB, 64 KiB, 1 MiB, 16 MiB, 64 MiB.
std::vector<uint64_t> default_sizes(bool quick) {
  if (quick) return {4 * KiB, 64 * KiB, 1 * MiB, 16 * MiB, 64 * MiB};
  std::vector<uint64_t> out;
  for (uint64_t s = 4 * KiB; s <= GiB; s *= 4) out.push_back(s);
  return out;
}

}  // namespace

void copy_bandwidth(Context& c) {
  const std::string& B = c.benchmark;
  std::vector<uint64_t> sizes = c.options.sizes.empty() ? default_sizes(c.options.quick) : c.options.sizes;
  const uint64_t cap = max_copy_size(c.dev);
  std::vector<uint64_t> skipped;
  std::erase_if(sizes, [&](uint64_t s) {
    if (s <= cap) return false;
    skipped.push_back(s);
    return true;
  });
  if (!skipped.empty())
    c.error(fmt::format("{} on {}: sizes above {} skipped (memory): {}", B, c.backend,
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
      c.add("copy", "lrrt", params, size, size, lrrt_api, sample(so, [&] {
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
      c.add("copy", "native", params, size, size, api, sample(so, [&] {
            double t0 = now_ns();
            for (size_t i = 0; i < ops; ++i) c.native->copy(dst, src, size, cc.kind, native_async);
            if (native_async) c.native->synchronize();
            return (now_ns() - t0) / double(ops);
          }));
    }
    std::map<std::string, std::string> params{{"direction", cc.direction}, {"memory", cc.memory}};
    const Measurement* l = c.results().find(B, "copy", c.backend, "lrrt", params, S);
    const Measurement* n = c.results().find(B, "copy", c.backend, "native", params, S);
    if (l)
      c.summary(fmt::format("{}-{}-{}", cc.direction, cc.memory, S),
              fmt::format("{} {} {}", cc.direction, cc.memory, format_bytes(S)), l->gbps(), "GB/s",
              n ? n->gbps() : NAN, "native");
  }
}

}  // namespace lrrt::tool::bench

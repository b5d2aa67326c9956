// The pinned staging pipeline for pageable copies, forced on for the host
// backend (which never uses it on its own): random data, every byte checked,
// sizes that are not multiples of the chunk.
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <vector>

#include "lrrt/lrrt.hpp"
#include "runtime.hpp"
#include "staging.hpp"

namespace rt = lrrt::rt;

namespace {

std::vector<std::byte> random_bytes(size_t n, unsigned seed) {
  std::mt19937_64 gen(seed);
  std::vector<std::byte> v(n);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t x = gen();
    std::memcpy(v.data() + i, &x, 8);
  }
  for (; i < n; ++i) v[i] = std::byte(gen() & 0xff);
  return v;
}

rt::Device& internal(lrrt::Device d) {
  auto* r = rt::Runtime::instance();
  REQUIRE(r);
  return r->opened(r->device(d.get()));
}

struct ModeGuard {
  rt::StagingMode saved = rt::staging_mode();
  explicit ModeGuard(rt::StagingMode m) { rt::set_staging_mode(m); }
  ~ModeGuard() { rt::set_staging_mode(saved); }
};

}  // namespace

TEST_CASE("staging: parallel copier copies every byte for any size and thread count") {
  for (unsigned threads : {1u, 2u, 3u, 5u}) {
    rt::ParallelCopier copier(threads);
    for (size_t n : {size_t(0), size_t(1), size_t(4095), size_t(1) << 20, (size_t(3) << 20) + 77,
                     (size_t(9) << 20) + 4097}) {
      auto src = random_bytes(n, unsigned(n + threads));
      std::vector<std::byte> dst(n, std::byte{0});
      copier.copy(dst.data(), src.data(), n);
      CHECK_MESSAGE(dst == src, "threads ", threads, " size ", n);
    }
  }
}

TEST_CASE("staging: pipeline round trip on the host device with small chunks") {
  lrrt::Runtime runtime;
  auto device = lrrt::Device::select("host");
  rt::StagingConfig config;
  config.chunk_bytes = 64 * 1024;
  config.min_chunk_bytes = 4096;
  config.chunks = 3;
  config.threads = 3;
  rt::StagingPipeline pipeline(internal(device), config);
  for (size_t n : {size_t(1), size_t(4097), size_t(64 * 1024), size_t(64 * 1024 * 7 + 13), size_t(1) << 20,
                   (size_t(5) << 20) + 4321}) {
    auto src = random_bytes(n, unsigned(n));
    lrrt::DeviceBuffer buffer(device, n);
    pipeline.copy(buffer.data(), src.data(), n, rt::CopyKind::HostToDevice);
    // Host device memory is host memory: check it directly, then the way back.
    CHECK_MESSAGE(std::memcmp(buffer.data(), src.data(), n) == 0, "H2D size ", n);
    std::vector<std::byte> back(n, std::byte{0});
    pipeline.copy(back.data(), buffer.data(), n, rt::CopyKind::DeviceToHost);
    CHECK_MESSAGE(back == src, "D2H size ", n);
  }
  CHECK_THROWS(pipeline.copy(nullptr, nullptr, 16, rt::CopyKind::DeviceToDevice));
}

TEST_CASE("staging: lr_memcpy goes through the pipeline when forced, and not on host otherwise") {
  lrrt::Runtime runtime;
  auto device = lrrt::Device::select("host");
  auto& state = rt::Runtime::instance()->device(device.get());
  {
    ModeGuard auto_mode(rt::StagingMode::Auto);
    std::vector<std::byte> src(4 << 20, std::byte{1});
    lrrt::DeviceBuffer buffer(device, src.size());
    lrrt::copy_to_device(buffer, src.data(), src.size());
    CHECK_FALSE(state.staging);  // host memory is device memory: never staged
  }
  ModeGuard force(rt::StagingMode::Force);
  // Sizes around and beyond the 3 x 16 MiB ring, none a multiple of a chunk.
  for (size_t n : {size_t(3), size_t(1000003), (size_t(50) << 20) + 12345}) {
    auto src = random_bytes(n, unsigned(n * 7));
    lrrt::DeviceBuffer buffer(device, n);
    lrrt::copy_to_device(buffer, src.data(), n);
    CHECK(state.staging);
    CHECK_MESSAGE(std::memcmp(buffer.data(), src.data(), n) == 0, "H2D size ", n);
    std::vector<std::byte> back(n, std::byte{0});
    lrrt::copy_to_host(back.data(), buffer, n);
    CHECK_MESSAGE(back == src, "D2H size ", n);
  }
  auto stats = device.memory_stats();
  CHECK(stats.h2d_copy_bytes >= 3 + 1000003);
  CHECK(stats.d2h_copy_bytes >= 3 + 1000003);
}

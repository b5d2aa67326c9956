// The pinned staging pipeline for pageable copies, forced on for the host
// backend (which never uses it on its own): random data, every byte checked,
// sizes that are not multiples of the chunk.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <utility>
#include <random>
#include <vector>

#include "lrrt/lrrt.hpp"
#include "runtime.hpp"
#include "error.hpp"
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

TEST_CASE("staging: streaming copy copies every byte for any size and alignment") {
  for (size_t n : {size_t(0), size_t(1), size_t(4095), size_t(4096), size_t(4096 + 127), size_t(1) << 20,
                   (size_t(3) << 20) + 77}) {
    for (size_t dst_off : {size_t(0), size_t(1), size_t(17), size_t(31)}) {
      for (size_t src_off : {size_t(0), size_t(5)}) {
        auto src = random_bytes(n + src_off, unsigned(n + dst_off * 3 + src_off));
        std::vector<std::byte> dst(n + dst_off + 64, std::byte{0xA5});  // poisoned, with guard bytes
        rt::copy_streaming(dst.data() + dst_off, src.data() + src_off, n);
        CHECK_MESSAGE((n == 0 || std::memcmp(dst.data() + dst_off, src.data() + src_off, n) == 0), "size ", n, " dst+",
                      dst_off, " src+", src_off);
        for (size_t i = 0; i < dst_off; ++i) REQUIRE(dst[i] == std::byte{0xA5});
        for (size_t i = n + dst_off; i < dst.size(); ++i) REQUIRE(dst[i] == std::byte{0xA5});
      }
    }
  }
}

TEST_CASE("staging: configuration from LRRT_STAGING_* names a malformed variable") {
  struct Env {
    const char* name;
    explicit Env(const char* n, const char* v) : name(n) { setenv(n, v, 1); }
    ~Env() { unsetenv(name); }
  };
  {
    Env a("LRRT_STAGING_CHUNK", "512K"), b("LRRT_STAGING_SLOTS", "3"), c("LRRT_STAGING_THREADS", "5"),
        d("LRRT_STAGING_NT", "both"), e("LRRT_STAGING_MIN", "2M");
    auto config = rt::StagingConfig::from_env();
    CHECK(config.chunk_bytes == 512 * 1024);
    CHECK(config.slots == 3);
    CHECK(config.lanes == 5);
    CHECK(config.nt_to_host);
    CHECK(config.nt_to_device);
    CHECK(config.threshold == 2 * 1024 * 1024);
  }
  auto defaults = rt::StagingConfig::from_env();
  CHECK(defaults.chunk_bytes == rt::StagingConfig{}.chunk_bytes);
  CHECK(defaults.nt_to_host);
  CHECK_FALSE(defaults.nt_to_device);
  for (auto [name, value] : {std::pair{"LRRT_STAGING_CHUNK", "12Q"}, std::pair{"LRRT_STAGING_CHUNK", "1"},
                             std::pair{"LRRT_STAGING_SLOTS", "0"}, std::pair{"LRRT_STAGING_THREADS", "x"},
                             std::pair{"LRRT_STAGING_NT", "sometimes"}}) {
    Env bad(name, value);
    CHECK_THROWS_WITH_AS(rt::StagingConfig::from_env(), doctest::Contains(name), lrrt::Error);
  }
}

TEST_CASE("staging: pipeline round trip on the host device with small slots, with and without streaming stores") {
  lrrt::Runtime runtime;
  auto device = lrrt::Device::select("host");
  for (bool nt : {false, true}) {
    rt::StagingConfig config;
    config.chunk_bytes = 64 * 1024;
    config.min_chunk_bytes = 4096;
    config.slots = 2;
    config.lanes = 3;
    config.nt_to_host = nt;
    config.nt_to_device = nt;
    rt::StagingPipeline pipeline(internal(device), config);
    for (size_t n : {size_t(1), size_t(4097), size_t(64 * 1024), size_t(64 * 1024 * 7 + 13), size_t(1) << 20,
                     (size_t(5) << 20) + 4321}) {
      auto src = random_bytes(n, unsigned(n + nt));
      lrrt::DeviceBuffer buffer(device, n);
      std::memset(buffer.data(), 0xA5, n);  // poison
      pipeline.copy(buffer.data(), src.data(), n, rt::CopyKind::HostToDevice);
      // Host device memory is host memory: check it directly, then the way back.
      CHECK_MESSAGE(std::memcmp(buffer.data(), src.data(), n) == 0, "H2D size ", n, " nt ", nt);
      std::vector<std::byte> back(n, std::byte{0xA5});
      pipeline.copy(back.data(), buffer.data(), n, rt::CopyKind::DeviceToHost);
      CHECK_MESSAGE(back == src, "D2H size ", n, " nt ", nt);
    }
    CHECK_THROWS(pipeline.copy(nullptr, nullptr, 16, rt::CopyKind::DeviceToDevice));
  }
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
  // Sizes from one piece to many rounds of every lane's slots, none a multiple of a piece.
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

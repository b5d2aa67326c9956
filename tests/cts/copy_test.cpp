// Copies: synchronous and asynchronous, in all three directions, with
// pageable and pinned host memory, at sizes and offsets that are not
// multiples of anything, and past the size where lr_memcpy stages pageable
// memory through pinned buffers on GPU backends (staging.hpp). ctest runs
// this suite a second time with LRRT_STAGING=force and small pieces, so the
// staging pipeline runs on every backend, host included.
#include "cts.hpp"

namespace lrrt::cts {
namespace {

// Pageable host bytes at an odd offset into a poisoned vector, with guards.
struct PageableBytes {
  static constexpr size_t kOffset = 3, kGuard = 64;
  std::vector<uint8_t> storage;
  explicit PageableBytes(size_t n) : storage(n + kOffset + kGuard, 0xFF) {}
  uint8_t* data() { return storage.data() + kOffset; }
  std::span<const uint8_t> bytes(size_t n) const { return {storage.data() + kOffset, n}; }
  void check_guards(size_t n) const {
    size_t touched = 0;
    for (size_t i = 0; i < kOffset; ++i) touched += storage[i] != 0xFF;
    for (size_t i = kOffset + n; i < storage.size(); ++i) touched += storage[i] != 0xFF;
    CHECK_MESSAGE(touched == 0, touched, " bytes around the destination were written");
  }
};

void check_bytes(std::span<const uint8_t> got, const std::vector<uint8_t>& want, const char* what) {
  check_every(got, [&](size_t i) { return want[i]; }, what);
}

}  // namespace

TEST_SUITE("copies") {

TEST_CASE("synchronous copies move every byte in all three directions, pageable and pinned") {
  Session s;
  CTS_RANDOM(rng);
  // The last size is past lr_memcpy's staging threshold (16 MiB).
  for (size_t n : {size_t(1), size_t(4095), size_t(4096 + 17), (size_t(3) << 20) + 5, (size_t(16) << 20) + 77}) {
    CAPTURE(n);
    auto src = rng.bytes(n + 1);
    const std::vector<uint8_t> want(src.begin() + 1, src.end());
    lrrt::DeviceBuffer d1(s.device(), n), d2(s.device(), n);
    // Pageable, from an odd address.
    CTS_OK(lr_memcpy(s.get(), d1.data(), src.data() + 1, n, LR_MEMCPY_HOST_TO_DEVICE));
    CTS_OK(lr_memcpy(s.get(), d2.data(), d1.data(), n, LR_MEMCPY_DEVICE_TO_DEVICE));
    PageableBytes back(n);
    CTS_OK(lr_memcpy(s.get(), back.data(), d2.data(), n, LR_MEMCPY_DEVICE_TO_HOST));
    check_bytes(back.bytes(n), want, "pageable H2D, D2D, D2H");
    back.check_guards(n);
    // Pinned.
    lrrt::PinnedHostBuffer up(s.device(), n);
    auto down = poisoned_pinned(s.device(), n);
    auto fresh = rng.bytes(n);
    std::memcpy(up.data(), fresh.data(), n);
    CTS_OK(lr_memcpy(s.get(), d1.data(), up.data(), n, LR_MEMCPY_HOST_TO_DEVICE));
    CTS_OK(lr_memcpy(s.get(), down.data(), d1.data(), n, LR_MEMCPY_DEVICE_TO_HOST));
    check_bytes({down.as<uint8_t>(), n}, fresh, "pinned H2D, D2H");
  }
}

TEST_CASE("asynchronous copies move every byte in all three directions, pageable and pinned") {
  Session s;
  CTS_RANDOM(rng);
  const size_t n = (size_t(1) << 20) + 13;
  lrrt::DeviceBuffer d1(s.device(), n), d2(s.device(), n);
  lrrt::Event e1(s.device()), e2(s.device()), e3(s.device());
  for (bool pinned : {false, true}) {
    CAPTURE(pinned);
    // The host side stays alive and unchanged until the copies complete.
    auto want = rng.bytes(n);
    lrrt::PinnedHostBuffer pinned_src(s.device(), n);
    auto pinned_dst = poisoned_pinned(s.device(), n);
    std::memcpy(pinned_src.data(), want.data(), n);
    PageableBytes pageable_dst(n);
    const void* src = pinned ? pinned_src.data() : static_cast<const void*>(want.data());
    void* dst = pinned ? pinned_dst.data() : static_cast<void*>(pageable_dst.data());
    auto got = [&] {
      return pinned ? std::span<const uint8_t>(pinned_dst.as<uint8_t>(), n) : pageable_dst.bytes(n);
    };

    // The default queue: in order, the last copy signals.
    CTS_OK(lr_memcpy_async(s.get(), d1.data(), src, n, LR_MEMCPY_HOST_TO_DEVICE, nullptr));
    CTS_OK(lr_memcpy_async(s.get(), d2.data(), d1.data(), n, LR_MEMCPY_DEVICE_TO_DEVICE, nullptr));
    CTS_OK(lr_memcpy_async(s.get(), dst, d2.data(), n, LR_MEMCPY_DEVICE_TO_HOST, e3.get()));
    e3.synchronize();
    check_bytes(got(), want, "lr_memcpy_async H2D, D2D, D2H");
    if (!pinned) pageable_dst.check_guards(n);

    // The copy path: each copy after the event of the one before.
    std::memset(dst, 0xFF, n);
    lr_event_t* after1[] = {e1.get()};
    lr_event_t* after2[] = {e2.get()};
    CTS_OK(lr_memcpy_async_with_dependencies(s.get(), d2.data(), src, n, LR_MEMCPY_HOST_TO_DEVICE, e1.get(),
                                             nullptr, 0));
    CTS_OK(lr_memcpy_async_with_dependencies(s.get(), d1.data(), d2.data(), n, LR_MEMCPY_DEVICE_TO_DEVICE, e2.get(),
                                             after1, 1));
    CTS_OK(lr_memcpy_async_with_dependencies(s.get(), dst, d1.data(), n, LR_MEMCPY_DEVICE_TO_HOST, e3.get(),
                                             after2, 1));
    e3.synchronize();
    check_bytes(got(), want, "lr_memcpy_async_with_dependencies H2D, D2D, D2H");
    if (!pinned) pageable_dst.check_guards(n);
    s.device().synchronize();
  }
}

TEST_CASE("a copy of zero bytes does nothing and bad copy arguments are refused") {
  Session s;
  lrrt::DeviceBuffer d(s.device(), 64);
  CTS_OK(lr_memcpy(s.get(), nullptr, nullptr, 0, LR_MEMCPY_HOST_TO_DEVICE));
  CTS_OK(lr_memcpy_async(s.get(), nullptr, nullptr, 0, LR_MEMCPY_DEVICE_TO_HOST, nullptr));
  char host[64] = {};
  CTS_FAILS(lr_memcpy(s.get(), nullptr, host, 64, LR_MEMCPY_HOST_TO_DEVICE), LR_ERROR_INVALID_ARGUMENT, "dst");
  CTS_FAILS(lr_memcpy(s.get(), host, nullptr, 64, LR_MEMCPY_DEVICE_TO_HOST), LR_ERROR_INVALID_ARGUMENT, "src");
  CTS_FAILS(lr_memcpy_async(s.get(), d.data(), host, 64, static_cast<lr_memcpy_kind_t>(7), nullptr),
            LR_ERROR_INVALID_ARGUMENT, "kind");
  lr_event_t* null_deps = nullptr;
  CTS_FAILS(lr_memcpy_async_with_dependencies(s.get(), d.data(), host, 64, LR_MEMCPY_HOST_TO_DEVICE, nullptr,
                                              &null_deps, 1),
            LR_ERROR_INVALID_ARGUMENT);
}

}  // TEST_SUITE

}  // namespace lrrt::cts

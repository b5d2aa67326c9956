// Memory statistics (lr_get_memory_stats): exact live, peak and total bytes
// and counts for device and pinned host memory, copy bytes by direction and
// the copy count; failed calls change nothing; a reset keeps what is live.
#include "cts.hpp"

namespace lrrt::cts {
namespace {

struct Counts {
  uint64_t live = 0, peak = 0, allocated = 0, freed = 0, allocations = 0, frees = 0;
  void allocate(uint64_t bytes) {
    live += bytes, allocated += bytes, ++allocations;
    peak = std::max(peak, live);
  }
  void free(uint64_t bytes) { live -= bytes, freed += bytes, ++frees; }
};

void check_stats(const lrrt::Device& device, const Counts& d, const Counts& p, uint64_t h2d, uint64_t d2h,
                 uint64_t d2d, uint64_t copies) {
  auto s = device.memory_stats();
  CHECK(s.live_bytes == d.live);
  CHECK(s.peak_live_bytes == d.peak);
  CHECK(s.total_allocated_bytes == d.allocated);
  CHECK(s.total_freed_bytes == d.freed);
  CHECK(s.allocation_count == d.allocations);
  CHECK(s.free_count == d.frees);
  CHECK(s.pinned_host_live_bytes == p.live);
  CHECK(s.pinned_host_peak_live_bytes == p.peak);
  CHECK(s.pinned_host_total_allocated_bytes == p.allocated);
  CHECK(s.pinned_host_total_freed_bytes == p.freed);
  CHECK(s.pinned_host_allocation_count == p.allocations);
  CHECK(s.pinned_host_free_count == p.frees);
  CHECK(s.h2d_copy_bytes == h2d);
  CHECK(s.d2h_copy_bytes == d2h);
  CHECK(s.d2d_copy_bytes == d2d);
  CHECK(s.memcpy_count == copies);
}

}  // namespace

TEST_SUITE("memory_stats") {

TEST_CASE("memory statistics count every allocation, free and copy exactly") {
  Session s;
  CTS_RANDOM(rng);
  Counts dev, pin;
  check_stats(s.device(), dev, pin, 0, 0, 0, 0);

  std::vector<lrrt::DeviceBuffer> buffers;
  std::vector<lrrt::PinnedHostBuffer> pinned;
  for (int i = 0; i < 5; ++i) {
    size_t bytes = 1 + rng.engine()() % (1u << 20);
    buffers.emplace_back(s.device(), bytes);
    dev.allocate(bytes);
  }
  for (int i = 0; i < 3; ++i) {
    size_t bytes = 1 + rng.engine()() % (1u << 20);
    pinned.emplace_back(s.device(), bytes);
    pin.allocate(bytes);
  }
  check_stats(s.device(), dev, pin, 0, 0, 0, 0);

  // Copies by direction, synchronous and asynchronous, pageable and pinned.
  const size_t n = std::min({buffers[0].size(), buffers[1].size(), pinned[0].size()});
  std::vector<uint8_t> host(n);
  CTS_OK(lr_memcpy(s.get(), buffers[0].data(), host.data(), n, LR_MEMCPY_HOST_TO_DEVICE));
  CTS_OK(lr_memcpy(s.get(), buffers[1].data(), buffers[0].data(), n, LR_MEMCPY_DEVICE_TO_DEVICE));
  CTS_OK(lr_memcpy(s.get(), host.data(), buffers[1].data(), n, LR_MEMCPY_DEVICE_TO_HOST));
  // The copy back waits for the copy in (the copy queue has no order of its
  // own with the default queue): the two touch the same bytes.
  lrrt::Event copied_in(s.device());
  lr_event_t* copied_in_handle = copied_in.get();
  CTS_OK(lr_memcpy_async(s.get(), buffers[0].data(), pinned[0].data(), n, LR_MEMCPY_HOST_TO_DEVICE,
                         copied_in_handle));
  CTS_OK(lr_memcpy_async_with_dependencies(s.get(), pinned[0].data(), buffers[0].data(), n,
                                           LR_MEMCPY_DEVICE_TO_HOST, nullptr, &copied_in_handle, 1));
  s.device().synchronize();
  check_stats(s.device(), dev, pin, 2 * n, 2 * n, n, 5);

  // Frees: live drops, peak stays.
  dev.free(buffers[2].size());
  buffers[2].reset();
  pin.free(pinned[1].size());
  pinned[1].reset();
  check_stats(s.device(), dev, pin, 2 * n, 2 * n, n, 5);

  // Failed calls count nothing.
  void* p = nullptr;
  const uint64_t too_much = s.device().properties().memory_bytes + 1;
  CTS_FAILS(lr_malloc(s.get(), too_much, &p), LR_ERROR_OUT_OF_MEMORY, std::to_string(too_much), "bytes of memory");
  CHECK(p == nullptr);
  int not_ours = 0;
  CTS_FAILS(lr_free(s.get(), &not_ours), LR_ERROR_INVALID_ARGUMENT);
  CTS_FAILS(lr_host_free(s.get(), buffers[0].data()), LR_ERROR_INVALID_ARGUMENT, "lr_host_malloc");
  CTS_FAILS(lr_malloc(s.get(), 0, &p), LR_ERROR_INVALID_ARGUMENT);
  check_stats(s.device(), dev, pin, 2 * n, 2 * n, n, 5);

  // A reset keeps what is live; the peak starts again from it.
  s.device().reset_memory_stats();
  Counts dev_after{dev.live, dev.live, 0, 0, 0, 0}, pin_after{pin.live, pin.live, 0, 0, 0, 0};
  check_stats(s.device(), dev_after, pin_after, 0, 0, 0, 0);
  buffers.clear();
  pinned.clear();
  auto end = s.device().memory_stats();
  CHECK(end.live_bytes == 0);
  CHECK(end.pinned_host_live_bytes == 0);
  CHECK(end.free_count == 4);
  CHECK(end.pinned_host_free_count == 2);
  CHECK(end.peak_live_bytes == dev.live);
}

}  // TEST_SUITE

}  // namespace lrrt::cts

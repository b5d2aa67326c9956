#include "host_device.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <fstream>
#include <vector>
#include <new>
#include <string_view>
#include <system_error>
#include <thread>

#include "env.hpp"
#include "error.hpp"
#include "host_dispatch.hpp"
#include "host_event.hpp"
#include "host_executable.hpp"
#include "host_graph.hpp"
#include "host_queue.hpp"

namespace lrrt::rt::host {
namespace {

constexpr unsigned long kMaxHostThreads = 1024;

std::string host_arch() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#else
  return "unknown";
#endif
}

// LRRT_HOST_THREADS: a whole number of threads from 1 to kMaxHostThreads,
// digits only ("-1" read by strtoul would be 4294967295 threads, "abc" 0).
// The CLI checks the same rule before it opens a device (src/cli/common.cpp,
// check_host_threads_env) so that a bad value is an input error, exit 2.
uint32_t core_count() {
  unsigned n = std::thread::hardware_concurrency();
  static_assert(env::kHostThreads.max == kMaxHostThreads);
  if (const auto threads = env::number(env::kHostThreads)) n = static_cast<unsigned>(*threads);
  return n ? n : 1;
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) {
        auto name = line.substr(colon + 1);
        name.erase(0, name.find_first_not_of(' '));
        return name;
      }
    }
  }
  return "unknown CPU";
}

uint64_t physical_memory_bytes() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGESIZE);
  return pages > 0 && page_size > 0 ? uint64_t(pages) * uint64_t(page_size) : 0;
}


// The last-level cache: the highest level of cpu0's data or unified caches
// in sysfs (/sys/devices/system/cpu/cpu0/cache/indexN/{level,type,size}),
// else sysconf(_SC_LEVEL3/2_CACHE_SIZE).
void host_llc(uint64_t& bytes, std::string& method) {
  int best_level = 0;
  for (int i = 0; i < 16; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i);
    std::ifstream level_f(dir + "/level"), type_f(dir + "/type"), size_f(dir + "/size");
    int level = 0;
    std::string type, size;
    if (!(level_f >> level) || !(type_f >> type) || !(size_f >> size)) continue;
    if (type == "Instruction" || level <= best_level) continue;
    char* end = nullptr;
    uint64_t v = std::strtoull(size.c_str(), &end, 10);
    if (end && (*end == 'K' || *end == 'k')) v <<= 10;
    else if (end && (*end == 'M' || *end == 'm')) v <<= 20;
    if (!v) continue;
    best_level = level;
    bytes = v;
    method = "sysfs " + dir + " (L" + std::to_string(level) + ")";
  }
  if (bytes) return;
  for (auto [name, level] : {std::pair{_SC_LEVEL3_CACHE_SIZE, 3}, std::pair{_SC_LEVEL2_CACHE_SIZE, 2}}) {
    const long v = ::sysconf(name);
    if (v > 0) {
      bytes = static_cast<uint64_t>(v);
      method = "sysconf(_SC_LEVEL" + std::to_string(level) + "_CACHE_SIZE)";
      return;
    }
  }
}
}  // namespace

// The pool's workers run kernel code: each starts with its kernel stack
// (start_kernel_thread), so a pool that runs out of address space is smaller
// with every worker able to run kernels.
HostDevice::HostDevice(uint32_t ordinal, uint32_t count) : pool_(core_count(), kPoolSpin, start_kernel_thread) {
  properties_.backend = "host";
  properties_.name = cpu_model_name();
  properties_.arch = host_arch();
  properties_.isas = {host_arch()};
  properties_.compute_units = pool_.threads();
  properties_.wave_size = 1;
  properties_.max_workgroup_size = 1024;
  properties_.max_workgroup_dims = {1024, 1024, 64};
  properties_.max_shared_memory_per_workgroup = 1u << 20;
  properties_.memory_bytes = physical_memory_bytes();
  properties_.host_memory_is_device_memory = true;
  // Fewer threads than asked for when the system would not start them all
  // (thread_pool.hpp): the device runs, and says so.
  const std::string threads =
      pool_.start_failure().empty()
          ? std::to_string(pool_.threads())
          : fmt::format("{} of {} asked for ({})", pool_.threads(), pool_.requested_threads(), pool_.start_failure());
  properties_.extra = {{"threads", threads},
                       {"kernel format", "host shared object (*.host.so), host ABI v1"}};
  if (count > 1) {
    properties_.extra.push_back({"host device", fmt::format("{} of {} (LRRT_HOST_DEVICES)", ordinal, count)});
    for (uint32_t j = 0; j < count; ++j)
      if (j != ordinal)
        properties_.extra.push_back({fmt::format("link to host device {}", j), "one address space: peer copies are memcpy"});
  }
}

bool HostDevice::can_access_peer(const Device& peer) const { return dynamic_cast<const HostDevice*>(&peer) != nullptr; }

void HostDevice::enable_peer_access(Device& peer) {
  if (!can_access_peer(peer)) Device::enable_peer_access(peer);  // throws, naming both
}

void HostDevice::copy_from_peer(Queue& queue, void* dst, Device& src_device, const void* src, size_t size,
                                EventList wait_for, Event* signal) {
  if (!can_access_peer(src_device)) Device::copy_from_peer(queue, dst, src_device, src, size, wait_for, signal);
  // One address space: a peer's memory is a device-to-device copy here.
  queue.copy(dst, src, size, CopyKind::DeviceToDevice, wait_for, signal);
}

HostDevice::~HostDevice() { release_utility_queue(); }

// Both kinds are guarded at their end (host_memory.hpp): kernels reach both.
void* HostDevice::allocate(size_t size) { return memory_.allocate(size, "device allocation"); }
void HostDevice::free(void* ptr) { memory_.free(ptr); }
void* HostDevice::do_allocate_host(size_t size) { return memory_.allocate(size, "pinned host allocation"); }
void HostDevice::do_free_host(void* ptr) { memory_.free(ptr); }

std::unique_ptr<Queue> HostDevice::create_queue() { return std::make_unique<HostQueue>(*this); }
std::unique_ptr<Event> HostDevice::create_event() { return std::make_unique<HostEvent>(); }

std::unique_ptr<Module> HostDevice::load_module(std::span<const std::byte> image) {
  return std::make_unique<HostModule>(image);
}

void HostDevice::copy_sync(void* dst, const void* src, size_t size, CopyKind) {
  // The core drained the device first; host memory is device memory here.
  std::memmove(dst, src, size);
}

std::unique_ptr<graph::GraphExec> HostDevice::instantiate_graph(const graph::Lowering& lowering) {
  return make_host_graph_exec(*this, lowering);
}


Device::MemoryInfo HostDevice::memory_info() {
  std::lock_guard lock(memory_info_mutex_);
  if (memory_info_measured_) return memory_info_;
  memory_info_measured_ = true;
  host_llc(memory_info_.last_level_cache_bytes, memory_info_.last_level_cache_method);
  // Host memory reports no clock: measure. A memcpy on every pool thread over
  // buffers far past the LLC (4x, at least 64 MiB, at most 512 MiB), the best
  // of 3 after one to touch the pages; bytes read + written.
  const uint64_t size = std::clamp<uint64_t>(memory_info_.last_level_cache_bytes * 4, uint64_t(64) << 20, uint64_t(512) << 20);
  std::vector<std::byte> a, b;
  try {
    a.assign(size, std::byte{1});
    b.assign(size, std::byte{0});
  } catch (const std::bad_alloc&) {
    return memory_info_;  // unknown: no memory to measure with
  }
  // Own threads, not the pool: a queue may be dispatching on it meanwhile.
  const unsigned threads = std::max(1u, std::min(pool_.threads(), std::thread::hardware_concurrency()));
  const uint64_t chunk = (size / threads + 4095) / 4096 * 4096;
  double best = 0;
  for (int round = 0; round < 4; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> workers;
    bool started = true;
    try {
      for (unsigned t = 0; t < threads; ++t)
        workers.emplace_back([&, t] {
          const uint64_t lo = std::min<uint64_t>(size, t * chunk), hi = std::min<uint64_t>(size, lo + chunk);
          if (hi > lo) std::memcpy(b.data() + lo, a.data() + lo, hi - lo);
        });
    } catch (const std::system_error&) {
      started = false;  // no threads to spare (an address-space limit): unknown
    }
    for (auto& w : workers) w.join();
    if (!started) return memory_info_;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (round > 0 && s > 0) best = std::max(best, 2.0 * double(size) / s);
  }
  memory_info_.peak_bandwidth = best;
  memory_info_.peak_source = LR_PEAK_BANDWIDTH_MEASURED;
  memory_info_.peak_method = "measured: memcpy of " + std::to_string(size >> 20) + " MiB on " + std::to_string(threads) +
                             " threads, best of 3, bytes read + written";
  return memory_info_;
}

}  // namespace lrrt::rt::host

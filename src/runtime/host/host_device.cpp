#include "host_device.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <string_view>
#include <thread>

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
  if (const char* env = std::getenv("LRRT_HOST_THREADS"); env && *env) {
    const std::string_view text = env;
    const bool digits = text.size() <= 9 && text.find_first_not_of("0123456789") == std::string_view::npos;
    const unsigned long v = digits ? std::strtoul(env, nullptr, 10) : 0;
    if (v < 1 || v > kMaxHostThreads)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT,
                 "LRRT_HOST_THREADS='{}' is not a whole number of threads from 1 to {}; unset it for one thread "
                 "per core",
                 text.substr(0, 64), kMaxHostThreads);
    n = static_cast<unsigned>(v);
  }
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

}  // namespace

// The pool's workers run kernel code: each starts with its kernel stack
// (start_kernel_thread), so a pool that runs out of address space is smaller
// with every worker able to run kernels.
HostDevice::HostDevice() : pool_(core_count(), kPoolSpin, start_kernel_thread) {
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

}  // namespace lrrt::rt::host

#include "host_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <iterator>

#include "error.hpp"

namespace lrrt::rt::host {
namespace {

constexpr size_t kAlignment = 256;  // as GPU allocators give
// Address space, never memory: a kernel launched over more work-items than
// its buffer holds runs its workgroups on several threads at once, each
// thread starting a chunk of workgroups further on (thread_pool.cpp), so its
// first stray write can land megabytes past the end, beyond a one-page guard
// and into whatever the process mapped there. 64 MiB holds such overruns up
// to 16 M floats; 32 thousand live allocations take 2 TiB of the 128 TiB.
constexpr size_t kGuardBytes = size_t(64) << 20;

// The canary: bytes no kernel writes by accident (neither zeros, nor a
// repeated byte, nor small integers).
constexpr std::array<std::byte, kAlignment> make_canary() {
  std::array<std::byte, kAlignment> c{};
  for (size_t i = 0; i < c.size(); ++i) c[i] = std::byte(uint8_t(0xA5 ^ (i * 0x3B + (i >> 3))));
  return c;
}
constexpr std::array<std::byte, kAlignment> kCanary = make_canary();

}  // namespace

GuardedMemory::GuardedMemory() : page_(static_cast<size_t>(sysconf(_SC_PAGESIZE))) {}

GuardedMemory::~GuardedMemory() {
  for (auto& [start, b] : blocks_) munmap(b.base, b.mapped);
}

void* GuardedMemory::allocate(size_t size, const char* what) {
  const size_t want = size ? size : 1;
  const size_t rounded = (want + kAlignment - 1) / kAlignment * kAlignment;
  const size_t data = (rounded + page_ - 1) / page_ * page_;
  if (rounded < want || data < rounded || data + page_ < data)
    LRRT_THROW(LR_ERROR_OUT_OF_MEMORY, "{} of {} bytes overflows", what, size);
  // The guard: kGuardBytes of address space with nothing behind it, or one
  // page where the process cannot spare that much (RLIMIT_AS, a full map).
  void* p = MAP_FAILED;
  size_t mapped = 0;
  for (size_t guard : {kGuardBytes, page_}) {
    if (data + guard < data) continue;
    mapped = data + guard;
    // All of it PROT_NONE first (not charged to the commit limit), then the
    // data made writable (charged then: a huge request still fails here, not
    // at first touch).
    p = mmap(nullptr, mapped, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) break;
  }
  if (p == MAP_FAILED)
    LRRT_THROW(LR_ERROR_OUT_OF_MEMORY, "{} of {} bytes failed: out of host memory ({})", what, size,
               std::strerror(errno));
  Block b;
  b.base = static_cast<std::byte*>(p);
  b.mapped = mapped;
  b.start = b.base + data - rounded;
  b.size = size;
  b.slack = rounded - size;
  b.what = what;
  if (mprotect(b.base, data, PROT_READ | PROT_WRITE) != 0) {
    const int error = errno;
    munmap(p, mapped);
    // ENOMEM here is the commit limit, or the mapping count
    // (vm.max_map_count): the split makes a second mapping.
    LRRT_THROW(LR_ERROR_OUT_OF_MEMORY, "{} of {} bytes failed: out of host memory ({})", what, size,
               std::strerror(error));
  }
  std::memcpy(b.start + size, kCanary.data(), b.slack);
  std::lock_guard lock(mutex_);
  blocks_.emplace(reinterpret_cast<uintptr_t>(b.start), b);
  if (b.slack) ++with_slack_;
  return b.start;
}

void GuardedMemory::free(void* ptr) {
  Block b;
  {
    std::lock_guard lock(mutex_);
    auto it = blocks_.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == blocks_.end()) return;
    b = it->second;
    if (b.slack) --with_slack_;
    blocks_.erase(it);
  }
  munmap(b.base, b.mapped);
}

std::string GuardedMemory::name(const Block& b) {
  return fmt::format("the {}-byte {} at {}", b.size, b.what, static_cast<const void*>(b.start));
}

std::string GuardedMemory::scan_and_repair() {
  std::lock_guard lock(mutex_);
  if (with_slack_ == 0) return {};
  std::string first;
  for (auto& [start, b] : blocks_) {
    if (!b.slack) continue;
    std::byte* canary = b.start + b.size;
    if (std::memcmp(canary, kCanary.data(), b.slack) == 0) continue;
    if (first.empty()) {
      size_t changed = 0, last = 0;
      for (size_t i = 0; i < b.slack; ++i)
        if (canary[i] != kCanary[i]) {
          ++changed;
          last = i;
        }
      first = fmt::format("{}: {} of the {} bytes after its end were overwritten (up to {} bytes past it)", name(b),
                          changed, b.slack, last + 1);
    }
    std::memcpy(canary, kCanary.data(), b.slack);
  }
  return first;
}

std::string GuardedMemory::describe(const void* address) const {
  const auto* a = static_cast<const std::byte*>(address);
  std::lock_guard lock(mutex_);
  for (const auto& [start, b] : blocks_) {
    if (a < b.base || a >= b.base + b.mapped) continue;
    if (a >= b.start + b.size)
      return fmt::format("the address lies {} bytes after the end of {}", a - (b.start + b.size), name(b));
    if (a < b.start) return fmt::format("the address lies {} bytes before the start of {}", b.start - a, name(b));
    return fmt::format("the address lies inside {}", name(b));
  }
  // In no mapping of ours: a write that skipped its buffer's guard page
  // (threads run workgroups out of order, so the first fault is often far
  // past the end). The allocation nearest below is the likely culprit; the
  // message says it is a guess.
  auto above = blocks_.upper_bound(reinterpret_cast<uintptr_t>(a));
  if (above == blocks_.begin()) return {};
  const Block& below = std::prev(above)->second;
  return fmt::format("the address lies {} bytes after the end of {}, the nearest allocation below it",
                     a - (below.start + below.size), name(below));
}

}  // namespace lrrt::rt::host

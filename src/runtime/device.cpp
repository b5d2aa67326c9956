#include "backend.hpp"

namespace lrrt::rt {

Queue& Device::utility_queue() {
  if (!utility_queue_) utility_queue_ = create_queue();
  return *utility_queue_;
}

void* Device::allocate_host(size_t size) {
  void* p = do_allocate_host(size);
  std::lock_guard lock(pinned_mutex_);
  pinned_[reinterpret_cast<uintptr_t>(p)] = size;
  return p;
}

void Device::free_host(void* ptr) {
  if (!ptr) return;
  {
    std::lock_guard lock(pinned_mutex_);
    pinned_.erase(reinterpret_cast<uintptr_t>(ptr));
  }
  do_free_host(ptr);
}

bool Device::is_pinned(const void* p, size_t size) const {
  const auto a = reinterpret_cast<uintptr_t>(p);
  std::lock_guard lock(pinned_mutex_);
  auto it = pinned_.upper_bound(a);
  if (it == pinned_.begin()) return false;
  --it;
  return a >= it->first && a + size <= it->first + it->second;
}

void Device::copy_sync(void* dst, const void* src, size_t size, CopyKind kind) {
  Queue& q = utility_queue();
  q.copy(dst, src, size, kind, {}, nullptr);
  q.synchronize();
}

}  // namespace lrrt::rt

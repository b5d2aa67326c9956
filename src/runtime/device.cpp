#include "backend.hpp"

namespace lrrt::rt {

Queue& Device::utility_queue() {
  if (!utility_queue_) utility_queue_ = create_queue();
  return *utility_queue_;
}

void Device::copy_sync(void* dst, const void* src, size_t size, CopyKind kind) {
  Queue& q = utility_queue();
  q.copy(dst, src, size, kind, {}, nullptr);
  q.synchronize();
}

}  // namespace lrrt::rt

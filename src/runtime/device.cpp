#include "tensor_map.hpp"
#include "backend.hpp"

#include <cstring>
#include <type_traits>

#include "error.hpp"

namespace lrrt::rt {

const char* copy_kind_name(CopyKind kind) {
  switch (kind) {
    case CopyKind::HostToDevice: return "host-to-device";
    case CopyKind::DeviceToHost: return "device-to-host";
    case CopyKind::DeviceToDevice: return "device-to-device";
  }
  return "?";
}

CopyKind to_copy_kind(const lr_memcpy_kind_t& abi_kind) {
  std::underlying_type_t<lr_memcpy_kind_t> kind;
  std::memcpy(&kind, &abi_kind, sizeof kind);
  switch (kind) {
    case LR_MEMCPY_HOST_TO_DEVICE: return CopyKind::HostToDevice;
    case LR_MEMCPY_DEVICE_TO_HOST: return CopyKind::DeviceToHost;
    case LR_MEMCPY_DEVICE_TO_DEVICE: return CopyKind::DeviceToDevice;
  }
  LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "unknown memcpy kind {}", kind);
}

Queue& Device::utility_queue() {
  std::lock_guard lock(utility_mutex_);
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

bool Device::can_access_peer(const Device&) const { return false; }

void Device::encode_tensor_map(const lr_tensor_map_desc_t&, void*) { tensor_maps_not_supported(properties().backend); }

void Device::enable_peer_access(Device& peer) {
  LRRT_THROW(LR_ERROR_NOT_SUPPORTED, "{} ({}) cannot reach the memory of {} ({})", properties().name,
             properties().backend, peer.properties().name, peer.properties().backend);
}

void Device::copy_from_peer(Queue&, void*, Device& src_device, const void*, size_t, EventList, Event*) {
  LRRT_THROW(LR_ERROR_NOT_SUPPORTED, "{} ({}) cannot copy from the memory of {} ({})", properties().name,
             properties().backend, src_device.properties().name, src_device.properties().backend);
}

}  // namespace lrrt::rt

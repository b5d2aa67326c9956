// lrrt C++ wrapper: device and pinned host buffers, registered memory, copies.
// One concept of lrrt/lrrt.hpp, the header to include.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "lrrt/c/memory.h"
#include "lrrt/cpp/device.hpp"
#include "lrrt/cpp/error.hpp"

namespace lrrt {

// A device's range (pointer and size) that Release(device, pointer) gives
// back once: the ownership, moves and reset of allocations and registrations.
template <lr_status_t (*Release)(lr_device_t, void*)>
class OwnedRange {
 public:
  OwnedRange() = default;
  ~OwnedRange() { reset(); }
  OwnedRange(OwnedRange&& o) noexcept
      : device_(o.device_), ptr_(std::exchange(o.ptr_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  OwnedRange& operator=(OwnedRange&& o) noexcept {
    if (this != &o) {
      reset();
      device_ = o.device_;
      ptr_ = std::exchange(o.ptr_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  OwnedRange(const OwnedRange&) = delete;
  OwnedRange& operator=(const OwnedRange&) = delete;

  void* data() const { return ptr_; }
  size_t size() const { return size_; }
  Device device() const { return device_; }
  void reset() {
    if (ptr_) (void)Release(device_.get(), std::exchange(ptr_, nullptr));
    size_ = 0;
  }

 protected:
  OwnedRange(Device device, void* ptr, size_t size) : device_(device), ptr_(ptr), size_(size) {}

 private:
  Device device_;
  void* ptr_ = nullptr;
  size_t size_ = 0;
};

// Owns one allocation made by Traits::allocate and released by Traits::release
// (lr_malloc/lr_free or lr_host_malloc/lr_host_free).
template <typename Traits>
class Allocation : public OwnedRange<Traits::release> {
 public:
  Allocation() = default;
  Allocation(Device device, size_t size) : OwnedRange<Traits::release>(device, allocate(device, size), size) {}

  template <typename T>
  T* as() const { return static_cast<T*>(this->data()); }

 private:
  static void* allocate(Device device, size_t size) {
    void* ptr = nullptr;
    check(Traits::allocate(device.get(), size, &ptr), Traits::name);
    return ptr;
  }
};

struct DeviceMemoryTraits {
  static constexpr auto allocate = lr_malloc;
  static constexpr auto release = lr_free;
  static constexpr const char* name = "lr_malloc";
};
struct PinnedHostMemoryTraits {
  static constexpr auto allocate = lr_host_malloc;
  static constexpr auto release = lr_host_free;
  static constexpr const char* name = "lr_host_malloc";
};

// Device memory; as<T>() on it gives a device pointer, not host-readable.
using DeviceBuffer = Allocation<DeviceMemoryTraits>;
// Page-locked host memory the device reaches directly.
using PinnedHostBuffer = Allocation<PinnedHostMemoryTraits>;

// Declares memory lrrt did not allocate to the device's graphs for its
// lifetime (lr_memory_register / lr_memory_unregister); the memory itself
// stays the caller's and must outlive every exec that uses it.
class MemoryRegistration : public OwnedRange<lr_memory_unregister> {
 public:
  MemoryRegistration() = default;
  MemoryRegistration(Device device, void* ptr, size_t size) : OwnedRange(device, registered(device, ptr, size), size) {}

 private:
  static void* registered(Device device, void* ptr, size_t size) {
    check(lr_memory_register(device.get(), ptr, size), "lr_memory_register");
    return ptr;
  }
};

inline void copy_to_device(const DeviceBuffer& dst, const void* src, size_t size) {
  check(lr_memcpy(dst.device().get(), dst.data(), src, size, LR_MEMCPY_HOST_TO_DEVICE), "lr_memcpy H2D");
}
inline void copy_to_host(void* dst, const DeviceBuffer& src, size_t size) {
  check(lr_memcpy(src.device().get(), dst, src.data(), size, LR_MEMCPY_DEVICE_TO_HOST), "lr_memcpy D2H");
}
template <typename T>
void copy_to_device(const DeviceBuffer& dst, const std::vector<T>& src) {
  copy_to_device(dst, src.data(), src.size() * sizeof(T));
}
template <typename T>
void copy_to_host(std::vector<T>& dst, const DeviceBuffer& src) {
  copy_to_host(dst.data(), src, dst.size() * sizeof(T));
}
// Between two devices' buffers (peer access enabled from dst's device to
// src's first): lr_memcpy_peer, waiting for both devices before and the
// copy after.
inline void copy_peer(const DeviceBuffer& dst, const DeviceBuffer& src, size_t size) {
  check(lr_memcpy_peer(dst.device().get(), dst.data(), src.device().get(), src.data(), size), "lr_memcpy_peer");
}

}  // namespace lrrt

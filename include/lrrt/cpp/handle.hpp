// lrrt C++ wrapper: UniqueHandle, the owning building block of the wrappers.
// One concept of lrrt/lrrt.hpp, the header to include.
#pragma once

#include <utility>

#include "lrrt/c/types.h"

namespace lrrt {

// Moves a raw handle and runs `destroy` once; the building block of every
// owning wrapper below.
template <typename Handle, lr_status_t (*Destroy)(Handle*)>
class UniqueHandle {
 public:
  UniqueHandle() = default;
  explicit UniqueHandle(Handle* h) : handle_(h) {}
  ~UniqueHandle() { reset(); }
  UniqueHandle(UniqueHandle&& o) noexcept : handle_(std::exchange(o.handle_, nullptr)) {}
  UniqueHandle& operator=(UniqueHandle&& o) noexcept {
    if (this != &o) {
      reset();
      handle_ = std::exchange(o.handle_, nullptr);
    }
    return *this;
  }
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;
  Handle* get() const { return handle_; }
  void reset() {
    if (handle_) (void)Destroy(std::exchange(handle_, nullptr));
  }

 private:
  Handle* handle_ = nullptr;
};

}  // namespace lrrt

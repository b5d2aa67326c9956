// A CUDA event (blocking-sync, so a wait past the spin sleeps), with a
// second event recorded before the operation it signals, for its duration.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "backend.hpp"

namespace lrrt::rt::cuda {

class CudaDevice;

class CudaEvent final : public Event {
 public:
  explicit CudaEvent(CudaDevice& device);
  ~CudaEvent() override;
  void synchronize() override;
  bool query() override;
  uint64_t elapsed_ns_since(const Event& start) const override;
  uint64_t duration_ns() const override;

  CUevent event() const { return event_; }
  // The event recorded just before the operation this event signals.
  CUevent start_event();
  void set_timed(bool timed) { timed_ = timed; }

 private:
  CudaDevice& device_;
  CUevent event_ = nullptr;
  CUevent start_ = nullptr;
  bool timed_ = false;
};

}  // namespace lrrt::rt::cuda

#include "cuda_event.hpp"

#include <algorithm>
#include <stdexcept>

#include "cuda_device.hpp"

namespace lrrt::rt::cuda {

CudaEvent::CudaEvent(CudaDevice& device) : device_(device) {
  device_.make_current();
  // Blocking-sync: a wait that outlasts the spin sleeps instead of spinning.
  LRRT_CUDA_CHECK(cu(), LR_ERROR_RUNTIME, cuEventCreate(&event_, CU_EVENT_BLOCKING_SYNC));
}

CudaEvent::~CudaEvent() {
  device_.make_current();
  if (event_) cu().cuEventDestroy(event_);
  if (start_) cu().cuEventDestroy(start_);
}

CUevent CudaEvent::start_event() {
  if (!start_) LRRT_CUDA_CHECK(cu(), LR_ERROR_RUNTIME, cuEventCreate(&start_, CU_EVENT_DEFAULT));
  return start_;
}

void CudaEvent::synchronize() {
  device_.make_current();
  CudaWait target(event_, [&] {
    return fmt::format("an event on {} (the last kernel launched there was {})", device_.description(),
                       device_.last_kernel_name());
  });
  if (rt::wait(target) == WaitStatus::Complete) return;
  device_.fail(target.result(), "cuEventSynchronize", "", __FILE__, __LINE__);
}

bool CudaEvent::query() {
  device_.make_current();
  CUresult r = cu().cuEventQuery(event_);
  if (r == CUDA_ERROR_NOT_READY) return false;
  if (r != CUDA_SUCCESS) device_.fail(r, "cuEventQuery", "", __FILE__, __LINE__);
  return true;
}

uint64_t CudaEvent::elapsed_ns_since(const Event& start) const {
  device_.make_current();
  float ms = 0;
  LRRT_CUDA_CHECK_DEVICE(device_, "", cuEventElapsedTime(&ms, static_cast<const CudaEvent&>(start).event_, event_));
  return static_cast<uint64_t>(std::max(0.0, double(ms) * 1e6 + 0.5));
}

uint64_t CudaEvent::duration_ns() const {
  if (!timed_ || !start_)
    throw std::logic_error("the event did not signal a launch or copy since it was last recorded");
  device_.make_current();
  float ms = 0;
  LRRT_CUDA_CHECK_DEVICE(device_, "", cuEventElapsedTime(&ms, start_, event_));
  return static_cast<uint64_t>(std::max(0.0, double(ms) * 1e6 + 0.5));
}

}  // namespace lrrt::rt::cuda

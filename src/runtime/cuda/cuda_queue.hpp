// A queue is a non-blocking CUDA stream. A launch is cuLaunchKernel with the
// caller's packed argument bytes as one buffer (CU_LAUNCH_PARAM_BUFFER_POINTER),
// so a manifest's layout reaches the kernel unchanged.
#pragma once

#include <cuda.h>

#include <array>
#include <atomic>
#include <string>

#include "backend.hpp"

namespace lrrt::rt::cuda {

class CudaDevice;
class CudaEvent;

class CudaQueue final : public Queue {
 public:
  explicit CudaQueue(CudaDevice& device);
  ~CudaQueue() override;
  void launch(Kernel& kernel, const LaunchConfig& config, std::span<const std::byte> args,
              EventList wait_for, Event* signal) override;
  void copy(void* dst, const void* src, size_t size, CopyKind kind, EventList wait_for,
            Event* signal) override;
  void record(Event& event) override;
  void synchronize() override;

  CUstream stream() const { return stream_; }

 private:
  void wait_events(EventList wait_for);
  // Around each launch or copy: the dependencies, then (with a signal) the
  // event that times the operation; after it, the signal itself.
  CudaEvent* begin_operation(EventList wait_for, Event* signal);
  void end_operation(CudaEvent* signal);
  // What was launched since the last successful synchronize, for messages.
  std::string recent_kernels() const;

  CudaDevice& device_;
  CUstream stream_ = nullptr;
  CUevent done_ = nullptr;  // blocking-sync: synchronize() sleeps on it after the spin
  static constexpr size_t kRecent = 8;
  std::array<std::atomic<const std::string*>, kRecent> recent_{};
  std::atomic<uint64_t> launches_since_sync_{0};
};

}  // namespace lrrt::rt::cuda

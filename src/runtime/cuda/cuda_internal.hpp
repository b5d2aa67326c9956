// The cuda backend's classes: one CUDA device = one primary context; queues
// are non-blocking streams; events are CUDA events; modules are CUmodules.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend.hpp"
#include "cuda_symbols.hpp"
#include "wait.hpp"

namespace lrrt::rt::cuda {

class CudaDevice;

class CudaKernel final : public Kernel {
 public:
  CudaKernel(CudaDevice& device, CUfunction function, KernelInfo info)
      : device_(device), function_(function), info_(std::move(info)) {}
  const KernelInfo& info() const override { return info_; }
  CUfunction function() const { return function_; }
  // Raises the kernel's dynamic shared memory limit when a launch asks for
  // more than the default 48 KiB.
  void ensure_dynamic_shared(uint32_t bytes);
  // Bytes of kernel arguments the driver expects (0 when unknown).
  uint32_t param_bytes() const { return info_.has_arg_layout ? info_.explicit_kernarg_size() : 0; }

 private:
  CudaDevice& device_;
  CUfunction function_;
  KernelInfo info_;
  std::atomic<uint32_t> dynamic_shared_limit_{48 * 1024};
  std::mutex mutex_;
};

class CudaModule final : public Module {
 public:
  CudaModule(CudaDevice& device, CUmodule module, std::vector<std::byte> image);
  ~CudaModule() override;
  Kernel& kernel(std::string_view name) override;
  std::vector<std::string> kernel_names() const override;

 private:
  KernelInfo describe(CUfunction function, const std::string& name) const;

  CudaDevice& device_;
  CUmodule module_;
  std::vector<std::byte> image_;
  std::mutex mutex_;
  std::unordered_map<std::string, std::unique_ptr<CudaKernel>> kernels_;
};

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

class CudaDevice final : public Device {
 public:
  CudaDevice(uint32_t ordinal, CUdevice device);
  ~CudaDevice() override;
  const DeviceProperties& properties() const override { return properties_; }

  void* allocate(size_t size) override;
  void free(void* ptr) override;
  std::unique_ptr<Queue> create_queue() override;
  std::unique_ptr<Event> create_event() override;
  std::unique_ptr<Module> load_module(std::span<const std::byte> image) override;
  void copy_sync(void* dst, const void* src, size_t size, CopyKind kind) override;

  // Makes this device's primary context current on the calling thread.
  void make_current() const {
    CUcontext current = nullptr;
    cu().cuCtxGetCurrent(&current);
    if (current != context_) cu().cuCtxSetCurrent(context_);
  }
  uint32_t sm() const { return sm_; }
  uint32_t ordinal() const { return ordinal_; }
  CUdevice handle() const { return device_; }
  // "device 0 (NVIDIA H200, sm_90)"
  const std::string& description() const { return description_; }

  // Fault bookkeeping: the last kernel launched on any queue, and the first
  // sticky error, after which the context is unusable.
  void note_launch(const std::string* name) { last_kernel_.store(name, std::memory_order_relaxed); }
  std::string last_kernel_name() const;
  // Throws for a failed CUresult; sticky faults become KERNEL_FAULT the first
  // time (naming `kernels` or the last launched kernel) and DEVICE_LOST after.
  [[noreturn]] void fail(CUresult result, std::string_view what, const std::string& kernels,
                         const char* file, int line);
  template <typename Kernels>
  void synchronize_stream(CUstream stream, CUevent done, std::string_view what, Kernels&& kernels);

 protected:
  void* do_allocate_host(size_t size) override;
  void do_free_host(void* ptr) override;

 private:
  uint32_t ordinal_;
  CUdevice device_;
  CUcontext context_ = nullptr;
  uint32_t sm_ = 0;
  std::string description_;
  DeviceProperties properties_;
  CUstream copy_stream_ = nullptr;  // copy_sync's copies, all directions
  CUevent copy_stream_done_ = nullptr;

  std::atomic<const std::string*> last_kernel_{nullptr};
  std::mutex fault_mutex_;
  std::string first_fault_;
};

// A stream or an event as rt::wait sees it. CUDA blocks only without a time
// limit: cuEventSynchronize on a blocking-sync event sleeps in the driver until
// the GPU signals (no CPU burnt on long work, unlike the driver's default
// wait, which spins for as long as it takes); with a timeout set, rt::wait
// naps and polls instead.
template <typename Describe>
class CudaWait final : public Waitable {
 public:
  // Everything on `stream`; `done`, a blocking-sync event of the caller's, is
  // recorded on it only when the wait goes on past the spin.
  CudaWait(CUstream stream, CUevent done, Describe describe)
      : stream_(stream), event_(done), describe_(std::move(describe)) {}
  // One event (created blocking-sync).
  CudaWait(CUevent event, Describe describe) : event_(event), describe_(std::move(describe)) {}

  WaitStatus poll() override {
    result_ = stream_ ? cu().cuStreamQuery(stream_) : cu().cuEventQuery(event_);
    return status();
  }
  WaitStatus block(std::chrono::nanoseconds) override {
    result_ = stream_ ? cu().cuEventRecord(event_, stream_) : CUDA_SUCCESS;
    if (result_ == CUDA_SUCCESS) result_ = cu().cuEventSynchronize(event_);
    return status();
  }
  Blocking blocking() const override { return Blocking::Unbounded; }
  std::string describe() const override { return describe_(); }
  // The last CUresult: the failure when wait() returned Failed.
  CUresult result() const { return result_; }

 private:
  WaitStatus status() const {
    if (result_ == CUDA_SUCCESS) return WaitStatus::Complete;
    return result_ == CUDA_ERROR_NOT_READY ? WaitStatus::Pending : WaitStatus::Failed;
  }
  CUstream stream_ = nullptr;
  CUevent event_;
  Describe describe_;
  CUresult result_ = CUDA_SUCCESS;
};

template <typename Kernels>
void CudaDevice::synchronize_stream(CUstream stream, CUevent done, std::string_view what, Kernels&& kernels) {
  CudaWait target(stream, done, [&] {
    const std::string names = kernels();
    return fmt::format("{} on {}{}", what, description_, names.empty() ? "" : ", running kernel " + names);
  });
  if (rt::wait(target) == WaitStatus::Complete) return;
  fail(target.result(), "waiting for a stream (cuStreamQuery/cuEventSynchronize)", kernels(), __FILE__, __LINE__);
}

}  // namespace lrrt::rt::cuda

#define LRRT_CU_DEVICE(device, call, what, kernels)                       \
  do {                                                                    \
    CUresult lrrt_cu_result_ = (call);                                    \
    if (lrrt_cu_result_ != CUDA_SUCCESS)                                  \
      (device).fail(lrrt_cu_result_, (what), (kernels), __FILE__, __LINE__); \
  } while (0)

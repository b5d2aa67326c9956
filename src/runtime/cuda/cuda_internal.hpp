// The cuda backend's classes: one CUDA device = one primary context; queues
// are non-blocking streams; events are CUDA events; modules are CUmodules.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <thread>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend.hpp"
#include "cuda_symbols.hpp"

namespace lrrt::rt {
// Longest a synchronizing call waits (LRRT_WAIT_TIMEOUT_MS); 0 = forever.
std::chrono::milliseconds wait_timeout();
// How long a wait polls before it blocks (lr_set_wait_spin_us).
std::chrono::microseconds wait_spin();
}  // namespace lrrt::rt

namespace lrrt::rt::cuda {

class CudaDevice;

// Sets the calling thread's timer slack (ns) for its lifetime, then restores
// it: sleeps of tens of microseconds otherwise overshoot by ~50 us.
class TimerSlack {
 public:
  explicit TimerSlack(unsigned long ns);
  ~TimerSlack();
  TimerSlack(const TimerSlack&) = delete;
  TimerSlack& operator=(const TimerSlack&) = delete;

 private:
  long saved_ = -1;
};

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
  void* allocate_host(size_t size) override;
  void free_host(void* ptr) override;
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
  // Waits for a stream or event by polling (honours LRRT_WAIT_TIMEOUT_MS);
  // returns the final CUresult.
  template <typename Query, typename Block>
  CUresult wait(Query&& query, Block&& block) const;
  // Waits for everything on `stream`: a timeout throws LR_ERROR_TIMEOUT
  // describing `what`, a failure goes to fail() naming kernels(). kernels is
  // called only on those paths: building names stays off the wait's hot path.
  // `done` is a blocking-sync event of the caller's (recorded on `stream`
  // only when the wait goes on past the spin).
  template <typename Kernels>
  void synchronize_stream(CUstream stream, CUevent done, std::string_view what, Kernels&& kernels);

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

// Polls `query` for the spin window (lr_set_wait_spin_us, default 2 ms):
// short work is seen as soon as it ends, as a spinning wait would. Then, with
// no timeout set, returns `block()`, which sleeps in the driver until the GPU
// signals (blocking-sync events: no CPU burnt on long work, unlike the
// driver's default wait, which spins for as long as it takes). CUDA has no
// blocking wait with a timeout, so with one set it polls with sleeps that grow
// with the time waited (a twentieth of it, 10 us to 500 us: late by at most
// ~5%, a query per 100+ us after the first milliseconds) and returns
// CUDA_ERROR_NOT_READY when the timeout passes.
template <typename Query, typename Block>
CUresult CudaDevice::wait(Query&& query, Block&& block) const {
  using clock = std::chrono::steady_clock;
  const auto timeout = wait_timeout();
  const auto spin = wait_spin();
  const auto start = clock::now();
  for (uint32_t i = 1;; ++i) {
    CUresult r = query();
    if (r != CUDA_ERROR_NOT_READY) return r;
    if (spin.count() && i % 32 != 0) continue;  // the clock is read every 32 polls
    auto elapsed = clock::now() - start;
    if (elapsed < spin) continue;
    if (timeout.count() == 0) return block();
    break;
  }
  // Short sleeps need a small timer slack (50 us by default), restored after.
  TimerSlack precise(1000);
  for (;;) {
    auto elapsed = clock::now() - start;
    if (elapsed >= timeout) return CUDA_ERROR_NOT_READY;
    auto nap = std::clamp<clock::duration>(elapsed / 20, std::chrono::microseconds(10),
                                           std::chrono::microseconds(500));
    std::this_thread::sleep_for(nap);
    CUresult r = query();
    if (r != CUDA_ERROR_NOT_READY) return r;
  }
}

template <typename Kernels>
void CudaDevice::synchronize_stream(CUstream stream, CUevent done, std::string_view what, Kernels&& kernels) {
  const CudaSymbols& s = cu();
  CUresult r = wait([&] { return s.cuStreamQuery(stream); },
                    [&] {
                      CUresult rec = s.cuEventRecord(done, stream);
                      return rec == CUDA_SUCCESS ? s.cuEventSynchronize(done) : rec;
                    });
  if (r == CUDA_SUCCESS) return;
  const std::string names = kernels();
  if (r == CUDA_ERROR_NOT_READY)
    LRRT_THROW_AT(LR_ERROR_TIMEOUT, "{} on {} did not finish within {} ms (LRRT_WAIT_TIMEOUT_MS){}", what,
                  description_, wait_timeout().count(), names.empty() ? "" : "; it runs kernel " + names);
  fail(r, "waiting for a stream (cuStreamQuery/cuEventSynchronize)", names, __FILE__, __LINE__);
}

}  // namespace lrrt::rt::cuda

#define LRRT_CU_DEVICE(device, call, what, kernels)                       \
  do {                                                                    \
    CUresult lrrt_cu_result_ = (call);                                    \
    if (lrrt_cu_result_ != CUDA_SUCCESS)                                  \
      (device).fail(lrrt_cu_result_, (what), (kernels), __FILE__, __LINE__); \
  } while (0)

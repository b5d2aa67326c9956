// The hsa backend's classes (private to src/runtime/hsa).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend.hpp"
#include "code_object.hpp"
#include "error.hpp"
#include "hsa_api.hpp"

namespace lrrt::rt::hsa {

// The loaded library and the agents; shared by the backend and its devices so
// hsa_shut_down runs after the last device is gone.
struct Context {
  Api api;
  bool initialized = false;
  uint64_t timestamp_frequency = 1'000'000'000;  // ticks per second
  hsa_agent_t cpu_agent{0};
  std::vector<hsa_agent_t> gpu_agents;
  std::string version;
  ~Context();
};

class HsaDevice;

// A pooled signal owned through shared_ptr: events re-armed while an older
// operation still references the old signal keep both valid.
struct Signal {
  HsaDevice* device;
  hsa_signal_t handle;
  ~Signal();
};
using SignalRef = std::shared_ptr<Signal>;

// Set by the queue error callback (ROCr's thread), read by waiters.
struct QueueErrorState {
  std::atomic<bool> failed{false};
  std::atomic<int> status{0};
};

// Waits until the signal drops below 1 (rt::wait: spin, then block in slices
// so that a failure of `error`'s queue is noticed; then returns, and the
// caller reports it). `what` names the operation in a timeout message.
void wait_signal(const Context& ctx, hsa_signal_t signal, const QueueErrorState* error,
                 const std::string& what);

class HsaEvent final : public Event {
 public:
  enum class Kind { None, Marker, Dispatch, Copy };
  explicit HsaEvent(HsaDevice& device) : device_(device) {}
  void synchronize() override;
  bool query() override;
  uint64_t elapsed_ns_since(const Event& start) const override;
  uint64_t duration_ns() const override;

  // Gives the event a fresh signal (value 1) for the operation about to be
  // submitted and returns it.
  hsa_signal_t arm(Kind kind, hsa_queue_t* queue, std::shared_ptr<QueueErrorState> error,
                   std::string what);
  // The signal the event completes with; null handle when never armed.
  hsa_signal_t signal() const { return sig_ ? sig_->handle : hsa_signal_t{0}; }
  SignalRef signal_ref() const { return sig_; }

 private:
  uint64_t end_ticks() const;
  HsaDevice& device_;
  SignalRef sig_;
  Kind kind_ = Kind::None;
  hsa_queue_t* queue_ = nullptr;
  std::shared_ptr<QueueErrorState> error_;
  std::string what_;
 public:
  std::vector<SignalRef> keep_;  // dependencies of its marker barrier
};

struct HsaKernel final : public Kernel {
  KernelInfo info_;
  uint64_t kernel_object = 0;
  uint32_t kernarg_size = 0;  // what the loader reports (>= metadata)
  uint32_t group_segment_size = 0;
  uint32_t private_segment_size = 0;
  const KernelInfo& info() const override { return info_; }
};

class HsaModule final : public Module {
 public:
  HsaModule(HsaDevice& device, std::span<const std::byte> image);
  ~HsaModule() override;
  Kernel& kernel(std::string_view name) override;
  std::vector<std::string> kernel_names() const override;

 private:
  HsaDevice& device_;
  std::vector<std::byte> image_;
  hsa_code_object_reader_t reader_{0};
  hsa_executable_t executable_{0};
  std::vector<std::unique_ptr<HsaKernel>> kernels_;
};

class HsaQueue final : public Queue {
 public:
  explicit HsaQueue(HsaDevice& device);
  ~HsaQueue() override;
  void launch(Kernel& kernel, const LaunchConfig& config, std::span<const std::byte> args,
              EventList wait_for, Event* signal) override;
  void copy(void* dst, const void* src, size_t size, CopyKind kind, EventList wait_for,
            Event* signal) override;
  void record(Event& event) override;
  void synchronize() override;

 private:
  struct Slot {
    std::byte* kernarg = nullptr;
    size_t capacity = 0;
    hsa_signal_t own{0};
    SignalRef event_signal;  // when the dispatch completes an event instead
    // A copy of the name, not a pointer: the kernel's module may be destroyed
    // while the slot still remembers its last dispatch.
    std::string kernel_name;
    bool busy = false;
    // Dependency signals the dispatch's barriers wait on: kept out of the
    // signal pool until the dispatch completed.
    std::vector<SignalRef> keep;
    // A copy that waits on `own`: `own` is not reset before that copy
    // completed (it may not have seen the 0 yet).
    SignalRef copy_waiter;
  };
  struct PendingCopy {
    SignalRef signal;
    void* staging = nullptr;
    std::vector<SignalRef> keep;  // its dependency signals
  };

  void create_hsa_queue();
  void destroy_hsa_queue();
  bool slot_done(const Slot& s) const;
  Slot& acquire_slot(size_t kernarg_bytes);
  // Reserves a packet slot, waiting while the ring is full.
  void* reserve_packet(uint64_t* index);
  void ring_doorbell(uint64_t index);
  // Emits barrier-AND packets so later packets wait for these signals.
  void emit_barriers(std::vector<hsa_signal_t>& deps, hsa_signal_t last_completion);
  void collect_waits(EventList wait_for, std::vector<hsa_signal_t>& deps,
                     std::vector<SignalRef>& keep);
  void reap_copies();
  void throw_if_failed();

  HsaDevice& device_;
  const Context& ctx_;
  const Api& api_;
  std::mutex mutex_;
  hsa_queue_t* queue_ = nullptr;
  std::shared_ptr<QueueErrorState> error_;
  std::vector<Slot> slots_;
  size_t next_slot_ = 0;
  hsa_signal_t last_signal_{0};  // completion of the last AQL packet
  Slot* last_slot_ = nullptr;    // its slot when it was a dispatch on `own`
  SignalRef last_ref_;           // keeps last_signal_ alive when pooled
  std::vector<PendingCopy> copies_;
  hsa_signal_t barrier_signal_{0};  // completion of dependency barriers
};

class HsaDevice final : public Device {
 public:
  HsaDevice(std::shared_ptr<Context> ctx, hsa_agent_t agent, uint32_t ordinal);
  ~HsaDevice() override;
  const DeviceProperties& properties() const override { return props_; }
  void* allocate(size_t size) override;
  void free(void* ptr) override;
  std::unique_ptr<Queue> create_queue() override;
  std::unique_ptr<Event> create_event() override;
  std::unique_ptr<Module> load_module(std::span<const std::byte> image) override;

  const Context& context() const { return *ctx_; }
  const Api& api() const { return ctx_->api; }
  hsa_agent_t agent() const { return agent_; }
  const amdgpu::TargetId& target() const { return target_; }
  uint32_t queue_size() const { return queue_size_; }

  SignalRef acquire_signal();  // value 1
  void release_signal(hsa_signal_t s);
  void* allocate_kernarg(size_t size);
  void free_kernarg(void* p);
  // Pinned staging memory for copies from/to pageable host memory.
  void* allocate_staging(size_t size);
  void free_staging(void* p);

 protected:
  void* do_allocate_host(size_t size) override;
  void do_free_host(void* ptr) override;

 private:
  std::shared_ptr<Context> ctx_;
  hsa_agent_t agent_;
  DeviceProperties props_;
  amdgpu::TargetId target_;
  uint32_t queue_size_ = 4096;
  hsa_amd_memory_pool_t device_pool_{0};
  hsa_amd_memory_pool_t host_pool_{0};
  hsa_amd_memory_pool_t kernarg_pool_{0};
  mutable std::mutex mutex_;
  std::vector<hsa_signal_t> free_signals_;
};

}  // namespace lrrt::rt::hsa

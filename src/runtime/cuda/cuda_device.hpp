// One CUDA device as an lrrt device: its primary context, properties,
// memory, blocking copies, and the fault bookkeeping every object of the
// device reports through (a sticky fault makes the context unusable).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "backend.hpp"
#include "cuda_status.hpp"
#include "wait.hpp"

namespace lrrt::rt::cuda {

// LRRT_CUDA_SYNC: how a queue's synchronize() notices the end of its work.
// Both modes with a word sleep on a blocking-sync event past the spin.
enum class SyncMode {
  Query,  // unset, empty or "query": poll cuStreamQuery
  Flag,   // "flag": synchronize() has the stream write a ticket into pinned
          // host memory and spins on that word (no driver call per poll)
  Launch  // "launch": as flag, and each plain launch writes its own ticket
          // (cuda_ticketed_launch.hpp): a synchronize right after a launch
          // submits nothing
};
// Read once, when a device opens. Anything else throws
// LR_ERROR_INVALID_ARGUMENT naming the variable and the value.
SyncMode sync_mode(const char* setting);

class CudaDevice final : public Device {
 public:
  CudaDevice(uint32_t ordinal, CUdevice device);
  ~CudaDevice() override;
  const DeviceProperties& properties() const override { return properties_; }
  MemoryInfo memory_info() override { return memory_info_; }

  void* allocate(size_t size) override;
  void free(void* ptr) override;
  std::unique_ptr<Queue> create_queue() override;
  std::unique_ptr<Event> create_event() override;
  std::unique_ptr<Module> load_module(std::span<const std::byte> image) override;
  void copy_sync(void* dst, const void* src, size_t size, CopyKind kind) override;
  // A CUDA graph built from the derived edges (cuda_graph.hpp); the generic
  // replay when the driver lacks the graph entry points.
  std::unique_ptr<graph::GraphExec> instantiate_graph(const graph::Lowering& lowering) override;
  // Peer access between CUDA devices: cuDeviceCanAccessPeer,
  // cuCtxEnablePeerAccess, cuMemcpyPeerAsync (not run on several GPUs yet).
  bool can_access_peer(const Device& peer) const override;
  void enable_peer_access(Device& peer) override;
  void copy_from_peer(Queue& queue, void* dst, Device& src_device, const void* src, size_t size, EventList wait_for,
                      Event* signal) override;
  // cuTensorMapEncodeTiled (CUDA 12.0+ drivers), sm_90+ only.
  void encode_tensor_map(const lr_tensor_map_desc_t& desc, void* out128) override;

  // Makes this device's primary context current on the calling thread.
  void make_current() const {
    CUcontext current = nullptr;
    cu().cuCtxGetCurrent(&current);
    if (current != context_) cu().cuCtxSetCurrent(context_);
  }
  uint32_t sm() const { return sm_; }
  // Programmatic dependent launch for LR_KERNEL_WAITS_FOR_PRODUCER kernels:
  // sm_90+, unless LRRT_CUDA_PDL=0 (read when the device opens).
  bool programmatic_launch() const { return pdl_; }
  uint32_t ordinal() const { return ordinal_; }
  CUdevice handle() const { return device_; }
  CUcontext context() const { return context_; }
  // "device 0 (NVIDIA H200, sm_90)"
  const std::string& description() const { return description_; }

  // Fault bookkeeping: the last kernel launched on any queue, and the first
  // sticky error, after which the context is unusable.
  void note_launch(const std::string* name) { last_kernel_.store(name, std::memory_order_relaxed); }
  // Counts module unloads, so that a queue's TicketedLaunch, whose exec still
  // names the last kernel it ran, is remade rather than re-pointed from a
  // function whose module is gone (the driver documents no such update).
  void note_module_unload() { modules_unloaded_.fetch_add(1, std::memory_order_acq_rel); }
  uint64_t modules_unloaded() const { return modules_unloaded_.load(std::memory_order_acquire); }
  std::string last_kernel_name() const;
  // Throws for a failed CUresult; sticky faults become KERNEL_FAULT the first
  // time (naming `kernels` or the last launched kernel) and DEVICE_LOST after.
  [[noreturn]] void fail(CUresult result, std::string_view what, const std::string& kernels,
                         const char* file, int line);
  // Waits for everything on `stream` (rt::wait): a timeout throws
  // LR_ERROR_TIMEOUT describing `what`, a failure goes to fail() naming
  // kernels(). kernels is called only on those paths: building names stays
  // off the wait's hot path. `done` is a blocking-sync event of the caller's
  // (recorded on `stream` only when the wait goes on past the spin).
  template <typename Kernels>
  void synchronize_stream(CUstream stream, CUevent done, std::string_view what, Kernels&& kernels);

  // The LRRT_CUDA_SYNC in effect: Query when the words could not be pinned,
  // Flag when launches cannot carry their ticket (no batch-memop graph node).
  SyncMode sync_mode() const { return sync_mode_; }
  // LRRT_CUDA_SYNC=flag or launch: a queue's completion word (cuda_queue.hpp), a cache
  // line of host memory pinned when the device opened. Pinning later
  // (cuMemHostAlloc, cuMemFreeHost) waits for the whole device: a queue made
  // or destroyed while a kernel waits on the host would hang, and did
  // (cts threads, H100). `host` is null when the mode is off or every word is
  // taken: that queue polls its stream instead.
  struct SyncWord {
    uint32_t* host = nullptr;
    CUdeviceptr device = 0;
    // The last ticket any owner wrote: the next owner's tickets go on from
    // it, so a late write of an earlier owner never completes a new wait.
    uint32_t last_ticket = 0;
  };
  SyncWord acquire_sync_word();
  // Back to the pool, with the owner's last ticket in `last_ticket`.
  void release_sync_word(const SyncWord& word);

 protected:
  void* do_allocate_host(size_t size) override;
  void do_free_host(void* ptr) override;

 private:
  MemoryInfo memory_info_;
  uint32_t ordinal_;
  CUdevice device_;
  CUcontext context_ = nullptr;
  uint32_t sm_ = 0;
  bool pdl_ = false;
  SyncMode sync_mode_ = SyncMode::Query;
  std::string description_;
  DeviceProperties properties_;
  CUstream copy_stream_ = nullptr;  // copy_sync's copies, all directions
  CUevent copy_stream_done_ = nullptr;

  struct FreePinned {
    void operator()(std::byte* p) const { cu().cuMemFreeHost(p); }
  };
  std::unique_ptr<std::byte, FreePinned> sync_words_page_;  // LRRT_CUDA_SYNC=flag or launch only
  std::mutex sync_words_mutex_;
  std::vector<SyncWord> free_sync_words_;  // under sync_words_mutex_

  std::atomic<const std::string*> last_kernel_{nullptr};
  std::atomic<uint64_t> modules_unloaded_{0};
  std::mutex fault_mutex_;
  std::string first_fault_;
};

// A query's or a synchronize's result as rt::wait sees it.
inline WaitStatus cu_wait_status(CUresult r) {
  if (r == CUDA_SUCCESS) return WaitStatus::Complete;
  return r == CUDA_ERROR_NOT_READY ? WaitStatus::Pending : WaitStatus::Failed;
}

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
  WaitStatus status() const { return cu_wait_status(result_); }
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

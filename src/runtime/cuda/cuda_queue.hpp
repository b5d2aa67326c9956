// A queue is a non-blocking CUDA stream. A launch is cuLaunchKernel with the
// caller's packed argument bytes as one buffer (CU_LAUNCH_PARAM_BUFFER_POINTER),
// so a manifest's layout reaches the kernel unchanged.
#pragma once

#include <cuda.h>

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "backend.hpp"
#include "cuda_device.hpp"
#include "cuda_ticketed_launch.hpp"

namespace lrrt::rt::cuda {

class CudaDevice;
class CudaEvent;
class CudaQueue;

// A graph replay's completion, recorded lazily (cuda_graph.cpp): a replay
// adds nothing to its stream but the cuGraphLaunch, as a native graph's
// does. (An event per replay, as a node of the graph or recorded after it,
// made a one-kernel replay cost 2x the native graph on the H200: a
// blocking-sync event's record is that expensive; a spinning event's still
// cost 1.2x.) While `pending_on` names a queue, nothing was submitted to
// that queue's stream after the replay, so the stream's state is the
// replay's: a wait polls the stream, and records the event only before it
// blocks; the queue records it before it submits anything else.
struct CompletionMarker {
  std::mutex mutex;
  CUevent event = nullptr;          // blocking-sync, owned by the exec
  CudaQueue* pending_on = nullptr;  // under mutex
  // Under mutex: records the event on the stream of the queue it is pending
  // on (nothing else was submitted there since), and clears pending_on.
  CUresult record_locked();
};

class CudaQueue final : public Queue {
 public:
  explicit CudaQueue(CudaDevice& device);
  ~CudaQueue() override;
  void launch(Kernel& kernel, const LaunchConfig& config, std::span<const std::byte> args,
              EventList wait_for, Event* signal) override;
  void copy(void* dst, const void* src, size_t size, CopyKind kind, EventList wait_for,
            Event* signal) override;
  // A copy from another device's memory (cuMemcpyPeerAsync), as copy().
  void copy_peer(void* dst, CUcontext dst_context, const void* src, CUcontext src_context, size_t size,
                 EventList wait_for, Event* signal);
  void record(Event& event) override;
  void synchronize() override;

  CUstream stream() const { return stream_; }

  // Every submission to the stream holds this lock, taken by
  // begin_submission(), which first records a pending completion marker
  // (unless it is `keep`, the caller's own): so a marker is recorded before
  // any later work on its stream. The caller submits: the stream's last
  // ticket no longer covers its work.
  [[nodiscard]] std::unique_lock<std::mutex> begin_submission(const CompletionMarker* keep = nullptr);
  // After a replay was launched under begin_submission(): its marker is
  // pending on this queue.
  void defer_marker(const std::shared_ptr<CompletionMarker>& marker);

 private:
  // Under submit_mutex_: records a pending marker other than `keep`.
  void record_pending_marker(const CompletionMarker* keep);
  // Under submit_mutex_, right after begin_submission(): nothing was
  // submitted since the last ticket and the stream has written it.
  bool stream_was_idle() const;
  void wait_events(EventList wait_for);
  // Around each launch or copy: the dependencies, then (with a signal) the
  // event that times the operation; after it, the signal itself.
  CudaEvent* begin_operation(EventList wait_for, Event* signal);
  void end_operation(CudaEvent* signal);
  // What was launched since the last successful synchronize, for messages.
  std::string recent_kernels() const;

  CudaDevice& device_;
  std::mutex submit_mutex_;
  std::shared_ptr<CompletionMarker> pending_;  // under submit_mutex_
  CUstream stream_ = nullptr;
  CUevent done_ = nullptr;  // blocking-sync: synchronize() sleeps on it after the spin
  // LRRT_CUDA_SYNC=flag or launch: synchronize() has the stream write a
  // ticket into this pinned word of the device's (cuStreamWriteValue32)
  // unless the last ticket already follows all the stream's work, and spins
  // on the word, not on cuStreamQuery; past the spin it sleeps on done_ as
  // before. host null: off. last_ticket under submit_mutex_.
  CudaDevice::SyncWord sync_word_;
  // Under submit_mutex_: nothing was submitted after the write of
  // sync_word_.last_ticket (a ticketed launch's or synchronize's).
  bool ticket_is_last_ = false;
  // ticket_is_last_ as begin_submission() found it, before it cleared it.
  bool ticket_was_last_ = false;
  // LRRT_CUDA_SYNC=launch: a plain launch (no signal to time it, not
  // programmatic) onto an idle stream is a TicketedLaunch writing the next
  // ticket. Under submit_mutex_; null in the other modes.
  std::unique_ptr<TicketedLaunch> ticketed_;
  // device_.modules_unloaded() when ticketed_ last launched: after an unload
  // its exec is remade. Under submit_mutex_.
  uint64_t ticketed_unloads_seen_ = 0;
  static constexpr size_t kRecent = 8;
  std::array<std::atomic<const std::string*>, kRecent> recent_{};
  std::atomic<uint64_t> launches_since_sync_{0};
};

}  // namespace lrrt::rt::cuda

// An HSA AQL queue: dispatch and barrier-AND packets, async copies ordered
// around them with dependency signals, kernarg buffers recycled once their
// dispatch completed, queue errors reported at the next synchronize.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hsa_event.hpp"

namespace lrrt::rt::hsa {

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
  // A recorded marker's completion signal and the signals its barrier waits
  // on. The queue, not the event, keeps them out of the signal pool until the
  // barrier packet completed: re-recording the event meanwhile must not hand
  // the still-queued packet's signal to the next operation.
  struct PendingMarker {
    SignalRef signal;
    std::vector<SignalRef> keep;
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
  // Forgets copies and markers that completed (frees their staging memory
  // and returns their signals to the pool).
  void reap_completed();
  void throw_if_failed();

  HsaDevice& device_;
  const Context& ctx_;
  const HsaSymbols& api_;
  std::mutex mutex_;
  hsa_queue_t* queue_ = nullptr;
  std::shared_ptr<QueueErrorState> error_;
  std::vector<Slot> slots_;
  size_t next_slot_ = 0;
  hsa_signal_t last_signal_{0};  // completion of the last AQL packet
  Slot* last_slot_ = nullptr;    // its slot when it was a dispatch on `own`
  SignalRef last_ref_;           // keeps last_signal_ alive when pooled
  std::vector<PendingCopy> copies_;
  std::vector<PendingMarker> markers_;
  hsa_signal_t barrier_signal_{0};  // completion of dependency barriers
};

}  // namespace lrrt::rt::hsa

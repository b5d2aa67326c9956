// An HSA AQL queue: dispatch and barrier-AND packets, async copies ordered
// around them with dependency signals, kernarg buffers recycled once their
// dispatch completed, queue errors reported at the next synchronize.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "hsa_event.hpp"
#include "printf_buffer.hpp"

namespace lrrt::rt::hsa {

struct HsaKernel;

// What every dispatch of `kernel` with `config` must satisfy on this device
// (workgroup and grid sizes, LDS); throws LR_ERROR_INVALID_ARGUMENT naming
// the kernel. Returns the group segment size the packet carries. Shared by
// HsaQueue::launch and the graph lowering (hsa_graph.cpp).
uint32_t check_dispatch(const HsaKernel& kernel, const LaunchConfig& config, const DeviceProperties& props);

// Waits until the packet at write index `last_index` fits in the ring (the
// packet processor consumed enough); a queue error ends the wait early.
void wait_ring_space(const HsaSymbols& api, hsa_queue_t* queue, uint64_t last_index, const QueueErrorState& error);

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

  // Retained replay (hsa_graph.cpp) writes its packet block for this queue
  // straight into the ring. Under the queue's lock, after an earlier queue
  // error is reported: `write` gets the ring, the queue's error state and
  // the signals of its copies still pending (the block's first barrier-AND
  // waits for them: the replay follows them) and returns the signal the
  // block's last packet completes. Later copies and markers of this queue
  // wait for that signal; later dispatches follow through their barrier bit.
  // `packets` names the block's packets from write index `start` (after
  // `joins` join packets), so that a failure of this queue inside the block
  // names the replay's kernel.
  struct Block {
    SignalRef done;
    uint64_t start = 0;
    uint32_t joins = 0;
    std::shared_ptr<const std::vector<std::string>> packets;  // "node 2 (kernel 'k')", "" for a barrier-AND
  };
  using BlockWriter = std::function<Block(hsa_queue_t* ring, const std::shared_ptr<QueueErrorState>& error,
                                          std::span<const SignalRef> pending_copies)>;
  void submit_block(const BlockWriter& write);

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
  // A failed queue is kept (not destroyed) until this queue goes: a graph
  // exec may still read the read index of its replays' blocks on it.
  void retire_hsa_queue();
  void destroy_hsa_queue();
  // The replay block (submit_block) holding the packet the queue stopped
  // at, described; empty when none does.
  std::string failed_replay_packet() const;
  bool slot_done(const Slot& s) const;
  Slot& acquire_slot(size_t kernarg_bytes);
  // Waits until `count` more packets fit in the ring (throws on a timeout or
  // a queue error); call before the first packet of an operation, and before
  // anything that cannot be undone.
  void wait_for_packets(size_t count);
  // Takes the next packet slot; wait_for_packets made room for it.
  void* reserve_packet(uint64_t* index);
  static size_t barrier_packets(size_t deps);
  // A zero-byte copy: no copy-engine operation (docs/backends/hsa.md).
  void copy_nothing(std::vector<hsa_signal_t>& deps, std::vector<SignalRef> keep, bool waits_for_events,
                    Event* signal);
  void ring_doorbell(uint64_t index);
  // Emits barrier-AND packets so later packets wait for these signals.
  void emit_barriers(std::vector<hsa_signal_t>& deps, hsa_signal_t last_completion);
  void collect_waits(EventList wait_for, std::vector<hsa_signal_t>& deps,
                     std::vector<SignalRef>& keep);
  // Forgets copies and markers that completed (frees their staging memory
  // and returns their signals to the pool).
  void reap_completed();
  void throw_if_failed();
  // The printf buffer's address for a dispatch of `kernel` (an OpenCL kernel
  // that prints); first waits for the queue and prints pending records when
  // they need another code object's format table.
  uint64_t attach_printf(const HsaKernel& kernel);

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
  std::vector<Block> blocks_;  // replay blocks not known to be complete
  std::vector<hsa_queue_t*> retired_;
  std::vector<SignalRef> pending_scratch_;
  hsa_signal_t barrier_signal_{0};  // completion of dependency barriers
  std::unique_ptr<PrintfBuffer> printf_;  // at the first printing kernel
};

}  // namespace lrrt::rt::hsa

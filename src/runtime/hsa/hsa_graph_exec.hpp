// Private to hsa_graph*.cpp: the hsa lowering's exec (HsaGraphExec) and what
// it is made of: lanes, packet images, copy-engine operations, dispatches,
// replay sets, the lane failure hand-off, and the wait on a replay
// (ReplayWait). hsa_graph.cpp builds an exec and its replay sets,
// hsa_graph_launch.cpp launches, waits and abandons replays,
// hsa_graph_diagnostics.cpp describes pending work and the plan.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "aql.hpp"
#include "graph/aql_plan.hpp"
#include "graph/exec.hpp"
#include "hsa_device.hpp"
#include "hsa_queue.hpp"
#include "printf_buffer.hpp"
#include "wait.hpp"

namespace lrrt::rt::hsa::replay {

using graph::AqlPacket;
using graph::NodeKind;

// Largest pinned block a fill copies from; bigger fills copy it repeatedly.
constexpr size_t kFillBlockBytes = size_t(1) << 20;
constexpr size_t kKernargAlign = 64;

inline hsa_fence_scope_t fence(graph::FenceScope s) { return hsa_fence_scope_t(uint8_t(s)); }

class HsaGraphExec;

// The launch queue of the replays in flight, for the lanes' error callbacks
// (ROCr's threads): a lane's failure fails that queue too.
class LaneFailures {
 public:
  void set_launch_queue(std::shared_ptr<QueueErrorState> launch) {
    std::lock_guard lock(mutex_);
    launch_ = std::move(launch);
  }
  void failed(int status, std::string cause) {
    std::lock_guard lock(mutex_);
    if (launch_) launch_->fail_from(status, std::move(cause));
  }

 private:
  std::mutex mutex_;
  std::shared_ptr<QueueErrorState> launch_;
};

// A lane queue's error callback data.
struct LaneCallback {
  HsaGraphExec* exec = nullptr;
  uint32_t lane = 0;
};
void lane_error_callback(hsa_status_t status, hsa_queue_t*, void* data);

// One packet as it is copied into a ring slot: the body (bytes 4..63) and
// the header word published last.
struct Image {
  alignas(64) std::array<std::byte, kAqlPacketBytes> bytes{};
  uint16_t header = 0;
  uint16_t setup = 0;
};

struct Lane {
  std::vector<int64_t> nodes;  // per packet: the dispatch's node, -1 for a barrier-AND
  hsa_queue_t* queue = nullptr;  // lanes 1..: owned; lane 0: the launch queue's ring, at the last launch
  std::shared_ptr<QueueErrorState> error;
  LaneCallback callback;  // lanes 1..
};

// A copy or fill on the copy engine.
struct EngineOp {
  struct Chunk {
    void* dst;
    const void* src;
    size_t size;
  };
  uint32_t node = 0;
  std::string name;
  std::vector<Chunk> chunks;  // a fill larger than its block copies it several times
  hsa_agent_t dst_agent{0}, src_agent{0};
  std::vector<uint32_t> waits;  // plan signal indices
  uint32_t completion = 0;      // plan signal index
  // Pageable host memory goes through pinned staging (one block per replay
  // set): the source is read when the replay is launched, the destination
  // written before launch returns.
  const void* stage_in = nullptr;
  void* stage_out = nullptr;
  size_t size = 0;
};

// A dispatch as every replay set encodes it (the recording is gone after
// instantiation).
struct DispatchInfo {
  uint64_t kernel_object = 0;
  LaunchConfig config;
  size_t offset = 0;  // of its kernarg slice in a set's segment
  size_t explicit_bytes = 0;
  uint32_t group = 0;
  uint32_t private_size = 0;
  bool valid = false;
};

// What one replay in flight owns: the plan's signals, its packet images
// (they name the signals and the kernarg segment), a kernarg segment, staging
// for pageable copies. Replays of one exec rotate through K sets, so the
// host resets and writes set i+1 while the GPU still runs the replay of set
// i; only a launch that needs a set whose replay is still running waits.
struct ReplaySet {
  std::vector<SignalRef> signals;               // per plan signal; null for replay_done
  std::vector<std::vector<Image>> images;       // per lane
  std::vector<std::vector<hsa_signal_t>> waits;  // per engine op
  std::byte* kernargs = nullptr;                // one kernarg-pool allocation, a slice per dispatch
  uint64_t patch_generation = 0;                // the patches its segment holds
  std::vector<void*> staging;                   // per engine op, pinned, null when not staged
  SignalRef done;                               // the replay's completion; null when the set is free
  std::vector<SignalRef> keep;                  // pending copies its first packet waits for
  // This replay's copies on the copy engine: the engine has run every chunk
  // submitted once the signal is at most `done_at`.
  struct OnEngine {
    uint32_t signal;
    hsa_signal_value_t done_at;
  };
  std::vector<OnEngine> on_engine;
  struct Block {
    hsa_queue_t* queue = nullptr;
    uint64_t start = 0;  // write index of the block's first packet
    uint64_t size = 0;
    uint32_t joins = 0;  // lane 0: barrier-AND packets for the launch queue's pending copies
  };
  std::vector<Block> blocks;  // per lane
};

class HsaGraphExec final : public graph::GraphExec {
 public:
  HsaGraphExec(HsaDevice& device, const graph::Lowering& lowering);
  ~HsaGraphExec() override;

  void launch(Queue& queue, Event* completion) override;
  bool running() override;
  void synchronize() override;
  void drain() override;
  void set_kernargs(uint32_t node, size_t offset, std::span<const std::byte> bytes) override;
  bool patches_never_wait() const override { return true; }
  uint32_t max_in_flight() const override { return bound_.load(std::memory_order_relaxed); }
  void set_max_in_flight(uint32_t count) override;
  void describe(graph::Plan& plan) const override;
  // A lane queue 1.. failed (its error callback, on ROCr's thread): passes
  // the failure on to the launch queue. Reads only what instantiation fixed.
  void lane_failed(uint32_t lane, hsa_status_t status);

 private:
  class ReplayWait;
  void prepare(const graph::Graph& graph);
  void build_engine_op(const graph::Graph& graph, const graph::AqlEngineOp& op);
  // Makes `count` replay sets (waits for every replay in flight first).
  void make_sets(uint32_t count);
  void build_set(ReplaySet& set, const ReplaySet* share_signals);
  void release_set(ReplaySet& set) noexcept;
  void keep_set_until_exit(ReplaySet& set) noexcept;
  hsa_signal_t signal(const ReplaySet& set, int64_t index) const;
  // Barrier-AND packets before lane 0's block for the launch queue's pending
  // copies (those the block's first packet has no free slot for).
  uint32_t join_packets(std::span<const SignalRef> pending) const;
  // Waits until every lane's block fits in its ring (lane 0's with `joins`
  // packets more); throws on a timeout or a failed lane, before anything of
  // the replay is submitted.
  void wait_for_ring_space(uint32_t joins);
  // Writes set's images of `lane` (after the barrier-AND packets waiting for
  // `pending`) to its ring as one block and rings the doorbell; the block
  // fits (wait_for_ring_space).
  void write_block(uint32_t lane, ReplaySet& set, std::span<const SignalRef> pending);
  void submit_engine_ops(ReplaySet& set);
  ReplaySet& oldest() { return sets_[(next_ + sets_.size() - in_flight_) % sets_.size()]; }
  bool finished(const ReplaySet& set) const;
  // Waits for the oldest replay in flight and frees its set; throws its
  // failure (callers hold mutex_).
  void wait_oldest();
  void wait_all();
  void retire(ReplaySet& set);
  bool failed_lane(uint32_t* lane) const;
  std::string pending_work(const ReplaySet& set) const;
  // After a failure: releases whatever the replays in flight still wait for.
  void abandon();
  void abandon(ReplaySet& set);
  // LRRT_TEST_SHARE_REPLAY_SIGNALS only: brings every lane to rest.
  void settle_for_test();

  HsaDevice& device_;
  const HsaSymbols& api_;
  const Context& ctx_;
  graph::AqlPlan plan_;
  uint32_t node_count_ = 0;
  std::vector<std::string> names_;  // per node, for messages
  std::vector<hsa_signal_value_t> initial_;
  std::vector<Lane> lanes_;
  std::vector<EngineOp> ops_;
  std::vector<void*> host_blocks_;  // fill patterns, pinned
  std::vector<DispatchInfo> dispatch_of_;  // per node
  std::vector<std::byte> kernarg_master_;  // every dispatch's arguments, patches applied
  uint64_t patch_generation_ = 0;
  size_t terminal_ = 0;  // lane 0 image carrying the replay's completion
  // Lane 0's packets described for the launch queue's failure message
  // ("node 2 (kernel 'k') of a replay of a graph of 3 nodes", "" for a barrier-AND).
  std::shared_ptr<const std::vector<std::string>> lane0_packets_;
  // LRRT_TEST_SHARE_REPLAY_SIGNALS=1 at instantiation: every set uses set
  // 0's signals, so replays in flight share one signal set (a negative
  // control: the tests show it breaks).
  bool share_signals_for_test_ = false;

  std::mutex mutex_;
  std::vector<ReplaySet> sets_;
  std::atomic<uint32_t> bound_{0};  // sets_.size(), read by lr_graph_exec_get_stats without the lock
  size_t next_ = 0;       // the set the next launch uses
  size_t in_flight_ = 0;  // replays launched and not retired: the sets before next_
  hsa_queue_t* last_ring_ = nullptr;  // lane 0 of the replays in flight
  std::string failure_;   // set once a replay failed: the exec is unusable
  LaneFailures lane_failures_;
  std::vector<hsa_signal_t> join_scratch_;
  // OpenCL printf (printf_buffer.hpp): the exec's own buffer, in every
  // printing dispatch's hidden slot; its records are printed once a replay
  // finished (retire), and each launch attaches the printing kernels again.
  // One buffer: an exec with printing kernels keeps one replay in flight.
  std::unique_ptr<PrintfBuffer> printf_;
  std::vector<std::pair<std::shared_ptr<const PrintfTable>, std::string>> printing_;
};

// A replay's completion signal (or one of its copies') as rt::wait sees it:
// complete below 1, failed when one of the exec's queues reported an error.
class HsaGraphExec::ReplayWait final : public Waitable {
 public:
  ReplayWait(const HsaGraphExec& exec, const ReplaySet& set) : ReplayWait(exec, set, set.done->handle) {}
  ReplayWait(const HsaGraphExec& exec, const ReplaySet& set, hsa_signal_t target)
      : exec_(exec), set_(set), target_(target) {}
  WaitStatus poll() override {
    if (exec_.api_.hsa_signal_load_relaxed(target_) < 1) {
      std::atomic_thread_fence(std::memory_order_acquire);
      return WaitStatus::Complete;
    }
    return exec_.failed_lane(nullptr) ? WaitStatus::Failed : WaitStatus::Pending;
  }
  WaitStatus spin(std::chrono::nanoseconds limit) override {
    if (limit.count() <= 0) return poll();
    return wait_in(HSA_WAIT_STATE_ACTIVE, limit);
  }
  WaitStatus block(std::chrono::nanoseconds limit) override { return wait_in(HSA_WAIT_STATE_BLOCKED, limit); }
  std::chrono::nanoseconds slice() const override { return std::chrono::milliseconds(5); }
  std::string describe() const override { return exec_.pending_work(set_); }

 private:
  WaitStatus wait_in(hsa_wait_state_t state, std::chrono::nanoseconds limit) {
    const uint64_t ticks = limit == kForever ? UINT64_MAX
                                             : std::max<uint64_t>(1, uint64_t(double(exec_.ctx_.timestamp_frequency) *
                                                                              double(limit.count()) / 1e9));
    if (exec_.api_.hsa_signal_wait_scacquire(target_, HSA_SIGNAL_CONDITION_LT, 1, ticks, state) < 1)
      return WaitStatus::Complete;
    return exec_.failed_lane(nullptr) ? WaitStatus::Failed : WaitStatus::Pending;
  }
  const HsaGraphExec& exec_;
  const ReplaySet& set_;
  hsa_signal_t target_;
};

}  // namespace lrrt::rt::hsa::replay

// The hsa lowering of retained replay (hsa_graph.hpp). What is built once, at
// instantiation: plan_aql's packets as 64-byte images (kernarg address,
// geometry, dependency and completion signals in place), one kernarg buffer
// per dispatch (explicit and hidden arguments, packed by kernargs.cpp as for
// an ordinary launch), the plan's signals, the queues of lanes 1.., pinned
// blocks for fills and for pageable host memory in copies; signals, images,
// kernargs and staging once per replay set (K of them: replays in flight).
// What a replay does: take the next set (waiting only when all K are in
// flight, for the oldest), reset its signals, wait until every queue's block
// fits in its ring (nothing is submitted before: a timeout there leaves no
// part of the replay behind), start the copy-engine operations (they wait for
// their signals), then per queue reserve the block with one write-index add,
// copy the bodies, release-store each header, ring the doorbell once.
//
// A failure of a lane queue 1.. is passed on to the launch queue's error
// state (LaneFailures): the replay's completion is that queue's last signal,
// so every wait that covers the replay (the queue's, the replay's event, a
// drain) fails at once with the lane's kernel fault instead of waiting for a
// completion that never comes.
#include "hsa_graph.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "aql.hpp"
#include "graph/aql_plan.hpp"
#include "hsa_event.hpp"
#include "hsa_executable.hpp"
#include "hsa_queue.hpp"
#include "keep_until_exit.hpp"
#include "kernargs.hpp"
#include "wait.hpp"

namespace lrrt::rt::hsa {
namespace {

using graph::AqlPacket;
using graph::NodeKind;

// Largest pinned block a fill copies from; bigger fills copy it repeatedly.
constexpr size_t kFillBlockBytes = size_t(1) << 20;
constexpr size_t kKernargAlign = 64;

hsa_fence_scope_t fence(graph::FenceScope s) { return hsa_fence_scope_t(uint8_t(s)); }

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

void lane_error_callback(hsa_status_t status, hsa_queue_t*, void* data) {
  const auto* callback = static_cast<const LaneCallback*>(data);
  callback->exec->lane_failed(callback->lane, status);
}

HsaGraphExec::HsaGraphExec(HsaDevice& device, const graph::Lowering& lowering)
    : device_(device),
      api_(device.api()),
      ctx_(device.context()),
      plan_(graph::plan_aql(lowering.graph, lowering.derived, lowering.lanes,
                            graph::AqlPlanOptions{kBarrierAndMaxDeps})) {
  const auto& nodes = lowering.graph.nodes();
  node_count_ = uint32_t(nodes.size());
  for (uint32_t v = 0; v < node_count_; ++v) names_.push_back(graph::describe_node(nodes, v));
  if (const char* share = std::getenv("LRRT_TEST_SHARE_REPLAY_SIGNALS"); share && *share && std::string(share) != "0")
    share_signals_for_test_ = true;
  try {
    initial_.assign(plan_.signals.size(), 1);
    for (const auto& op : plan_.engine_ops) build_engine_op(lowering.graph, op);
    prepare(lowering.graph);
    make_sets(std::max<uint32_t>(1, lowering.max_in_flight));
  } catch (...) {
    for (auto& set : sets_) release_set(set);
    for (size_t l = 1; l < lanes_.size(); ++l)
      if (lanes_[l].queue) api_.hsa_queue_destroy(lanes_[l].queue);
    for (void* p : host_blocks_) device_.free_host(p);
    throw;
  }
}

void HsaGraphExec::build_engine_op(const graph::Graph& graph, const graph::AqlEngineOp& planned) {
  const graph::Node& node = graph.nodes()[planned.node];
  EngineOp op;
  op.node = planned.node;
  op.name = names_[planned.node];
  op.completion = planned.completion;
  op.waits = planned.wait;
  const hsa_agent_t gpu = device_.agent(), cpu = ctx_.cpu_agent;
  if (node.kind() == NodeKind::Fill) {
    const auto& fill = std::get<graph::FillStep>(node.step);
    const size_t bytes = std::min(kFillBlockBytes, fill.size);
    auto* block = static_cast<std::byte*>(device_.allocate_host(bytes));
    host_blocks_.push_back(block);
    for (size_t off = 0; off < bytes; off += fill.pattern_size) std::memcpy(block + off, &fill.pattern, fill.pattern_size);
    for (size_t off = 0; off < fill.size; off += bytes)
      op.chunks.push_back({static_cast<std::byte*>(fill.dst) + off, block, std::min(bytes, fill.size - off)});
    op.dst_agent = gpu;
    op.src_agent = cpu;
    // Each chunk decrements the completion signal once.
    initial_[op.completion] = hsa_signal_value_t(op.chunks.size());
  } else {
    const auto& copy = std::get<graph::CopyStep>(node.step);
    op.size = copy.size;
    op.dst_agent = copy.kind == CopyKind::DeviceToHost ? cpu : gpu;
    op.src_agent = copy.kind == CopyKind::HostToDevice ? cpu : gpu;
    if (copy.kind == CopyKind::HostToDevice && !device_.is_pinned(copy.src, copy.size))
      op.stage_in = copy.src;
    else if (copy.kind == CopyKind::DeviceToHost && !device_.is_pinned(copy.dst, copy.size))
      op.stage_out = copy.dst;
    op.chunks.push_back({copy.dst, copy.src, copy.size});  // a staged side is the set's staging block
  }
  ops_.push_back(std::move(op));
}

hsa_signal_t HsaGraphExec::signal(const ReplaySet& set, int64_t index) const {
  if (index < 0 || uint64_t(index) == plan_.replay_done) return hsa_signal_t{0};
  return set.signals[size_t(index)]->handle;
}

// What every set shares: the dispatches' geometry and kernarg layout, the
// packed arguments (kernarg_master_), the packet headers, the lane queues.
void HsaGraphExec::prepare(const graph::Graph& graph) {
  const auto& nodes = graph.nodes();
  dispatch_of_.assign(node_count_, {});
  size_t total = 0;
  struct Packing {
    const HsaKernel* kernel;
    const graph::KernelStep* step;
    uint64_t printf_buffer;
  };
  std::vector<Packing> packing(node_count_);
  for (const auto& lane : plan_.lanes)
    for (const AqlPacket& p : lane) {
      if (p.type != AqlPacket::Type::Dispatch) continue;
      const uint32_t v = uint32_t(p.node);
      const auto& step = std::get<graph::KernelStep>(nodes[v].step);
      const auto* k = dynamic_cast<const HsaKernel*>(step.kernel);
      if (!k) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "{}: the kernel was not loaded by the hsa backend", names_[v]);
      // The explicit bytes only, as every backend replays them (padding is not passed).
      size_t args = std::min<size_t>(step.args.size(), k->info_.explicit_kernarg_size());
      uint32_t group = 0;
      uint64_t printf_buffer = 0;
      try {
        check_explicit_args(k->info_, args);
        group = check_dispatch(*k, step.config, device_.properties());
        if (k->services.printf_buffer) {
          if (!printf_) printf_ = std::make_unique<PrintfBuffer>(device_);
          // Format ids are per code object, and a replay's records share one buffer.
          if (printf_->conflicts(k->printf_table))
            LRRT_THROW(LR_ERROR_NOT_SUPPORTED,
                       "kernel '{}' calls printf with another code object's format table than an earlier "
                       "kernel of the graph: a replay has one printf buffer, so the printing kernels of a "
                       "graph must come from one code object (or copies of it)",
                       k->info_.name);
          printf_buffer = printf_->attach(k->printf_table, k->info_.name);
          printing_.emplace_back(k->printf_table, k->info_.name);
        }
      } catch (const Error& e) {
        LRRT_THROW(e.status(), "{}: {}", names_[v], e.what());
      }
      DispatchInfo& d = dispatch_of_[v];
      d.kernel_object = k->kernel_object;
      d.config = step.config;
      d.offset = total;
      d.explicit_bytes = args;
      d.group = group;
      d.private_size = k->private_segment_size;
      d.valid = true;
      packing[v] = {k, &step, printf_buffer};
      total += (std::max<size_t>(k->kernarg_size, args) + kKernargAlign - 1) / kKernargAlign * kKernargAlign;
    }
  kernarg_master_.assign(total, std::byte{0});
  for (uint32_t v = 0; v < node_count_; ++v) {
    const DispatchInfo& d = dispatch_of_[v];
    if (!d.valid) continue;
    const Packing& k = packing[v];
    const size_t size = std::max<size_t>(k.kernel->kernarg_size, d.explicit_bytes);
    pack_kernargs(k.kernel->info_, d.config, std::span(k.step->args).first(d.explicit_bytes),
                  std::span<std::byte>(kernarg_master_.data() + d.offset, size), k.printf_buffer);
  }

  lanes_.resize(plan_.lanes.size());
  for (size_t l = 0; l < plan_.lanes.size(); ++l) {
    Lane& lane = lanes_[l];
    const auto& packets = plan_.lanes[l];
    if (packets.size() > device_.queue_size())
      LRRT_THROW(LR_ERROR_NOT_SUPPORTED,
                 "the graph needs {} AQL packets on lane {}, more than a queue's ring of {}: record fewer nodes "
                 "per graph",
                 packets.size(), l, device_.queue_size());
    for (const AqlPacket& p : packets) {
      lane.nodes.push_back(p.node);
      if (p.completion >= 0 && uint64_t(p.completion) == plan_.replay_done) terminal_ = lane.nodes.size() - 1;
    }
    if (l == 0) {
      auto described = std::make_shared<std::vector<std::string>>();
      for (const AqlPacket& p : packets)
        described->push_back(p.node < 0 ? std::string()
                                        : fmt::format("{} of a replay of a graph of {} nodes", names_[size_t(p.node)],
                                                      node_count_));
      lane0_packets_ = std::move(described);
    }
    if (l == 0 || packets.empty()) continue;
    lane.error = std::make_shared<QueueErrorState>();
    lane.callback = {this, uint32_t(l)};  // lanes_ is not resized again: the address stays
    LRRT_HSA_CHECK(api_, LR_ERROR_RUNTIME,
                   hsa_queue_create(device_.agent(), device_.queue_size(), HSA_QUEUE_TYPE_SINGLE, lane_error_callback,
                                    &lane.callback, UINT32_MAX, UINT32_MAX, &lane.queue));
    device_.watch_queue(lane.error);
  }
}

void HsaGraphExec::build_set(ReplaySet& set, const ReplaySet* share) {
  set.signals.resize(plan_.signals.size());
  for (uint32_t i = 0; i < plan_.signals.size(); ++i)
    if (i != plan_.replay_done) set.signals[i] = share ? share->signals[i] : device_.acquire_signal();
  if (!kernarg_master_.empty()) {
    set.kernargs = static_cast<std::byte*>(device_.allocate_kernarg(kernarg_master_.size()));
    std::memcpy(set.kernargs, kernarg_master_.data(), kernarg_master_.size());
  }
  set.patch_generation = patch_generation_;
  set.staging.assign(ops_.size(), nullptr);
  set.waits.resize(ops_.size());
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (ops_[i].stage_in || ops_[i].stage_out) set.staging[i] = device_.allocate_host(ops_[i].size);
    for (uint32_t s : ops_[i].waits) set.waits[i].push_back(signal(set, s));
  }
  set.images.resize(plan_.lanes.size());
  set.blocks.assign(plan_.lanes.size(), {});
  for (size_t l = 0; l < plan_.lanes.size(); ++l) {
    for (const AqlPacket& p : plan_.lanes[l]) {
      Image img;
      if (p.type == AqlPacket::Type::Dispatch) {
        const DispatchInfo& d = dispatch_of_[size_t(p.node)];
        encode_dispatch(reinterpret_cast<hsa_kernel_dispatch_packet_t*>(img.bytes.data()), d.config, d.kernel_object,
                        set.kernargs + d.offset, d.group, d.private_size, signal(set, p.completion));
        img.header = packet_header(HSA_PACKET_TYPE_KERNEL_DISPATCH, p.barrier, fence(p.acquire), fence(p.release));
        img.setup = dispatch_setup(grid_dims(d.config));
      } else {
        std::array<hsa_signal_t, kBarrierAndMaxDeps> deps{};
        for (size_t i = 0; i < p.wait.size(); ++i) deps[i] = signal(set, p.wait[i]);
        encode_barrier_and(reinterpret_cast<hsa_barrier_and_packet_t*>(img.bytes.data()),
                           std::span(deps).first(p.wait.size()), signal(set, p.completion));
        img.header = packet_header(HSA_PACKET_TYPE_BARRIER_AND, p.barrier, fence(p.acquire), fence(p.release));
      }
      set.images[l].push_back(img);
    }
  }
}

void HsaGraphExec::release_set(ReplaySet& set) noexcept {
  try {
    device_.free_kernarg(set.kernargs);
  } catch (...) {
  }
  set.kernargs = nullptr;
  for (void* p : set.staging) {
    if (!p) continue;
    try {
      device_.free_host(p);
    } catch (...) {
    }
  }
  set.staging.clear();
  set.signals.clear();
}

void HsaGraphExec::make_sets(uint32_t count) {
  // One printf buffer: its records are printed after each replay, so a
  // second replay must not write into it meanwhile.
  if (printf_) count = 1;
  wait_all();
  if (count == sets_.size()) return;
  std::vector<ReplaySet> sets(count);
  try {
    for (uint32_t i = 0; i < count; ++i) build_set(sets[i], share_signals_for_test_ && i ? &sets[0] : nullptr);
  } catch (...) {
    for (auto& set : sets) release_set(set);
    throw;
  }
  for (auto& set : sets_) release_set(set);
  sets_ = std::move(sets);
  bound_.store(count, std::memory_order_relaxed);
  next_ = 0;
  in_flight_ = 0;
}

void HsaGraphExec::set_max_in_flight(uint32_t count) {
  std::lock_guard lock(mutex_);
  make_sets(count);
}

HsaGraphExec::~HsaGraphExec() {
  bool settled = true;
  try {
    synchronize();
    settled = failure_.empty();
  } catch (...) {
    // Reported by lr_graph_exec_destroy, which synchronizes first. A replay
    // that timed out is abandoned: whatever still waits for its signals is
    // released before they go back to the pool.
    abandon();
    settled = false;
  }
  // After a timeout or a failure, packets of the replays may still run (a
  // hung dispatch; one an abandoned barrier-AND let start; another lane of
  // a failed replay): what they read is kept, never freed under them.
  for (auto& set : sets_) settled ? release_set(set) : keep_set_until_exit(set);
  for (size_t l = 1; l < lanes_.size(); ++l)
    if (lanes_[l].queue) api_.hsa_queue_destroy(lanes_[l].queue);
  if (!settled) {
    try {
      keep_until_exit(std::make_shared<std::vector<void*>>(std::move(host_blocks_)));
    } catch (...) {
    }
    host_blocks_.clear();
  }
  for (void* p : host_blocks_) {
    try {
      device_.free_host(p);
    } catch (...) {
    }
  }
}

void HsaGraphExec::keep_set_until_exit(ReplaySet& set) noexcept {
  struct Kept {
    std::vector<SignalRef> signals;  // out of the pool: a late packet may still complete one
    std::vector<void*> memory;       // the argument copies and staging blocks
  };
  try {
    auto kept = std::make_shared<Kept>();
    kept->signals = std::move(set.signals);
    kept->memory = std::move(set.staging);
    kept->memory.push_back(set.kernargs);
    keep_until_exit(std::move(kept));
  } catch (...) {
  }
  set.kernargs = nullptr;
  set.staging.clear();
  set.signals.clear();
}

// The first packet of lane 0's block takes pending copies in its free
// dependency slots when it is a barrier-AND (the fork); the rest wait in
// barrier-AND packets before the block. Every set's first image has the same
// free slots.
uint32_t HsaGraphExec::join_packets(std::span<const SignalRef> pending) const {
  const std::vector<Image>& images = sets_.front().images[0];
  size_t free_slots = 0;
  if (!images.empty() && packet_type(images[0].header) == HSA_PACKET_TYPE_BARRIER_AND)
    for (const auto& dep : reinterpret_cast<const hsa_barrier_and_packet_t*>(images[0].bytes.data())->dep_signal)
      free_slots += dep.handle == 0;
  const size_t rest = pending.size() > free_slots ? pending.size() - free_slots : 0;
  return uint32_t((rest + kBarrierAndMaxDeps - 1) / kBarrierAndMaxDeps);
}

void HsaGraphExec::wait_for_ring_space(uint32_t joins) {
  for (uint32_t l = 0; l < lanes_.size(); ++l) {
    const Lane& lane = lanes_[l];
    if (!lane.queue) continue;
    const uint64_t n = lane.nodes.size() + (l == 0 ? joins : 0);
    if (n > lane.queue->size)
      LRRT_THROW(LR_ERROR_NOT_SUPPORTED, "the replay needs {} AQL packets on one queue, more than its ring of {}", n,
                 lane.queue->size);
    // This producer is the ring's only one (the launch queue's lock, or the
    // exec's): the space found stays free until write_block takes it.
    const uint64_t start = api_.hsa_queue_load_write_index_relaxed(lane.queue);
    wait_ring_space(api_, lane.queue, start + n - 1, *lane.error);
  }
  uint32_t failed = 0;
  if (failed_lane(&failed)) {
    // A replay in flight failed: reported as the exec's failure.
    wait_all();
    LRRT_THROW(LR_ERROR_KERNEL_FAULT, "the hsa queue of lane {} of the replay failed before the replay was written",
               failed);
  }
}

void HsaGraphExec::write_block(uint32_t l, ReplaySet& set, std::span<const SignalRef> pending) {
  Lane& lane = lanes_[l];
  const std::vector<Image>& images = set.images[l];
  hsa_queue_t* q = lane.queue;
  const uint64_t size = q->size;
  // Join packets for the launch queue's pending copies (join_packets).
  join_scratch_.clear();
  for (const auto& s : pending) join_scratch_.push_back(s->handle);
  size_t first_free = 0;
  Image first;
  const bool patch_first =
      !images.empty() && packet_type(images[0].header) == HSA_PACKET_TYPE_BARRIER_AND && !join_scratch_.empty();
  if (patch_first) {
    first = images[0];
    auto* b = reinterpret_cast<hsa_barrier_and_packet_t*>(first.bytes.data());
    for (auto& dep : b->dep_signal) {
      if (dep.handle || first_free >= join_scratch_.size()) continue;
      dep = join_scratch_[first_free++];
    }
  }
  const uint32_t joins = join_packets(pending);
  const uint64_t n = joins + images.size();
  // Reserve the block with one add (wait_for_ring_space made room).
  const uint64_t index = api_.hsa_queue_add_write_index_relaxed(q, n);
  auto* base = static_cast<std::byte*>(q->base_address);
  auto slot = [&](uint64_t i) { return base + ((index + i) & (size - 1)) * kAqlPacketBytes; };
  for (uint32_t j = 0; j < joins; ++j) {
    const size_t from = first_free + size_t(j) * kBarrierAndMaxDeps;
    const size_t count = std::min<size_t>(kBarrierAndMaxDeps, join_scratch_.size() - from);
    encode_barrier_and(reinterpret_cast<hsa_barrier_and_packet_t*>(slot(j)),
                       std::span(join_scratch_).subspan(from, count), hsa_signal_t{0});
  }
  for (size_t i = 0; i < images.size(); ++i) {
    const Image& img = i == 0 && patch_first ? first : images[i];
    std::memcpy(slot(joins + i) + 4, img.bytes.data() + 4, kAqlPacketBytes - 4);
  }
  // Headers last, in ring order; a join packet holds back the block (barrier
  // bit) until the copies it waits for finished.
  for (uint32_t j = 0; j < joins; ++j) publish_packet(slot(j), kBarrierAndHeader, 0);
  for (size_t i = 0; i < images.size(); ++i) publish_packet(slot(joins + i), images[i].header, images[i].setup);
  api_.hsa_signal_store_screlease(q->doorbell_signal, hsa_signal_value_t(index + n - 1));
  set.blocks[l] = {q, index, n, joins};
}

void HsaGraphExec::submit_engine_ops(ReplaySet& set) {
  set.on_engine.clear();
  for (size_t i = 0; i < ops_.size(); ++i) {
    const EngineOp& op = ops_[i];
    if (op.stage_in) std::memcpy(set.staging[i], op.stage_in, op.size);
    const hsa_signal_t completion = signal(set, op.completion);
    const auto& waits = set.waits[i];
    hsa_signal_value_t left = initial_[op.completion];
    for (const auto& c : op.chunks) {
      void* dst = op.stage_out ? set.staging[i] : c.dst;
      const void* src = op.stage_in ? set.staging[i] : c.src;
      hsa_status_t st = api_.hsa_amd_memory_async_copy(dst, op.dst_agent, src, op.src_agent, c.size,
                                                       uint32_t(waits.size()), waits.empty() ? nullptr : waits.data(),
                                                       completion);
      if (st != HSA_STATUS_SUCCESS) {
        if (left != initial_[op.completion]) set.on_engine.push_back({op.completion, left});
        LRRT_THROW_AT(LR_ERROR_RUNTIME, "{}: hsa_amd_memory_async_copy of {} bytes failed: {}", op.name, c.size,
                      hsa_error_text(api_, st));
      }
      --left;
    }
    set.on_engine.push_back({op.completion, left});
  }
}

// After a failure: completes every signal of the replays in flight so that
// nothing they submitted keeps waiting (the launch queue stays usable), and
// frees their sets.
void HsaGraphExec::abandon() {
  for (size_t i = 0; i < in_flight_; ++i) abandon(sets_[(next_ + sets_.size() - in_flight_ + i) % sets_.size()]);
  in_flight_ = 0;
}

void HsaGraphExec::abandon(ReplaySet& set) {
  std::vector<bool> engine_signal(set.signals.size(), false);
  for (const auto& e : set.on_engine) engine_signal[e.signal] = true;
  for (size_t i = 0; i < set.signals.size(); ++i)
    if (set.signals[i] && !engine_signal[i]) api_.hsa_signal_store_relaxed(set.signals[i]->handle, 0);
  if (set.done) api_.hsa_signal_store_relaxed(set.done->handle, 0);
  // The copy engine may still hold copies waiting for the signals just
  // released. They run now; wait for them (bounded) before the signals go
  // back to the device's pool, where a copy still waiting on one would wait
  // for the pool's next user instead (a hang seen on the stand-in).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (const auto& e : set.on_engine) {
    const hsa_signal_t h = set.signals[e.signal]->handle;
    while (api_.hsa_signal_load_relaxed(h) > e.done_at && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    api_.hsa_signal_store_relaxed(h, 0);
  }
  set.on_engine.clear();
  // Lane 0's terminal barrier-AND completes `done` once the waits just forced
  // let it run, maybe long after this. Back in the pool, the signal would be
  // handed to the next operation and that late decrement would complete it
  // early (a copy whose staging memory was freed while the copy engine still
  // read it, seen under ASan on the stand-in). Kept out of the pool instead:
  // abandoning is rare, and a failed exec never replays again.
  try {
    if (set.done) keep_until_exit(std::move(set.done));
  } catch (...) {
  }
  set.done.reset();
  set.keep.clear();
}

bool HsaGraphExec::finished(const ReplaySet& set) const {
  if (api_.hsa_signal_load_relaxed(set.done->handle) >= 1) return false;
  std::atomic_thread_fence(std::memory_order_acquire);
  return true;
}

void HsaGraphExec::retire(ReplaySet& set) {
  if (printf_) printf_->drain();  // every printing dispatch of the replay finished
  set.done.reset();
  set.keep.clear();
  set.on_engine.clear();
  --in_flight_;
}

void HsaGraphExec::launch(Queue& queue, Event* completion) {
  auto* launch_queue = dynamic_cast<HsaQueue*>(&queue);
  if (!launch_queue) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "an hsa graph replays on an hsa queue only");
  auto* event = dynamic_cast<HsaEvent*>(completion);
  if (completion && !event) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "an hsa graph cannot complete another backend's event");
  std::lock_guard lock(mutex_);
  if (!failure_.empty())
    LRRT_THROW(LR_ERROR_KERNEL_FAULT, "an earlier replay of the graph failed ({}); instantiate the graph again",
               failure_);
  // Replays that finished free their sets without a wait.
  while (in_flight_ && finished(oldest())) retire(oldest());
  // A set is reset for this replay: the replay that used it last must have
  // finished with its signals. Only when all K sets are in flight does the
  // launch wait, and only for the oldest.
  if (in_flight_ == sets_.size()) {
    counters.launch_waits.fetch_add(1, std::memory_order_relaxed);
    wait_oldest();
  }
  ReplaySet& set = sets_[next_];
  for (const auto& [table, name] : printing_) printf_->attach(table, name);
  for (size_t i = 0; i < set.signals.size(); ++i)
    if (set.signals[i]) api_.hsa_signal_store_relaxed(set.signals[i]->handle, initial_[i]);
  if (set.patch_generation != patch_generation_) {
    // Patches made since this set last ran; the replays in flight keep theirs.
    std::memcpy(set.kernargs, kernarg_master_.data(), kernarg_master_.size());
    set.patch_generation = patch_generation_;
  }
  bool submitting = false;  // from here a failure leaves part of the replay submitted
  try {
    // Everything under the launch queue's lock, taken first: another
    // thread's copy and launch on that queue cannot slip in between the
    // replay's copies and its lane-0 block, where the copy engine's FIFO
    // closed a circular wait (a root copy waiting for the fork behind the
    // other thread's launch, which waits for its copy behind the root copy).
    launch_queue->submit_block([&](hsa_queue_t* ring, const std::shared_ptr<QueueErrorState>& error,
                                   std::span<const SignalRef> pending) -> HsaQueue::Block {
      // The replays in flight ran on another queue (or one that was
      // recreated after an error): this one follows them from the host.
      if (in_flight_ && ring != last_ring_) {
        counters.launch_waits.fetch_add(1, std::memory_order_relaxed);
        wait_all();
      }
      Lane& lane = lanes_[0];
      lane.queue = ring;
      lane.error = error;
      lane_failures_.set_launch_queue(error);
      // Room on every ring first, joins included: a timeout or a failure
      // here leaves nothing behind. Were the copies or the blocks of lanes
      // 1.. submitted first, abandoning them (forcing their signals) would
      // run them beside earlier work, without their dependencies.
      wait_for_ring_space(join_packets(pending));
      // In flight from here: a failure below abandons this set too.
      submitting = true;
      ++in_flight_;
      next_ = (next_ + 1) % sets_.size();
      last_ring_ = ring;
      // Copies first: a root copy waits for the fork, which only runs once
      // lane 0's block is written, and the stand-in's worst-order mode sees
      // every copy of the replay queued before the first dispatch runs.
      submit_engine_ops(set);
      for (uint32_t l = 1; l < lanes_.size(); ++l)
        if (lanes_[l].queue) write_block(l, set, {});
      SignalRef done;
      if (event) {
        event->arm(HsaEvent::Kind::Marker, error, fmt::format("a replay of a graph of {} nodes", node_count_));
        done = event->signal_ref();
      } else {
        done = device_.acquire_signal();
      }
      reinterpret_cast<hsa_barrier_and_packet_t*>(set.images[0][terminal_].bytes.data())->completion_signal =
          done->handle;
      set.done = done;
      write_block(0, set, pending);
      set.keep.assign(pending.begin(), pending.end());
      return {done, set.blocks[0].start, set.blocks[0].joins, lane0_packets_};
    });
  } catch (const Error& e) {
    if (!failure_.empty()) throw;  // an earlier replay's failure, reported by the wait that saw it
    // Nothing of this replay was submitted (a timeout waiting for ring
    // space, the launch queue's own failure): the replays in flight go on,
    // and so may the exec.
    if (!submitting) throw;
    abandon();
    failure_ = e.what();
    LRRT_THROW(e.status(), "{} (the replay was only partly submitted)", e.what());
  }
  const uint32_t peak = counters.peak_in_flight.load(std::memory_order_relaxed);
  if (in_flight_ > peak) counters.peak_in_flight.store(uint32_t(in_flight_), std::memory_order_relaxed);
  // Pageable destinations: copied out of staging before launch returns.
  for (size_t i = 0; i < ops_.size(); ++i) {
    const EngineOp& op = ops_[i];
    if (!op.stage_out) continue;
    // A failed lane fails this wait too (reported as the replay's failure).
    ReplayWait copied(*this, set, signal(set, op.completion));
    if (wait(copied) != WaitStatus::Complete) {
      wait_all();
      LRRT_THROW(LR_ERROR_KERNEL_FAULT, "{}: the replay failed before its device-to-host copy to pageable memory",
                 op.name);
    }
    std::memcpy(op.stage_out, set.staging[i], op.size);
  }
}

void HsaGraphExec::lane_failed(uint32_t l, hsa_status_t status) {
  const Lane& lane = lanes_[l];
  lane.error->status.store(int(status));
  lane.error->failed.store(true, std::memory_order_release);
  // The packet the lane stopped at: its blocks all have the lane's packet
  // count (no joins on lanes 1..), from write index 0.
  std::string what = fmt::format("lane {}", l);
  const uint64_t read = api_.hsa_queue_load_read_index_scacquire(lane.queue);
  if (!lane.nodes.empty() && read < api_.hsa_queue_load_write_index_relaxed(lane.queue)) {
    const int64_t node = lane.nodes[read % lane.nodes.size()];
    if (node >= 0) what = fmt::format("{} on lane {}", names_[size_t(node)], l);
  }
  try {
    lane_failures_.failed(int(status), fmt::format("{} of a replay of a graph of {} nodes failed: {}", what,
                                                   node_count_, hsa_error_text(api_, status)));
  } catch (...) {
    // Out of memory for the message: the lane's own state says it failed.
  }
}

bool HsaGraphExec::failed_lane(uint32_t* which) const {
  // Lanes 1.. first: a lane's failure also fails lane 0 (the launch queue),
  // and the lane that failed first is the one to name.
  for (uint32_t i = 1; i <= lanes_.size(); ++i) {
    const uint32_t l = i % uint32_t(lanes_.size());
    const auto& e = lanes_[l].error;
    if (e && e->failed.load(std::memory_order_acquire)) {
      if (which) *which = l;
      return true;
    }
  }
  return false;
}

// The first packet of each queue the packet processor has not consumed, and
// the first copy not completed: what a hung or failed replay is stuck on.
std::string HsaGraphExec::pending_work(const ReplaySet& set) const {
  std::string out = fmt::format("a replay of a graph of {} nodes ({} AQL packets, {} copy-engine operations)",
                                node_count_, plan_.packet_count(), ops_.size());
  if (sets_.size() > 1) out += fmt::format(" ({} of at most {} replays in flight)", in_flight_, sets_.size());
  std::string where;
  for (uint32_t l = 0; l < lanes_.size(); ++l) {
    const ReplaySet::Block& block = set.blocks[l];
    if (!block.queue || !block.size) continue;
    const uint64_t read = api_.hsa_queue_load_read_index_scacquire(block.queue);
    if (read < block.start) {
      where += fmt::format("; lane {} has not reached the replay (an earlier replay or earlier work runs)", l);
      continue;
    }
    if (read >= block.start + block.size) continue;
    const uint64_t i = read - block.start;
    if (i < block.joins) {
      where += fmt::format("; lane {} waits for copies submitted to the queue before the replay", l);
      continue;
    }
    const size_t p = size_t(i - block.joins);
    const int64_t node = lanes_[l].nodes[p];
    if (node >= 0) {
      where += fmt::format("; lane {}: {} (packet {} of {})", l, names_[size_t(node)], p, lanes_[l].nodes.size());
    } else {
      std::string waits;
      for (uint32_t s : plan_.lanes[l][p].wait) waits += (waits.empty() ? "" : ", ") + graph::aql_signal_name(plan_, s);
      where += fmt::format("; lane {}: barrier-AND packet {} of {}{}", l, p, lanes_[l].nodes.size(),
                           waits.empty() ? std::string() : " waiting for " + waits);
    }
  }
  for (const EngineOp& op : ops_)
    if (api_.hsa_signal_load_relaxed(signal(set, op.completion)) > 0) {
      where += fmt::format("; copy engine: {}", op.name);
      break;
    }
  return out + where;
}

void HsaGraphExec::wait_oldest() {
  ReplaySet& set = oldest();
  ReplayWait target(*this, set);
  if (wait(target) == WaitStatus::Complete) {
    retire(set);
    return;
  }
  uint32_t lane = 0;
  failed_lane(&lane);
  const auto& error = lanes_[lane].error;
  if (const uint32_t hw = error->hw_exception.load()) {
    std::string what = fmt::format("{} did not complete: {}", pending_work(set), device_.device_lost_text(hw));
    abandon();
    failure_ = what;
    LRRT_THROW(LR_ERROR_DEVICE_LOST, "{}", what);
  }
  std::string what = fmt::format("{} failed on the hsa queue of lane {}: {}", pending_work(set), lane,
                                 hsa_error_text(api_, hsa_status_t(error->status.load())));
  if (error->memory_fault.load())
    what += fmt::format(" (a GPU memory fault at address {:#x}: {}; the device is unusable until the process "
                        "restarts)",
                        error->fault_address.load(), memory_fault_reason_text(error->fault_reason.load()));
  abandon();
  failure_ = what;
  if (printf_) printf_->drain();  // what the replay printed before it failed
  LRRT_THROW(LR_ERROR_KERNEL_FAULT, "{}", what);
}

void HsaGraphExec::wait_all() {
  // A failure is reported once, by the wait that saw it.
  while (in_flight_ && failure_.empty()) wait_oldest();
}

bool HsaGraphExec::running() {
  std::lock_guard lock(mutex_);
  if (!failure_.empty() || failed_lane(nullptr)) return false;
  for (size_t i = 0; i < in_flight_; ++i)
    if (!finished(sets_[(next_ + sets_.size() - in_flight_ + i) % sets_.size()])) return true;
  return false;
}

void HsaGraphExec::synchronize() {
  std::lock_guard lock(mutex_);
  if (!share_signals_for_test_) return wait_all();
  try {
    wait_all();
  } catch (...) {
    settle_for_test();
    throw;
  }
  settle_for_test();
}

// With one signal set shared by the replays in flight, their completion
// cannot be trusted: a shared signal completes early (the wait returns while
// later packets still run) or drops below 0 (a barrier-AND never starts). So
// before a wait returns or throws, the shared signals are forced to 0 until
// every lane's ring is consumed: no packet still reads the sets' argument
// copies when the exec frees them. Bounded, as the control may also hang.
void HsaGraphExec::settle_for_test() {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    bool idle = true;
    for (const Lane& lane : lanes_)
      if (lane.queue && api_.hsa_queue_load_read_index_scacquire(lane.queue) <
                            api_.hsa_queue_load_write_index_relaxed(lane.queue))
        idle = false;
    if (idle || std::chrono::steady_clock::now() > deadline) break;
    for (const auto& s : sets_.front().signals)
      if (s) api_.hsa_signal_store_screlease(s->handle, 0);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  abandon();
}

void HsaGraphExec::drain() { synchronize(); }

// The patch goes to the master copy; each set takes it at its next launch
// (launch), so a replay in flight keeps the arguments it was launched with.
void HsaGraphExec::set_kernargs(uint32_t node, size_t offset, std::span<const std::byte> bytes) {
  std::lock_guard lock(mutex_);
  const DispatchInfo& d = dispatch_of_[node];
  if (!d.valid || offset >= d.explicit_bytes) return;  // padding, never passed
  std::memcpy(kernarg_master_.data() + d.offset + offset, bytes.data(), std::min(bytes.size(), d.explicit_bytes - offset));
  ++patch_generation_;
}

void HsaGraphExec::describe(graph::Plan& plan) const {
  plan.lowering = "hsa-aql";
  plan.aql = plan_;
  uint32_t queues = 0;
  for (const auto& lane : plan_.lanes) queues += !lane.empty();
  plan.sync.push_back({"lowering", -1,
                       fmt::format("hsa AQL packet block: {} packets on {} queue(s), each queue's block reserved with "
                                   "one write-index add and started with one doorbell; {} copy-engine operation(s) "
                                   "ordered by {} signals",
                                   plan_.packet_count(), queues, plan_.engine_ops.size(), plan_.signals.size())});
  plan.sync.push_back(
      {"in_flight", -1,
       printf_ ? std::string("one replay in flight: the graph's printing kernels share one printf buffer, printed "
                             "after each replay")
               : fmt::format("replays in flight: {} sets of signals, packet images and kernarg segments rotate, so "
                             "a launch waits only when all are in use, and then for the oldest replay; a patch "
                             "goes to the next replay launched{}",
                             sets_.size(),
                             share_signals_for_test_ ? " (test: LRRT_TEST_SHARE_REPLAY_SIGNALS, the sets share one "
                                                       "set of signals, which is wrong)"
                                                     : "")});
  const ReplaySet& set = sets_.front();
  for (size_t l = 0; l < plan_.lanes.size(); ++l)
    for (size_t i = 0; i < plan_.lanes[l].size(); ++i) {
      const AqlPacket& p = plan_.lanes[l][i];
      const bool dispatch = p.type == AqlPacket::Type::Dispatch;
      std::string waits;
      for (uint32_t s : p.wait) waits += (waits.empty() ? "" : ", ") + graph::aql_signal_name(plan_, s);
      plan.sync.push_back(
          {dispatch ? "dispatch" : "barrier_and", p.node,
           fmt::format("lane {} packet {}: header {:#06x} (barrier {}, acquire {}, release {}){}{}: {}", l, i,
                       set.images[l][i].header, p.barrier ? 1 : 0, graph::fence_scope_name(p.acquire),
                       graph::fence_scope_name(p.release), waits.empty() ? "" : ", waits for " + waits,
                       p.completion >= 0 ? ", completes " + graph::aql_signal_name(plan_, uint32_t(p.completion)) : "",
                       p.why)});
    }
  for (const auto& op : plan_.engine_ops) {
    std::string waits;
    for (uint32_t s : op.wait) waits += (waits.empty() ? "" : ", ") + graph::aql_signal_name(plan_, s);
    plan.sync.push_back({"copy_engine", int64_t(op.node),
                         fmt::format("hsa_amd_memory_async_copy waiting for {}: {}", waits, op.why)});
  }
}

}  // namespace

std::unique_ptr<graph::GraphExec> make_hsa_graph_exec(HsaDevice& device, const graph::Lowering& lowering) {
  return std::make_unique<HsaGraphExec>(device, lowering);
}

}  // namespace lrrt::rt::hsa

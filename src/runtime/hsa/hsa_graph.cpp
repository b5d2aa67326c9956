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
//
// This file builds an exec: its lanes, copy-engine operations and replay
// sets (and frees them); hsa_graph_launch.cpp launches and waits for
// replays, hsa_graph_diagnostics.cpp describes them. The exec's class is in
// hsa_graph_exec.hpp.
#include "hsa_graph.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include <fmt/format.h>

#include "hsa_event.hpp"
#include "hsa_executable.hpp"
#include "hsa_graph_exec.hpp"
#include "keep_until_exit.hpp"
#include "kernargs.hpp"

namespace lrrt::rt::hsa {
namespace replay {

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

}  // namespace replay

std::unique_ptr<graph::GraphExec> make_hsa_graph_exec(HsaDevice& device, const graph::Lowering& lowering) {
  return std::make_unique<replay::HsaGraphExec>(device, lowering);
}

}  // namespace lrrt::rt::hsa

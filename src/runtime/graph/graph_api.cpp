// The runtime's side of retained replay: graph and exec handles, validation
// against the device's allocations and limits, the lowering call, launches,
// argument patches. c_api_graph.cpp wraps these.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "error.hpp"
#include "env.hpp"
#include "graph/handles.hpp"
#include "runtime.hpp"

namespace lrrt::rt {
namespace {

constexpr uint32_t kMaxLanes = 8;
constexpr uint32_t kMaxInFlight = 64;

void check_max_in_flight(uint64_t count, const char* what) {
  if (count > kMaxInFlight)
    LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "{} is {}; at most {} replays of one exec can be in flight", what, count,
               kMaxInFlight);
}

// LRRT_GRAPH_MAX_IN_FLIGHT: the bound for execs instantiated while it is set.
uint32_t default_max_in_flight() {
  static_assert(env::kGraphMaxInFlight.max == kMaxInFlight);
  return static_cast<uint32_t>(env::number(env::kGraphMaxInFlight).value_or(LR_GRAPH_DEFAULT_MAX_IN_FLIGHT));
}

// The plan as lr_graph_exec_get_plan returns it (call with exec->mutex held
// once the exec is shared).
void describe_exec(lr_graph_exec_t& exec) {
  graph::Plan plan = exec.base_plan;
  exec.exec->describe(plan);
  plan.max_in_flight = exec.exec->max_in_flight();
  exec.plan_json = graph::plan_to_json(plan);
}

graph::AllocationTable allocation_table(DeviceState& state) {
  graph::AllocationTable table;
  std::lock_guard lock(state.mutex);
  for (const auto& [p, size] : state.allocations) table.add(reinterpret_cast<uintptr_t>(p), size);
  for (const auto& [p, size] : state.host_allocations) table.add(reinterpret_cast<uintptr_t>(p), size);
  for (const auto& [p, r] : state.registered) table.add(p, r.bytes);
  table.finish();
  return table;
}

// The limits every backend checks at launch, checked once here so a replay
// is not rejected halfway through its submission.
void check_launch_limits(const graph::Graph& g, const DeviceProperties& props) {
  const auto& nodes = g.nodes();
  for (uint32_t v = 0; v < nodes.size(); ++v) {
    if (nodes[v].kind() != graph::NodeKind::Kernel) continue;
    const auto& k = std::get<graph::KernelStep>(nodes[v].step);
    const KernelInfo& info = k.kernel->info();
    const uint64_t wg = k.config.block.product();
    const uint32_t max_wg = info.max_workgroup_size ? info.max_workgroup_size : props.max_workgroup_size;
    if (max_wg && wg > max_wg)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "{}: a workgroup of {}x{}x{} = {} work-items exceeds the maximum of {}",
                 graph::describe_node(nodes, v), k.config.block.x, k.config.block.y, k.config.block.z, wg, max_wg);
    const uint64_t lds = uint64_t(info.group_segment_size) + k.config.dynamic_shared_bytes;
    if (props.max_shared_memory_per_workgroup && lds > props.max_shared_memory_per_workgroup)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT,
                 "{}: needs {} bytes of shared memory ({} static + {} dynamic), more than the {} a workgroup can have",
                 graph::describe_node(nodes, v), lds, info.group_segment_size, k.config.dynamic_shared_bytes,
                 props.max_shared_memory_per_workgroup);
  }
}

// LRRT_TEST_DROP_EDGE=<index>: test-only negative control (graph.hpp).
std::optional<uint32_t> drop_edge_for_test() {
  const auto index = env::number(env::kTestDropEdge);
  if (!index) return std::nullopt;
  return static_cast<uint32_t>(*index);
}

}  // namespace

lr_graph_t* Runtime::create_graph(DeviceState& state) {
  opened(state);
  auto g = std::make_unique<lr_graph_t>();
  g->device = &state;
  lr_graph_t* raw = g.get();
  std::lock_guard lock(handles_mutex_);
  graphs_.emplace(raw, std::move(g));
  return raw;
}

void Runtime::check_graph(const lr_graph_t* graph) {
  std::lock_guard lock(handles_mutex_);
  if (!graph || !graphs_.count(graph)) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "invalid or destroyed graph handle");
}

void Runtime::destroy_graph(lr_graph_t* graph) {
  std::unique_ptr<lr_graph_t> owned;
  std::lock_guard lock(handles_mutex_);
  auto it = graphs_.find(graph);
  if (!graph || it == graphs_.end()) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "invalid or destroyed graph handle");
  owned = std::move(it->second);
  graphs_.erase(it);
}

void Runtime::check_graph_exec(const lr_graph_exec_t* exec) {
  std::lock_guard lock(handles_mutex_);
  if (!exec || !graph_execs_.count(exec))
    LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "invalid or destroyed graph exec handle");
}

lr_graph_exec_t* Runtime::instantiate_graph(lr_graph_t* graph, const lr_graph_instantiate_options_t* options) {
  check_graph(graph);
  uint32_t max_lanes = LR_GRAPH_DEFAULT_MAX_LANES;
  bool patch_waits = false;
  if (options) {
    if (options->max_lanes > kMaxLanes)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "max_lanes is {}; at most {} lanes are supported", options->max_lanes,
                 kMaxLanes);
    if (options->max_lanes) max_lanes = options->max_lanes;
    if (options->flags & ~uint32_t(LR_GRAPH_PATCH_WAITS))
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "unknown instantiate flags {:#x}", options->flags);
    patch_waits = options->flags & LR_GRAPH_PATCH_WAITS;
  }
  const uint32_t max_in_flight = default_max_in_flight();
  DeviceState& state = *graph->device;
  Device& device = opened(state);

  auto exec = std::make_unique<lr_graph_exec_t>();
  exec->device = &state;
  exec->patch_waits = patch_waits;
  {
    std::lock_guard lock(graph->mutex);
    graph::DeriveOptions derive_options;
    derive_options.drop_edge = drop_edge_for_test();
    exec->checked_free_epoch = state.free_epoch.load();
    graph::Derived derived = graph::derive(graph->graph, allocation_table(state), derive_options);
    check_launch_limits(graph->graph, device.properties());
    graph::Lanes lanes = graph::assign_lanes(derived, max_lanes);
    exec->exec = device.instantiate_graph(graph::Lowering{graph->graph, derived, lanes, max_in_flight});
    exec->base_plan = graph::make_plan(graph->graph, derived, lanes, max_lanes);
    describe_exec(*exec);
    exec->nodes = graph->graph.nodes();
    exec->accesses = std::move(derived.accesses);
    for (const auto& use : graph->modules) exec->modules.emplace_back(use.module());
  }
  std::shared_ptr<lr_graph_exec_t> shared = std::move(exec);
  lr_graph_exec_t* raw = shared.get();
  {
    std::lock_guard lock(state.mutex);
    state.graph_execs.emplace(raw, shared);
  }
  std::lock_guard lock(handles_mutex_);
  graph_execs_.emplace(raw, std::move(shared));
  return raw;
}

void Runtime::destroy_graph_exec(lr_graph_exec_t* exec) {
  check_graph_exec(exec);
  std::shared_ptr<lr_graph_exec_t> owned;
  {
    std::lock_guard lock(handles_mutex_);
    auto it = graph_execs_.find(exec);
    if (it == graph_execs_.end()) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "graph exec handle destroyed concurrently");
    owned = std::move(it->second);
    graph_execs_.erase(it);
  }
  {
    std::lock_guard lock(owned->device->mutex);
    owned->device->graph_execs.erase(exec);
  }
  // Waiting first: the replays still running use the exec's queues, events
  // and argument copies. Their error reaches the caller after the handle is
  // gone, as with lr_queue_destroy.
  std::exception_ptr error;
  try {
    std::lock_guard lock(owned->mutex);
    owned->exec->synchronize();
  } catch (...) {
    error = std::current_exception();
  }
  // A drain on another thread may still hold a share, and destroys the exec
  // when it lets go; the modules are released now (no replay can start any
  // more, and the last one was waited for), so the module can be destroyed
  // as soon as this returns.
  {
    std::lock_guard lock(owned->mutex);
    owned->modules.clear();
  }
  owned.reset();
  if (error) std::rethrow_exception(error);
}

void Runtime::launch_graph(lr_graph_exec_t* exec, lr_queue_t* queue, lr_event_t* completion) {
  check_graph_exec(exec);
  DeviceState& state = *exec->device;
  if (queue) {
    check_queue(queue);
    if (queue->device != &state)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "the exec belongs to device {} but the queue to device {}", state.index,
                 queue->device->index);
  }
  if (completion) {
    check_event(completion);
    if (completion->device != &state)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "the completion event belongs to another device");
  }
  std::lock_guard lock(exec->mutex);
  // A buffer freed since the last look would be used after its free:
  // re-check every range the graph declared (only after an lr_free).
  const uint64_t epoch = state.free_epoch.load();
  if (epoch != exec->checked_free_epoch) {
    graph::check_still_allocated(exec->nodes, exec->accesses, allocation_table(state));
    exec->checked_free_epoch = epoch;
  }
  // Counted once submitted (SubmitScope), so a concurrent drain that read the
  // count earlier does not take this replay as finished.
  if (queue) {
    SubmitScope submitted(queue->submissions);
    exec->exec->launch(*queue->queue, completion ? completion->event.get() : nullptr);
  } else {
    SubmitScope submitted(state.default_queue_submissions);
    exec->exec->launch(*state.default_queue, completion ? completion->event.get() : nullptr);
  }
  exec->replays.fetch_add(1, std::memory_order_relaxed);
  if (completion) completion->recorded.store(true);
}

void Runtime::set_graph_max_in_flight(lr_graph_exec_t* exec, uint32_t count) {
  check_graph_exec(exec);
  check_max_in_flight(count, "max_in_flight");
  std::lock_guard lock(exec->mutex);
  exec->exec->set_max_in_flight(count ? count : LR_GRAPH_DEFAULT_MAX_IN_FLIGHT);
  describe_exec(*exec);
}

lr_graph_exec_stats_t Runtime::graph_stats(lr_graph_exec_t* exec) {
  check_graph_exec(exec);
  // No exec lock: a launch waiting for a replay holds it.
  lr_graph_exec_stats_t stats{};
  stats.replays = exec->replays.load(std::memory_order_relaxed);
  stats.launch_waits = exec->exec->counters.launch_waits.load(std::memory_order_relaxed);
  stats.max_in_flight = exec->exec->max_in_flight();
  stats.peak_in_flight = exec->exec->counters.peak_in_flight.load(std::memory_order_relaxed);
  return stats;
}

std::string Runtime::graph_plan(lr_graph_exec_t* exec) {
  check_graph_exec(exec);
  std::lock_guard lock(exec->mutex);
  return exec->plan_json;
}

void Runtime::set_graph_kernargs(lr_graph_exec_t* exec, uint32_t node, size_t offset,
                                 std::span<const std::byte> bytes) {
  check_graph_exec(exec);
  std::lock_guard lock(exec->mutex);
  if (node >= exec->nodes.size())
    LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "node {} does not exist: the graph had {} nodes", node, exec->nodes.size());
  graph::Node& n = exec->nodes[node];
  if (n.kind() != graph::NodeKind::Kernel)
    LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "{} is not a kernel node: only kernel arguments can be patched",
               graph::describe_node(exec->nodes, node));
  auto& step = std::get<graph::KernelStep>(n.step);
  if (offset > step.args.size() || bytes.size() > step.args.size() - offset)
    LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "{}: bytes [{}, {}) lie outside its {} bytes of explicit arguments",
               graph::describe_node(exec->nodes, node), offset, offset + bytes.size(), step.args.size());
  if (bytes.empty()) return;
  if (graph::touches_pointer_args(step, offset, bytes.size())) {
    // A new pointer must stay inside the node's declared ranges, or the
    // derived edges would no longer describe what the kernel touches.
    std::vector<std::byte> patched = step.args;
    std::memcpy(patched.data() + offset, bytes.data(), bytes.size());
    graph::check_kernel_args(exec->nodes, node, patched, exec->accesses[node], allocation_table(*exec->device));
  }
  if (!exec->exec->patches_never_wait() && exec->exec->running()) {
    if (!exec->patch_waits)
      LRRT_THROW(LR_ERROR_BUSY,
                 "a replay of the exec is still running: call lr_graph_exec_synchronize before patching {}, or "
                 "instantiate with LR_GRAPH_PATCH_WAITS to make the patch wait",
                 graph::describe_node(exec->nodes, node));
    exec->exec->synchronize();
  }
  std::memcpy(step.args.data() + offset, bytes.data(), bytes.size());
  exec->exec->set_kernargs(node, offset, bytes);
}

}  // namespace lrrt::rt

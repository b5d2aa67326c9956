// A lowered lrrt graph as a CUDA graph: instantiated once, replayed with
// cuGraphLaunch, patched in place. Node parameters: cuda_graph_nodes.cpp.
#include "cuda_graph.hpp"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cuda_device.hpp"
#include "cuda_executable.hpp"
#include "env.hpp"
#include "cuda_queue.hpp"
#include "error.hpp"
#include "wait.hpp"

namespace lrrt::rt::cuda {

namespace {

using graph::NodeKind;
using graph::PlanSync;

// Largest device block an unaligned fill copies its pattern from; bigger
// fills copy it repeatedly (one memcpy node per block).
constexpr size_t kPatternBlockBytes = size_t(1) << 20;

// How a replay's completion is known (issue 22, part 1), read at
// instantiation and named in the plan. The default is the production
// behaviour; the others exist to be measured against it (replay-gpu-check).
//  LRRT_CUDA_GRAPH_COMPLETION=deferred (default: no event per replay; the
//    event is recorded only when other work follows the replay on its
//    stream, or a wait goes past its spin: CompletionMarker) | node (an
//    event-record node, blocking-sync event) | node-spin (the node, an event
//    without BLOCKING_SYNC) | record | record-spin (cuEventRecord after
//    cuGraphLaunch)
//  LRRT_CUDA_GRAPH_CONTEXT=0: launch skips making the context current (only
//    right on a thread whose current context is already the device's)
//  LRRT_CUDA_GRAPH_KERNEL_PARAMS=1: kernel nodes take kernelParams (a pointer
//    per parameter) instead of one `extra` argument buffer, as stream
//    capture of cuLaunchKernel(kernelParams) makes them
// Measured on the H200 (2026-12-04, one kernel, 16, a diamond of 4, per
// kernel against the native graph): node 2.08x/1.12x/1.38x, node-spin
// 1.26x/1.02x/0.90x, record 1.91x, record-spin 1.19x, no event 1.05x/1.04x/
// 0.92x: the blocking-sync event's record was the small graphs' fixed cost.
struct GraphKnobs {
  enum class Completion { Deferred, Node, NodeSpin, Record, RecordSpin } completion = Completion::Deferred;
  bool make_current = true;
  bool kernel_params = false;
  std::string describe() const {
    static const char* names[] = {"deferred", "node", "node-spin", "record", "record-spin"};
    return fmt::format("completion={} context={} kernel_params={}", names[int(completion)], make_current ? 1 : 0,
                       kernel_params ? 1 : 0);
  }
  bool is_default() const { return completion == Completion::Deferred && make_current && !kernel_params; }
  bool deferred() const { return completion == Completion::Deferred; }
  bool in_graph() const { return completion == Completion::Node || completion == Completion::NodeSpin; }
  bool spin_event() const { return completion == Completion::NodeSpin || completion == Completion::RecordSpin; }
  static GraphKnobs read() {
    GraphKnobs k;
    if (const auto setting = env::text(env::kCudaGraphCompletion)) {
      const std::string& v = *setting;
      if (v == "deferred") k.completion = Completion::Deferred;
      else if (v == "node") k.completion = Completion::Node;
      else if (v == "node-spin") k.completion = Completion::NodeSpin;
      else if (v == "record") k.completion = Completion::Record;
      else if (v == "record-spin") k.completion = Completion::RecordSpin;
      else
        LRRT_THROW(LR_ERROR_INVALID_ARGUMENT,
                   "LRRT_CUDA_GRAPH_COMPLETION='{}': expected deferred, node, node-spin, record or record-spin", v);
    }
    k.make_current = env::flag(env::kCudaGraphContext, true);
    k.kernel_params = env::flag(env::kCudaGraphKernelParams, false);
    return k;
  }
};

// Waits for a replay through its marker: while the marker is pending, the
// stream's own state (nothing was submitted after the replay); the event is
// recorded only when the wait goes on past its spin, to block on it.
class MarkerWait final : public Waitable {
 public:
  MarkerWait(CompletionMarker& marker, std::function<std::string()> describe)
      : marker_(marker), describe_(std::move(describe)) {}
  WaitStatus poll() override {
    std::lock_guard lock(marker_.mutex);
    result_ = marker_.pending_on ? cu().cuStreamQuery(marker_.pending_on->stream()) : cu().cuEventQuery(marker_.event);
    return status();
  }
  WaitStatus block(std::chrono::nanoseconds) override {
    {
      std::lock_guard lock(marker_.mutex);
      result_ = marker_.record_locked();
    }
    if (result_ == CUDA_SUCCESS) result_ = cu().cuEventSynchronize(marker_.event);
    return status();
  }
  Blocking blocking() const override { return Blocking::Unbounded; }
  std::string describe() const override { return describe_(); }
  CUresult result() const { return result_; }

 private:
  WaitStatus status() const { return cu_wait_status(result_); }
  CompletionMarker& marker_;
  std::function<std::string()> describe_;
  CUresult result_ = CUDA_SUCCESS;
};

class CudaGraphExec final : public graph::GraphExec {
 public:
  CudaGraphExec(CudaDevice& device, const graph::Lowering& lowering);
  ~CudaGraphExec() override;

  void launch(Queue& queue, Event* completion) override;
  bool running() override;
  void synchronize() override;
  void drain() override {}  // the replay runs on the launch queue's stream only
  void set_kernargs(uint32_t node, size_t offset, std::span<const std::byte> bytes) override;
  void describe(graph::Plan& plan) const override;

 private:
  struct KernelNode {
    CUgraphNode handle = nullptr;
    CUfunction function = nullptr;
    LaunchConfig config;
    std::vector<std::byte> args;  // the explicit bytes the kernel takes
    std::vector<uint32_t> param_offsets;  // LRRT_CUDA_GRAPH_KERNEL_PARAMS: each explicit parameter's offset
    std::string name;             // "node 3 (kernel 'saxpy')"
  };
  // Calls f(params) with the node's parameters (and argument list) alive.
  template <typename F>
  CUresult with_params(const KernelNode& k, F&& f) const;
  // Throws for a failed driver call while building; sticky faults go to the
  // device.
  void check(CUresult r, std::string_view call, const std::string& node, const char* file, int line);
  void release() noexcept;

  CudaDevice& device_;
  CUgraph graph_ = nullptr;  // kept: exec kernel-node updates name its nodes
  CUgraphExec exec_ = nullptr;
  CUevent done_ = nullptr;   // the replay's completion: deferred (marker_), a node, or recorded after the launch
  std::shared_ptr<CompletionMarker> marker_ = std::make_shared<CompletionMarker>();
  std::vector<KernelNode> kernels_;
  std::vector<int32_t> kernel_of_node_;  // node -> index into kernels_, -1 for copies and fills
  std::vector<void*> pattern_blocks_;    // device memory, for fills no memset can do
  uint32_t kernel_nodes_ = 0, memcpy_nodes_ = 0, memset_nodes_ = 0, dependencies_ = 0;
  std::string summary_;        // "CUDA graph, N kernel nodes, ..."
  std::string kernel_names_;   // for fault messages: "'saxpy' (...)"
  const std::string* last_kernel_ = nullptr;  // noted on the device at each launch
  std::vector<PlanSync> sync_;
  std::vector<std::pair<uint32_t, uint32_t>> programmatic_;  // (from, to) node pairs joined programmatically

  std::mutex mutex_;
  bool launched_ = false;
  CUstream last_stream_ = nullptr;
  GraphKnobs knobs_ = GraphKnobs::read();
};

#define LRRT_GRAPH_CHECK(call, node) check(cu_graph().call, #call, (node), __FILE__, __LINE__)

void CudaGraphExec::check(CUresult r, std::string_view call, const std::string& node, const char* file, int line) {
  if (r == CUDA_SUCCESS) return;
  const std::string what = fmt::format("{}{}{}", node, node.empty() ? "" : ": ", call_name(call));
  if (cu_is_sticky_fault(r)) device_.fail(r, what, "", file, line);
  throw_cu_error(r, LR_ERROR_RUNTIME, fmt::format("building the CUDA graph, {}", what), file, line);
}

template <typename F>
CUresult CudaGraphExec::with_params(const KernelNode& k, F&& f) const {
  ArgumentBuffer arguments(k.args);
  CUDA_KERNEL_NODE_PARAMS params = kernel_node_params(k.function, k.config, arguments.extra());
  std::vector<void*> pointers;
  if (knobs_.kernel_params && !k.param_offsets.empty()) {
    for (uint32_t off : k.param_offsets) pointers.push_back(const_cast<std::byte*>(k.args.data()) + off);
    params.extra = nullptr;
    params.kernelParams = pointers.data();
  }
  return f(params);
}

CudaGraphExec::CudaGraphExec(CudaDevice& device, const graph::Lowering& lowering) : device_(device) {
  const auto& nodes = lowering.graph.nodes();
  const graph::Derived& d = lowering.derived;
  const uint32_t n = d.node_count;
  uint32_t flagged = 0;  // kernel nodes recorded with LR_KERNEL_WAITS_FOR_PRODUCER
  for (uint32_t v = 0; v < n; ++v)
    flagged += nodes[v].kind() == NodeKind::Kernel && std::get<graph::KernelStep>(nodes[v].step).waits_for_producer;
  device_.make_current();
  try {
    if (n != 0) LRRT_GRAPH_CHECK(cuGraphCreate(&graph_, 0), std::string());
    kernel_of_node_.assign(n, -1);
    std::vector<std::vector<CUgraphNode>> handles(n);  // what a successor depends on
    std::vector<CUgraphNode> deps;
    std::vector<std::string> names;
    // Programmatic edges (CUDA 12.3+ edge data, sm_90+): between two kernels
    // that both wait for their producer (LR_KERNEL_WAITS_FOR_PRODUCER), the
    // consumer may start while the producer drains; the consumer waits for it
    // before touching memory, and the producer waited for its own producers,
    // so what the reduction removed stays ordered. Every other edge is full.
    auto waits = [&](uint32_t v) {
      return nodes[v].kind() == NodeKind::Kernel && std::get<graph::KernelStep>(nodes[v].step).waits_for_producer;
    };
    const bool pdl = device_.programmatic_launch() && cu_graph().cuGraphAddDependencies != nullptr;
    std::vector<CUgraphNode> prog_from, prog_to;
    for (uint32_t v : d.order) {
      const std::string node_name = graph::describe_node(nodes, v);
      deps.clear();
      std::vector<uint32_t> programmatic;
      for (uint32_t p : d.preds[v]) {
        if (pdl && waits(v) && waits(p)) {
          programmatic.push_back(p);
          continue;
        }
        deps.insert(deps.end(), handles[p].begin(), handles[p].end());
      }
      std::sort(deps.begin(), deps.end());
      deps.erase(std::unique(deps.begin(), deps.end()), deps.end());  // the driver refuses duplicates
      switch (nodes[v].kind()) {
        case NodeKind::Kernel: {
          const auto& step = std::get<graph::KernelStep>(nodes[v].step);
          auto& kernel = static_cast<CudaKernel&>(*step.kernel);
          KernelNode k;
          k.function = kernel.function();
          k.config = step.config;
          k.args = step.args;
          k.name = node_name;
          // The explicit bytes only (the core accepts trailing padding).
          if (const KernelInfo& info = kernel.info(); info.has_arg_layout) {
            k.args.resize(std::min<size_t>(k.args.size(), kernel.param_bytes()));
            if (knobs_.kernel_params)
              for (const auto& a : info.args)
                if (a.offset + a.size <= k.args.size()) k.param_offsets.push_back(a.offset);
          }
          if (k.config.dynamic_shared_bytes > 48 * 1024) kernel.ensure_dynamic_shared(k.config.dynamic_shared_bytes);
          CUgraphNode h = nullptr;
          CUresult r = with_params(k, [&](const CUDA_KERNEL_NODE_PARAMS& params) {
            return cu_graph().cuGraphAddKernelNode(&h, graph_, deps.data(), deps.size(), &params);
          });
          check(r, "cuGraphAddKernelNode", node_name, __FILE__, __LINE__);
          k.handle = h;
          handles[v] = {h};
          for (uint32_t p : programmatic) {
            prog_from.push_back(handles[p].front());
            prog_to.push_back(h);
            programmatic_.emplace_back(p, v);
          }
          kernel_of_node_[v] = int32_t(kernels_.size());
          const std::string& kname = kernel.info().name;
          if (std::find(names.begin(), names.end(), kname) == names.end()) names.push_back(kname);
          last_kernel_ = &kname;
          kernels_.push_back(std::move(k));
          ++kernel_nodes_;
          break;
        }
        case NodeKind::Copy: {
          const auto& c = std::get<graph::CopyStep>(nodes[v].step);
          const void* host = c.kind == CopyKind::HostToDevice   ? c.src
                             : c.kind == CopyKind::DeviceToHost ? static_cast<const void*>(c.dst)
                                                                : nullptr;
          if (host && !device_.is_pinned(host, c.size))
            sync_.push_back({"pageable", int64_t(v),
                             "the host side is pageable memory: CUDA stages the copy through its own "
                             "pinned buffer when the node runs (pinned memory, lr_host_malloc, is faster)"});
          CUDA_MEMCPY3D params = memcpy_node_params(c.dst, c.src, c.size, c.kind);
          CUgraphNode h = nullptr;
          LRRT_GRAPH_CHECK(cuGraphAddMemcpyNode(&h, graph_, deps.data(), deps.size(), &params, device_.context()),
                           node_name);
          handles[v] = {h};
          ++memcpy_nodes_;
          break;
        }
        case NodeKind::Fill: {
          const auto& f = std::get<graph::FillStep>(nodes[v].step);
          if (auto shape = memset_shape(reinterpret_cast<uintptr_t>(f.dst), f.size, f.pattern, f.pattern_size)) {
            CUDA_MEMSET_NODE_PARAMS params = memset_node_params(f.dst, *shape);
            CUgraphNode h = nullptr;
            LRRT_GRAPH_CHECK(
                cuGraphAddMemsetNode(&h, graph_, deps.data(), deps.size(), &params, device_.context()), node_name);
            handles[v] = {h};
            ++memset_nodes_;
            if (shape->element_size != f.pattern_size)
              sync_.push_back({"memset", int64_t(v),
                               fmt::format("a {}-byte pattern written as {}-byte elements", f.pattern_size,
                                           shape->element_size)});
            break;
          }
          // A 2- or 4-byte pattern at an address no memset element fits:
          // copies from a device block holding the pattern.
          const size_t block = std::min(kPatternBlockBytes, f.size);
          std::vector<std::byte> pattern(block);
          for (size_t off = 0; off < block; off += f.pattern_size) std::memcpy(pattern.data() + off, &f.pattern, f.pattern_size);
          void* device_block = device_.allocate(block);
          pattern_blocks_.push_back(device_block);
          device_.copy_sync(device_block, pattern.data(), block, CopyKind::HostToDevice);
          for (size_t off = 0; off < f.size; off += block) {
            CUDA_MEMCPY3D params = memcpy_node_params(static_cast<std::byte*>(f.dst) + off, device_block,
                                                      std::min(block, f.size - off), CopyKind::DeviceToDevice);
            CUgraphNode h = nullptr;
            LRRT_GRAPH_CHECK(
                cuGraphAddMemcpyNode(&h, graph_, deps.data(), deps.size(), &params, device_.context()), node_name);
            handles[v].push_back(h);
            ++memcpy_nodes_;
          }
          dependencies_ += uint32_t(deps.size() * (handles[v].size() - 1));
          sync_.push_back({"fill", int64_t(v),
                           fmt::format("no memset fits a {}-byte pattern at this address: {} device-to-device "
                                       "memcpy node(s) from a {}-byte pattern block",
                                       f.pattern_size, handles[v].size(), block)});
          break;
        }
      }
      dependencies_ += uint32_t(deps.size());
    }
    if (!prog_from.empty()) {
      CUgraphEdgeData edge{};
      edge.from_port = CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC;  // at the producer's trigger, or its end
      edge.to_port = CU_GRAPH_KERNEL_NODE_PORT_DEFAULT;
      edge.type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
      std::vector<CUgraphEdgeData> data(prog_from.size(), edge);
      check(cu_graph().cuGraphAddDependencies(graph_, prog_from.data(), prog_to.data(), data.data(), data.size()),
            "cuGraphAddDependencies", fmt::format("{} programmatic edge(s)", data.size()), __FILE__, __LINE__);
      dependencies_ += uint32_t(data.size());
    }
    LRRT_CUDA_CHECK_DEVICE(
        device_, "",
        cuEventCreate(&done_, (knobs_.spin_event() ? 0u : unsigned(CU_EVENT_BLOCKING_SYNC)) | CU_EVENT_DISABLE_TIMING));
    marker_->event = done_;
    if (graph_ && !knobs_.in_graph()) {
      LRRT_GRAPH_CHECK(cuGraphInstantiateWithFlags(&exec_, graph_, 0), std::string());
    } else if (graph_) {
      // The replay's completion is a node of the graph, after every node
      // nothing else follows: one cuGraphLaunch per replay and no separate
      // cuEventRecord (which cost as much as the launch of a small graph).
      deps.clear();
      for (uint32_t v = 0; v < n; ++v)
        if (d.succs[v].empty()) deps.insert(deps.end(), handles[v].begin(), handles[v].end());
      CUgraphNode h = nullptr;
      LRRT_GRAPH_CHECK(cuGraphAddEventRecordNode(&h, graph_, deps.data(), deps.size(), done_), std::string());
      LRRT_GRAPH_CHECK(cuGraphInstantiateWithFlags(&exec_, graph_, 0), std::string());
    }

    for (size_t i = 0; i < names.size() && i < 4; ++i) kernel_names_ += fmt::format("{}'{}'", i ? " or " : "", names[i]);
    if (names.size() > 4) kernel_names_ += fmt::format(" (or one of {} more)", names.size() - 4);
    if (!names.empty()) kernel_names_ += " in a replayed CUDA graph";
  } catch (...) {
    release();
    throw;
  }
  summary_ = fmt::format("CUDA graph, {} kernel nodes, {} memcpy, {} memset, {} edges", kernel_nodes_,
                         memcpy_nodes_, memset_nodes_, dependencies_);
  sync_.insert(sync_.begin(),
               {"graph", -1,
                n == 0 ? std::string("an empty graph: no CUDA graph, an event recorded on the launch stream")
                       : summary_ + " (a dependency per derived edge, explicit edges included); instantiated "
                                    "once with cuGraphInstantiateWithFlags, replayed with cuGraphLaunch on the "
                                    "launch queue's stream"});
  if (lowering.lanes.count > 1)
    sync_.push_back({"lanes", -1,
                     "lanes are not used: the CUDA driver runs independent branches of the graph concurrently"});
  if (flagged)
    sync_.push_back(
        {"programmatic", -1,
         !programmatic_.empty()
             ? fmt::format("{} programmatic edge(s) (CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC from the producer's "
                           "programmatic port) between kernels that wait for their producer; full edges elsewhere",
                           programmatic_.size())
         : !device_.programmatic_launch()
             ? std::string("kernels wait for their producer, but programmatic launch is off (before sm_90, or "
                           "LRRT_CUDA_PDL=0): full edges")
         : cu_graph().cuGraphAddDependencies == nullptr
             ? std::string("kernels wait for their producer, but the driver lacks cuGraphAddDependencies with "
                           "edge data (CUDA 12.3): full edges")
             : std::string("kernels wait for their producer, but no edge joins two of them: full edges")});
  if (!knobs_.is_default())
    sync_.push_back({"test_knobs", -1,
                     fmt::format("bisect knobs (LRRT_CUDA_GRAPH_*): {}; not the production replay", knobs_.describe())});
  sync_.push_back({"order", -1,
                   "a replay launched on another queue than the previous one waits for the previous replay's "
                   "event (cuStreamWaitEvent)"});
  sync_.push_back(
      {"completion", -1,
       knobs_.deferred()
           ? std::string("deferred: a replay adds only its cuGraphLaunch to the stream; its completion event is "
                         "recorded when other work is submitted to that stream after it, or when a wait goes past "
                         "its spin (until then the stream's own state is the replay's)")
       : knobs_.in_graph() && n != 0
           ? std::string("an event-record node after every node nothing else follows")
           : std::string("an event recorded on the launch stream after each cuGraphLaunch")});
}

void CudaGraphExec::release() noexcept {
  device_.make_current();
  const CudaSymbols& s = cu();
  {
    std::lock_guard lock(marker_->mutex);  // a queue may still hold the marker: never its event again
    marker_->pending_on = nullptr;
    marker_->event = nullptr;
  }
  if (exec_) cu_graph().cuGraphExecDestroy(exec_);
  if (graph_) cu_graph().cuGraphDestroy(graph_);
  if (done_) s.cuEventDestroy(done_);
  exec_ = nullptr;
  graph_ = nullptr;
  done_ = nullptr;
  for (void* block : pattern_blocks_) {
    try {
      device_.free(block);
    } catch (...) {
      // A faulted context: nothing to free into.
    }
  }
  pattern_blocks_.clear();
}

CudaGraphExec::~CudaGraphExec() {
  try {
    synchronize();
  } catch (...) {
    // Reported by lr_graph_exec_destroy, which synchronizes first.
  }
  release();
}

void CudaGraphExec::launch(Queue& queue, Event* completion) {
  std::lock_guard lock(mutex_);
  auto& q = static_cast<CudaQueue&>(queue);
  CUstream stream = q.stream();
  {
    // Another replay's pending marker on this stream is recorded first;
    // this exec's own stays pending (this replay follows it).
    auto submission = q.begin_submission(marker_.get());
    if (knobs_.make_current) device_.make_current();
    // cuGraphLaunch orders launches of one exec itself; the wait says so
    // explicitly and covers the empty graph, which has no CUDA graph.
    if (launched_ && stream != last_stream_) {
      {
        std::lock_guard m(marker_->mutex);
        if (CUresult r = marker_->record_locked(); r != CUDA_SUCCESS)
          device_.fail(r, "cuEventRecord (the previous replay's completion)", kernel_names_, __FILE__, __LINE__);
      }
      LRRT_CUDA_CHECK_DEVICE(device_, kernel_names_, cuStreamWaitEvent(stream, done_, 0));
    }
    if (exec_) {
      CUresult r = cu_graph().cuGraphLaunch(exec_, stream);
      if (r != CUDA_SUCCESS) {
        if (cu_is_sticky_fault(r)) device_.fail(r, "cuGraphLaunch", kernel_names_, __FILE__, __LINE__);
        throw Error(cu_status(r, LR_ERROR_RUNTIME),
                    fmt::format("launching the {} on {} failed (cuGraphLaunch): {} [at {}:{}]", summary_,
                                device_.description(), cu_error_text(r), file_basename(__FILE__), __LINE__));
      }
      if (last_kernel_) device_.note_launch(last_kernel_);
    }
    if (knobs_.deferred())
      q.defer_marker(marker_);
    else if (!exec_ || !knobs_.in_graph())
      LRRT_CUDA_CHECK_DEVICE(device_, kernel_names_, cuEventRecord(done_, stream));
    launched_ = true;
    last_stream_ = stream;
  }
  if (completion) queue.record(*completion);
}

bool CudaGraphExec::running() {
  std::lock_guard lock(mutex_);
  if (!launched_) return false;
  device_.make_current();
  CUresult r;
  {
    std::lock_guard m(marker_->mutex);
    r = marker_->pending_on ? cu().cuStreamQuery(marker_->pending_on->stream()) : cu().cuEventQuery(done_);
  }
  if (r == CUDA_ERROR_NOT_READY) return true;
  if (r != CUDA_SUCCESS) device_.fail(r, "waiting for a CUDA graph replay (query)", kernel_names_, __FILE__, __LINE__);
  return false;
}

void CudaGraphExec::synchronize() {
  std::lock_guard lock(mutex_);
  if (!launched_) return;
  device_.make_current();
  MarkerWait target(*marker_, [&] {
    return fmt::format("a replay of a {} on {}{}", summary_, device_.description(),
                       kernel_names_.empty() ? "" : ", running kernel " + kernel_names_);
  });
  if (rt::wait(target) == WaitStatus::Complete) return;
  device_.fail(target.result(), "waiting for a CUDA graph replay (cuStreamQuery/cuEventSynchronize)", kernel_names_,
               __FILE__, __LINE__);
}

void CudaGraphExec::set_kernargs(uint32_t node, size_t offset, std::span<const std::byte> bytes) {
  std::lock_guard lock(mutex_);
  if (node >= kernel_of_node_.size() || kernel_of_node_[node] < 0) return;  // the core checked: a kernel node
  KernelNode& k = kernels_[size_t(kernel_of_node_[node])];
  if (offset >= k.args.size()) return;  // padding, never passed
  const size_t count = std::min(bytes.size(), k.args.size() - offset);
  std::vector<std::byte> before(k.args.begin() + ptrdiff_t(offset), k.args.begin() + ptrdiff_t(offset + count));
  std::memcpy(k.args.data() + offset, bytes.data(), count);
  device_.make_current();
  CUresult r = with_params(k, [&](const CUDA_KERNEL_NODE_PARAMS& params) {
    return cu_graph().cuGraphExecKernelNodeSetParams(exec_, k.handle, &params);
  });
  if (r == CUDA_SUCCESS) return;
  std::memcpy(k.args.data() + offset, before.data(), count);  // later replays keep the old bytes
  if (cu_is_sticky_fault(r))
    device_.fail(r, fmt::format("{}: cuGraphExecKernelNodeSetParams", k.name), kernel_names_, __FILE__, __LINE__);
  throw Error(cu_status(r, LR_ERROR_RUNTIME),
              fmt::format("{}: patching its arguments in the CUDA graph failed (cuGraphExecKernelNodeSetParams): "
                          "{} [at {}:{}]",
                          k.name, cu_error_text(r), file_basename(__FILE__), __LINE__));
}

void CudaGraphExec::describe(graph::Plan& plan) const {
  plan.lowering = "cuda-graph";
  plan.sync = sync_;
  plan.programmatic.assign(plan.edges.size(), 0);
  for (size_t i = 0; i < plan.edges.size(); ++i)
    for (const auto& [from, to] : programmatic_)
      if (plan.edges[i].from == from && plan.edges[i].to == to) plan.programmatic[i] = 1;
}

#undef LRRT_GRAPH_CHECK

}  // namespace

std::unique_ptr<graph::GraphExec> make_cuda_graph_exec(CudaDevice& device, const graph::Lowering& lowering) {
  if (!cu_graph().available) return nullptr;
  return std::make_unique<CudaGraphExec>(device, lowering);
}

}  // namespace lrrt::rt::cuda

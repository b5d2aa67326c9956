// The cuda backend's native baseline for `lrrt bench` (bench-only,
// include/lrrt/native_baseline.hpp): raw driver calls
// through the backend's symbol table (the library is loaded once), in the
// device's primary context, on a non-blocking stream of its own. Waits are
// the driver's own blocking calls (cuStreamSynchronize), as a CUDA program
// would write them.
//
// Its native graph is what CUDA users build today: stream capture of the
// cuLaunchKernel calls. A serial chain is captured on the baseline's stream;
// independent steps are forked onto streams of their own (an event recorded
// on the origin stream, waited for by the others) and joined back with
// events, as users capture a fork. cuGraphInstantiateWithFlags once,
// cuGraphLaunch per replay, cuStreamSynchronize. Patches go through
// cuGraphExecKernelNodeSetParams on the node each launch created (read with
// cuStreamGetCaptureInfo right after it was captured).
#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

#include "cuda_device.hpp"
#include "cuda_executable.hpp"
#include "cuda_ticketed_launch.hpp"
#include "lrrt/native_baseline.hpp"

namespace lrrt::rt::cuda {
namespace {

CUdeviceptr dptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

class CudaNativeBaseline final : public native::Baseline {
 public:
  explicit CudaNativeBaseline(CudaDevice& device) : device_(device) {
    device_.make_current();
    LRRT_CUDA_CHECK(cu(), LR_ERROR_RUNTIME, cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING));
    LRRT_CUDA_CHECK(cu(), LR_ERROR_RUNTIME,
                    cuEventCreate(&blocking_, CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING));
  }
  ~CudaNativeBaseline() override {
    const CudaSymbols& s = cu();
    device_.make_current();
    for (auto& g : graphs_)
      if (g) release(*g);
    if (stream_) {
      s.cuStreamSynchronize(stream_);
      s.cuStreamDestroy(stream_);
    }
    ticketed_.reset();  // before the modules its kernel node may name
    for (CUstream lane : lanes_) s.cuStreamDestroy(lane);
    for (CUevent e : capture_events_) s.cuEventDestroy(e);
    if (blocking_) s.cuEventDestroy(blocking_);
    for (CUmodule m : modules_) s.cuModuleUnload(m);
  }

  std::string description() const override {
    return "cuLaunchKernel (CU_LAUNCH_PARAM_BUFFER_POINTER) + cuStreamSynchronize; cuMemcpy*/cuMemcpy*Async";
  }

  int load_kernel(std::span<const std::byte> image, std::string_view name) override {
    device_.make_current();
    const CudaSymbols& s = cu();
    // PTX must be NUL-terminated for the driver; cubin/fatbin are used as is.
    std::vector<std::byte> copy(image.begin(), image.end());
    copy.push_back(std::byte{0});
    CUmodule module = nullptr;
    LRRT_CUDA_CHECK(s, LR_ERROR_RUNTIME, cuModuleLoadDataEx(&module, copy.data(), 0, nullptr, nullptr));
    modules_.push_back(module);
    CUfunction f = nullptr;
    std::string n(name);
    LRRT_CUDA_CHECK(s, LR_ERROR_RUNTIME, cuModuleGetFunction(&f, module, n.c_str()));
    functions_.push_back(f);
    return static_cast<int>(functions_.size() - 1);
  }

  void launch(int kernel, lr_dim3_t grid, lr_dim3_t block, std::span<const std::byte> args) override {
    launch_on(stream_, functions_.at(static_cast<size_t>(kernel)), grid, block, args);
  }

  void synchronize() override { LRRT_CUDA_CHECK(cu(), LR_ERROR_RUNTIME, cuStreamSynchronize(stream_)); }
  bool copy_from_peer(Baseline& src_baseline, void* dst, const void* src, size_t size) override {
    auto* peer = dynamic_cast<CudaNativeBaseline*>(&src_baseline);
    if (!peer) return false;
    device_.make_current();
    LRRT_CUDA_CHECK(cu(), LR_ERROR_RUNTIME,
                    cuMemcpyPeerAsync(dptr(dst), device_.context(), dptr(src), peer->device_.context(), size, stream_));
    return true;
  }
  bool synchronize_blocking() override {
    LRRT_CUDA_CHECK(cu(), LR_ERROR_RUNTIME, cuEventRecord(blocking_, stream_));
    LRRT_CUDA_CHECK(cu(), LR_ERROR_RUNTIME, cuEventSynchronize(blocking_));
    return true;
  }

  // With the write's default barrier: the v2 memops API (CUDA 12+) refuses
  // CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER (CUDA_ERROR_INVALID_VALUE), and
  // the v1 API that took it is off unless the driver module enables it
  // (CAN_USE_STREAM_MEM_OPS_V1 = 0 on the H100, driver 580).
  bool synchronize_by_stream_flag() override {
    const CudaSymbols& s = cu();
    if (!s.cuStreamWriteValue32 || !s.cuMemHostGetDevicePointer) return false;
    make_flag();
    const uint32_t ticket = ++flag_ticket_;
    LRRT_CUDA_CHECK(s, LR_ERROR_RUNTIME,
                    cuStreamWriteValue32(stream_, flag_device_, ticket, CU_STREAM_WRITE_VALUE_DEFAULT));
    spin_on_flag(ticket);
    return true;
  }

  // The same word, written by the launch itself: a two-node graph (the
  // kernel, then the write), both nodes re-pointed per launch.
  bool launch_and_wait_by_graph_ticket(int kernel, lr_dim3_t grid, lr_dim3_t block,
                                       std::span<const std::byte> args) override {
    if (!cu().cuMemHostGetDevicePointer || !TicketedLaunch::supported()) return false;
    make_flag();
    if (!ticketed_) ticketed_ = std::make_unique<TicketedLaunch>();
    ArgumentBuffer arguments(args);
    const LaunchConfig config{{grid.x, grid.y, grid.z}, {block.x, block.y, block.z}, 0};
    const uint32_t ticket = flag_ticket_ + 1;
    const char* call = nullptr;
    if (CUresult r = ticketed_->launch(device_.context(), stream_, functions_.at(static_cast<size_t>(kernel)), config,
                                       arguments.extra(), flag_device_, ticket, &call);
        r != CUDA_SUCCESS)
      throw_cu_error(r, LR_ERROR_RUNTIME, call, __FILE__, __LINE__);
    flag_ticket_ = ticket;
    spin_on_flag(ticket);
    return true;
  }

  void make_flag() {
    if (flag_) return;
    const CudaSymbols& s = cu();
    void* word = nullptr;
    LRRT_CUDA_CHECK(s, LR_ERROR_RUNTIME, cuMemHostAlloc(&word, 64, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
    flag_.reset(static_cast<uint32_t*>(word));
    *flag_ = 0;
    LRRT_CUDA_CHECK(s, LR_ERROR_RUNTIME, cuMemHostGetDevicePointer(&flag_device_, word, 0));
  }
  void spin_on_flag(uint32_t ticket) {
    // A stream that faults never writes: after a second, its error is the stream's.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (static_cast<int32_t>(__atomic_load_n(flag_.get(), __ATOMIC_ACQUIRE) - ticket) < 0)
      if (std::chrono::steady_clock::now() > give_up) {
        synchronize();
        break;
      }
  }

  bool copy(void* dst, const void* src, size_t size, lr_memcpy_kind_t kind, bool async) override {
    const CudaSymbols& s = cu();
    switch (kind) {
      case LR_MEMCPY_HOST_TO_DEVICE:
        if (async) LRRT_CUDA_CHECK(s, LR_ERROR_RUNTIME, cuMemcpyHtoDAsync(dptr(dst), src, size, stream_));
        else {
          // From pageable memory cuMemcpyHtoD may return before the DMA
          // landed; wait for the legacy stream so both sides time a
          // completed copy.
          LRRT_CUDA_CHECK(s, LR_ERROR_RUNTIME, cuMemcpyHtoD(dptr(dst), src, size));
          LRRT_CUDA_CHECK(s, LR_ERROR_RUNTIME, cuStreamSynchronize(nullptr));
        }
        return true;
      case LR_MEMCPY_DEVICE_TO_HOST:
        if (async) LRRT_CUDA_CHECK(s, LR_ERROR_RUNTIME, cuMemcpyDtoHAsync(dst, dptr(src), size, stream_));
        else LRRT_CUDA_CHECK(s, LR_ERROR_RUNTIME, cuMemcpyDtoH(dst, dptr(src), size));
        return true;
      case LR_MEMCPY_DEVICE_TO_DEVICE:
        if (async) LRRT_CUDA_CHECK(s, LR_ERROR_RUNTIME, cuMemcpyDtoDAsync(dptr(dst), dptr(src), size, stream_));
        else LRRT_CUDA_CHECK(s, LR_ERROR_RUNTIME, cuMemcpyDtoD(dptr(dst), dptr(src), size));
        return true;
    }
    return false;
  }

  bool has_graph() const override {
    const CudaSymbols& s = cu();
    return s.cuStreamBeginCapture && s.cuStreamEndCapture && s.cuGraphInstantiateWithFlags && s.cuGraphLaunch &&
           s.cuGraphExecDestroy && s.cuGraphDestroy;
  }
  std::string graph_description() const override {
    return "stream capture of cuLaunchKernel (cuStreamBeginCapture/EndCapture, forks on streams + events), "
           "cuGraphInstantiateWithFlags, cuGraphLaunch + cuStreamSynchronize; cuGraphExecKernelNodeSetParams";
  }

  int build_graph(std::span<const native::GraphStep> steps) override {
    if (!has_graph()) LRRT_THROW(LR_ERROR_NOT_SUPPORTED, "the CUDA driver lacks the stream-capture graph API");
    if (steps.empty()) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "a native graph needs at least one step");
    const CudaSymbols& s = cu();
    device_.make_current();
    const size_t n = steps.size();
    // Lanes: a step continues the lane whose last step it waits for, else
    // takes a lane of its own (lane 0 is the capturing stream).
    std::vector<size_t> lane(n);
    std::vector<size_t> lane_last;  // per lane: its last step so far
    std::vector<bool> signalled(n, false);  // another lane waits for this step
    for (size_t i = 0; i < n; ++i) {
      size_t chosen = SIZE_MAX;
      for (size_t d : steps[i].after) {
        if (d >= i) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "native graph step {} waits for a later step {}", i, d);
        if (chosen == SIZE_MAX && lane_last[lane[d]] == d) chosen = lane[d];
      }
      if (chosen == SIZE_MAX) {
        chosen = lane_last.size();
        lane_last.push_back(i);
      }
      lane[i] = chosen;
      lane_last[chosen] = i;
      for (size_t d : steps[i].after)
        if (lane[d] != chosen) signalled[d] = true;
    }
    const size_t lanes = lane_last.size();
    while (lanes_.size() + 1 < lanes) {
      CUstream extra = nullptr;
      LRRT_CUDA_CHECK(s, LR_ERROR_RUNTIME, cuStreamCreate(&extra, CU_STREAM_NON_BLOCKING));
      lanes_.push_back(extra);
    }
    auto stream_of = [&](size_t l) { return l == 0 ? stream_ : lanes_[l - 1]; };
    // Events: the fork, one per step another lane waits for, one per lane's join.
    std::vector<size_t> event_of(n, SIZE_MAX);
    size_t events = 1 + lanes;
    for (size_t i = 0; i < n; ++i)
      if (signalled[i]) event_of[i] = events++;
    while (capture_events_.size() < events) {
      CUevent e = nullptr;
      LRRT_CUDA_CHECK(s, LR_ERROR_RUNTIME, cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
      capture_events_.push_back(e);
    }

    auto g = std::make_unique<Graph>();
    for (const auto& step : steps) g->steps.push_back({functions_.at(static_cast<size_t>(step.kernel)), step.grid,
                                                      step.block, step.args, nullptr});
    // Thread-local mode: lrrt's own threads may call the driver meanwhile.
    LRRT_CUDA_CHECK(s, LR_ERROR_RUNTIME, cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    try {
      const bool record_nodes = capture_info_usable();
      if (lanes > 1) {
        LRRT_CUDA_CHECK(s, LR_ERROR_RUNTIME, cuEventRecord(capture_events_[0], stream_));
        for (size_t l = 1; l < lanes; ++l)
          LRRT_CUDA_CHECK(s, LR_ERROR_RUNTIME, cuStreamWaitEvent(stream_of(l), capture_events_[0], 0));
      }
      for (size_t i = 0; i < n; ++i) {
        CUstream on = stream_of(lane[i]);
        for (size_t d : steps[i].after)
          if (lane[d] != lane[i])
            LRRT_CUDA_CHECK(s, LR_ERROR_RUNTIME, cuStreamWaitEvent(on, capture_events_[event_of[d]], 0));
        Step& step = g->steps[i];
        launch_on(on, step.function, step.grid, step.block, step.args);
        if (record_nodes) step.node = captured_node(on);
        if (signalled[i]) LRRT_CUDA_CHECK(s, LR_ERROR_RUNTIME, cuEventRecord(capture_events_[event_of[i]], on));
      }
      for (size_t l = 1; l < lanes; ++l) {
        LRRT_CUDA_CHECK(s, LR_ERROR_RUNTIME, cuEventRecord(capture_events_[l], stream_of(l)));
        LRRT_CUDA_CHECK(s, LR_ERROR_RUNTIME, cuStreamWaitEvent(stream_, capture_events_[l], 0));
      }
    } catch (...) {
      CUgraph abandoned = nullptr;
      s.cuStreamEndCapture(stream_, &abandoned);
      if (abandoned) s.cuGraphDestroy(abandoned);
      throw;
    }
    LRRT_CUDA_CHECK(s, LR_ERROR_RUNTIME, cuStreamEndCapture(stream_, &g->graph));
    try {
      LRRT_CUDA_CHECK(s, LR_ERROR_RUNTIME, cuGraphInstantiateWithFlags(&g->exec, g->graph, 0));
    } catch (...) {
      release(*g);
      throw;
    }
    graphs_.push_back(std::move(g));
    return static_cast<int>(graphs_.size() - 1);
  }

  void launch_graph(int graph) override {
    LRRT_CUDA_CHECK(cu(), LR_ERROR_RUNTIME, cuGraphLaunch(this->graph(graph).exec, stream_));
  }

  void patch_graph(int graph, size_t index, size_t offset, std::span<const std::byte> bytes) override {
    Graph& g = this->graph(graph);
    if (index >= g.steps.size()) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "native graph has no step {}", index);
    Step& step = g.steps[index];
    if (!step.node || !cu().cuGraphExecKernelNodeSetParams)
      LRRT_THROW(LR_ERROR_NOT_SUPPORTED, "this CUDA driver cannot name captured nodes (cuStreamGetCaptureInfo_v3)");
    if (offset + bytes.size() > step.args.size())
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "patch of bytes [{}, {}) outside step {}'s {} argument bytes", offset,
                 offset + bytes.size(), index, step.args.size());
    std::copy(bytes.begin(), bytes.end(), step.args.begin() + std::ptrdiff_t(offset));
    ArgumentBuffer arguments(step.args);
    CUDA_KERNEL_NODE_PARAMS params{};
    params.func = step.function;
    params.gridDimX = step.grid.x;
    params.gridDimY = step.grid.y;
    params.gridDimZ = step.grid.z;
    params.blockDimX = step.block.x;
    params.blockDimY = step.block.y;
    params.blockDimZ = step.block.z;
    params.sharedMemBytes = 0;
    params.extra = arguments.extra();
    LRRT_CUDA_CHECK(cu(), LR_ERROR_RUNTIME, cuGraphExecKernelNodeSetParams(g.exec, step.node, &params));
  }

  void destroy_graph(int graph) override {
    release(this->graph(graph));
    graphs_.at(static_cast<size_t>(graph)).reset();
  }

  void* alloc_device(size_t size) override {
    device_.make_current();
    CUdeviceptr p = 0;
    LRRT_CUDA_CHECK(cu(), LR_ERROR_RUNTIME, cuMemAlloc(&p, size));
    return reinterpret_cast<void*>(p);
  }
  void free_device(void* ptr) override {
    if (ptr) cu().cuMemFree(dptr(ptr));
  }
  void* alloc_pinned(size_t size) override {
    device_.make_current();
    void* p = nullptr;
    LRRT_CUDA_CHECK(cu(), LR_ERROR_RUNTIME, cuMemHostAlloc(&p, size, CU_MEMHOSTALLOC_PORTABLE));
    return p;
  }
  void free_pinned(void* ptr) override {
    if (ptr) cu().cuMemFreeHost(ptr);
  }

 private:
  struct Step {
    CUfunction function;
    lr_dim3_t grid, block;
    std::vector<std::byte> args;  // as last set (patches change them)
    CUgraphNode node;             // its node in the captured graph (null: unknown)
  };
  struct Graph {
    std::vector<Step> steps;
    CUgraph graph = nullptr;
    CUgraphExec exec = nullptr;
  };
  Graph& graph(int handle) {
    if (handle < 0 || size_t(handle) >= graphs_.size() || !graphs_[size_t(handle)])
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "no native graph {}", handle);
    return *graphs_[size_t(handle)];
  }
  // Waits for the graph's replays (they run on the baseline's stream), then
  // destroys the exec and the graph.
  void release(Graph& g) {
    const CudaSymbols& s = cu();
    device_.make_current();
    s.cuStreamSynchronize(stream_);
    if (g.exec) s.cuGraphExecDestroy(g.exec);
    if (g.graph) s.cuGraphDestroy(g.graph);
    g.exec = nullptr;
    g.graph = nullptr;
  }

  // The same call lrrt makes: one packed argument buffer.
  void launch_on(CUstream stream, CUfunction f, lr_dim3_t grid, lr_dim3_t block, std::span<const std::byte> args) {
    ArgumentBuffer arguments(args);
    LRRT_CUDA_CHECK(cu(), LR_ERROR_RUNTIME,
                    cuLaunchKernel(f, grid.x, grid.y, grid.z, block.x, block.y, block.z, 0, stream, nullptr,
                                   arguments.extra()));
  }

  // cuStreamGetCaptureInfo's signature follows the headers' version (_v3
  // since 12.3); the resolver asks for min(driver, headers), so it matches
  // only when the driver is at least as new as the headers' spelling.
  static bool capture_info_usable() {
#if CUDA_VERSION >= 12030
    return cu().cuStreamGetCaptureInfo && cu().driver_version >= 12030;
#else
    return false;
#endif
  }
  // The node the last captured call on `stream` created: the capture's
  // current dependency set is exactly that node.
  CUgraphNode captured_node(CUstream stream) {
#if CUDA_VERSION >= 12030
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    const CUgraphNode* deps = nullptr;
    const CUgraphEdgeData* edges = nullptr;
    size_t count = 0;
    LRRT_CUDA_CHECK(cu(), LR_ERROR_RUNTIME,
                    cuStreamGetCaptureInfo(stream, &status, nullptr, nullptr, &deps, &edges, &count));
    if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE || count != 1)
      LRRT_THROW(LR_ERROR_RUNTIME, "stream capture: expected one node after a launch, found {}", count);
    return deps[0];
#else
    (void)stream;
    return nullptr;
#endif
  }

  CudaDevice& device_;
  CUstream stream_ = nullptr;
  CUevent blocking_ = nullptr;
  struct FreeHost {
    void operator()(uint32_t* p) const { cu().cuMemFreeHost(p); }
  };
  std::unique_ptr<uint32_t, FreeHost> flag_;  // the stream-written completion word
  CUdeviceptr flag_device_ = 0;
  uint32_t flag_ticket_ = 0;
  std::unique_ptr<TicketedLaunch> ticketed_;  // launch_and_wait_by_graph_ticket's graph
  std::vector<CUmodule> modules_;
  std::vector<CUfunction> functions_;
  std::vector<std::unique_ptr<Graph>> graphs_;
  std::vector<CUstream> lanes_;          // capture forks beyond the baseline's stream
  std::vector<CUevent> capture_events_;  // fork, join and cross-lane events of a capture
};

}  // namespace
}  // namespace lrrt::rt::cuda

namespace lrrt::rt {

std::unique_ptr<native::Baseline> make_cuda_native_baseline(Device& device) {
  auto* d = dynamic_cast<cuda::CudaDevice*>(&device);
  if (!d) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "not a cuda device");
  return std::make_unique<cuda::CudaNativeBaseline>(*d);
}

}  // namespace lrrt::rt

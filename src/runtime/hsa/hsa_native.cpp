// The hsa backend's native baseline for `lrrt bench` (bench-only,
// include/lrrt/native_baseline.hpp): what a program written
// against ROCr directly does for one dispatch -- reserve a packet slot, write
// the AQL kernel dispatch packet, publish its header, store the doorbell --
// and a wait on the completion signal. It uses the backend's loaded library
// (no second dlopen) and its code-object loader, but a queue, kernarg ring
// and signals of its own. Copies: hsa_amd_memory_async_copy between pinned
// and device memory (ROCr cannot copy pageable memory asynchronously).
//
// Its native graph is the raw AQL loop a ROCr program would write for a
// prepared sequence: every packet image and its kernarg segment built once;
// a replay reserves the whole block with one write-index add, copies the
// packet bodies, publishes each header last and rings the doorbell once. A
// packet carries the barrier bit when one of its dependencies lies in the
// open run of unbarriered packets since the last barrier (the first packet
// always has it: a replay follows earlier work on the queue); fences stay at
// system scope, as in launch(). The completion signal sits on the last packet
// when that one has the barrier bit, else on a terminal barrier-AND packet.
#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <vector>

#include "aql.hpp"
#include "hsa_executable.hpp"
#include "kernargs.hpp"
#include "lrrt/native_baseline.hpp"

namespace lrrt::rt::hsa {
namespace {

constexpr size_t kSlots = 256;
constexpr size_t kKernargBytes = 512;

class HsaNativeBaseline final : public native::Baseline {
 public:
  explicit HsaNativeBaseline(HsaDevice& device) : device_(device), api_(device.api()) {
    LRRT_HSA_CHECK(api_, LR_ERROR_RUNTIME, hsa_queue_create(device_.agent(), device_.queue_size(),
                                                            HSA_QUEUE_TYPE_SINGLE, nullptr, nullptr,
                                                            UINT32_MAX, UINT32_MAX, &queue_));
    kernargs_ = static_cast<std::byte*>(device_.allocate_kernarg(kSlots * kKernargBytes));
    signals_.resize(kSlots);
    for (auto& s : signals_) LRRT_HSA_CHECK(api_, LR_ERROR_RUNTIME, hsa_signal_create(0, 0, nullptr, &s));
  }
  ~HsaNativeBaseline() override {
    try {
      synchronize();
    } catch (...) {
    }
    for (auto& g : graphs_)
      if (g) release(*g);
    for (auto& s : signals_) api_.hsa_signal_destroy(s);
    for (auto& s : copy_signals_) api_.hsa_signal_destroy(s);
    if (queue_) api_.hsa_queue_destroy(queue_);
    device_.free_kernarg(kernargs_);
  }

  std::string description() const override {
    return "raw AQL dispatch packet + doorbell, hsa_signal_wait_scacquire (active); "
           "hsa_amd_memory_async_copy";
  }

  int load_kernel(std::span<const std::byte> image, std::string_view name) override {
    modules_.push_back(std::make_unique<HsaModule>(device_, image));
    kernels_.push_back(&dynamic_cast<HsaKernel&>(modules_.back()->kernel(name)));
    return static_cast<int>(kernels_.size() - 1);
  }

  void launch(int kernel, lr_dim3_t grid_dims, lr_dim3_t block_dims, std::span<const std::byte> args) override {
    const Dim3 grid{grid_dims.x, grid_dims.y, grid_dims.z}, block{block_dims.x, block_dims.y, block_dims.z};
    const HsaKernel& k = *kernels_.at(static_cast<size_t>(kernel));
    const size_t slot = next_ % kSlots;
    hsa_signal_t completion = signals_[slot];
    if (next_ >= kSlots) wait(completion);  // the slot's previous dispatch
    std::byte* kernarg = kernargs_ + slot * kKernargBytes;
    LaunchConfig config{grid, block, 0};
    // Kernel arguments are written per dispatch, as a program would; the
    // hidden block is packed once per configuration.
    if (packed_kernel_ != kernel || packed_config_.grid.x != grid.x || packed_config_.grid.y != grid.y ||
        packed_config_.grid.z != grid.z || packed_config_.block.x != block.x ||
        packed_config_.block.y != block.y || packed_config_.block.z != block.z ||
        packed_args_.size() != args.size() ||
        (!args.empty() && std::memcmp(packed_args_.data(), args.data(), args.size()) != 0)) {
      packed_.assign(std::max<size_t>(k.kernarg_size, args.size()), std::byte{0});
      if (packed_.size() > kKernargBytes) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "kernarg segment too large");
      pack_kernargs(k.info_, config, args, packed_);
      packed_kernel_ = kernel;
      packed_config_ = config;
      packed_args_.assign(args.begin(), args.end());
    }
    std::memcpy(kernarg, packed_.data(), packed_.size());
    api_.hsa_signal_store_relaxed(completion, 1);

    uint64_t index = api_.hsa_queue_add_write_index_relaxed(queue_, 1);
    while (index - api_.hsa_queue_load_read_index_scacquire(queue_) >= queue_->size) {
    }
    auto* p = reinterpret_cast<hsa_kernel_dispatch_packet_t*>(
        static_cast<std::byte*>(queue_->base_address) + (index & (queue_->size - 1)) * kAqlPacketBytes);
    encode_dispatch(p, config, k.kernel_object, kernarg, k.group_segment_size, k.private_segment_size,
                    completion);
    publish_packet(p, kDispatchHeader, dispatch_setup(hsa::grid_dims(config)));
    api_.hsa_signal_store_screlease(queue_->doorbell_signal, hsa_signal_value_t(index));
    last_ = completion;
    ++next_;
  }

  void synchronize() override { synchronize_in(HSA_WAIT_STATE_ACTIVE); }
  bool synchronize_blocking() override {
    synchronize_in(HSA_WAIT_STATE_BLOCKED);
    return true;
  }

  void synchronize_in(hsa_wait_state_t state) {
    if (last_.handle) wait(last_, state);
    for (auto& s : copy_signals_) wait(s, state);
    free_copy_signals_.insert(free_copy_signals_.end(), pending_copies_.begin(), pending_copies_.end());
    pending_copies_.clear();
  }

  bool copy(void* dst, const void* src, size_t size, lr_memcpy_kind_t memcpy_kind, bool async) override {
    const CopyKind kind = to_copy_kind(memcpy_kind);
    if (kind != CopyKind::DeviceToDevice) {
      const void* host = kind == CopyKind::HostToDevice ? src : dst;
      if (!device_.is_pinned(host, size)) return false;
    }
    hsa_signal_t signal;
    if (!free_copy_signals_.empty()) {
      signal = free_copy_signals_.back();
      free_copy_signals_.pop_back();
    } else {
      LRRT_HSA_CHECK(api_, LR_ERROR_RUNTIME, hsa_signal_create(1, 0, nullptr, &signal));
      copy_signals_.push_back(signal);
    }
    api_.hsa_signal_store_relaxed(signal, 1);
    hsa_agent_t gpu = device_.agent(), cpu = device_.context().cpu_agent;
    hsa_agent_t dst_agent = kind == CopyKind::DeviceToHost ? cpu : gpu;
    hsa_agent_t src_agent = kind == CopyKind::HostToDevice ? cpu : gpu;
    // In order with earlier dispatches, as the lrrt queue is.
    uint32_t ndeps = last_.handle && api_.hsa_signal_load_relaxed(last_) > 0 ? 1 : 0;
    LRRT_HSA_CHECK(api_, LR_ERROR_RUNTIME, hsa_amd_memory_async_copy(
        dst, dst_agent, src, src_agent, size, ndeps, ndeps ? &last_ : nullptr, signal));
    if (async) {
      pending_copies_.push_back(signal);
    } else {
      wait(signal);
      free_copy_signals_.push_back(signal);
    }
    return true;
  }

  bool has_graph() const override { return true; }
  std::string graph_description() const override {
    return "raw AQL loop: prebuilt packets and kernargs, one write-index add, headers published last, one "
           "doorbell; barrier bit where a dependency is still open; hsa_signal_wait_scacquire (active)";
  }

  int build_graph(std::span<const native::GraphStep> steps) override {
    if (steps.empty()) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "a native graph needs at least one step");
    auto g = std::make_unique<Graph>();
    // Each packet's kernarg segment, 64-byte aligned, in one block.
    std::vector<size_t> offsets;
    size_t total = 0;
    for (const auto& step : steps) {
      const HsaKernel& k = *kernels_.at(static_cast<size_t>(step.kernel));
      offsets.push_back(total);
      total += (std::max<size_t>(k.kernarg_size, step.args.size()) + 63) / 64 * 64;
    }
    if (steps.size() + 1 > queue_->size)
      LRRT_THROW(LR_ERROR_NOT_SUPPORTED, "native graph of {} packets does not fit the queue ({} slots)",
                 steps.size(), queue_->size);
    try {
      fill_graph(*g, steps, offsets, total);
    } catch (...) {
      release(*g);
      throw;
    }
    graphs_.push_back(std::move(g));
    return static_cast<int>(graphs_.size() - 1);
  }

  void launch_graph(int graph) override {
    Graph& g = this->graph(graph);
    // Replays run in order (the first packet has the barrier bit), so the
    // last one's signal tells when all finished; a signal is reused after the
    // replay that used it completed.
    hsa_signal_t completion = g.completions[g.next++ % g.completions.size()];
    wait(completion);
    api_.hsa_signal_store_relaxed(completion, 1);
    const uint64_t count = g.packets.size() + (g.terminal_barrier ? 1 : 0);
    const uint64_t first = api_.hsa_queue_add_write_index_relaxed(queue_, count);
    while (first + count - api_.hsa_queue_load_read_index_scacquire(queue_) > queue_->size) {
    }
    auto slot = [&](uint64_t index) {
      return static_cast<std::byte*>(queue_->base_address) + (index & (queue_->size - 1)) * kAqlPacketBytes;
    };
    constexpr size_t kWord = 4;  // header + setup, published last
    for (size_t i = 0; i < g.packets.size(); ++i) {
      std::byte* p = slot(first + i);
      std::memcpy(p + kWord, reinterpret_cast<const std::byte*>(&g.packets[i].body) + kWord, kAqlPacketBytes - kWord);
      if (i + 1 == g.packets.size() && !g.terminal_barrier)
        reinterpret_cast<hsa_kernel_dispatch_packet_t*>(p)->completion_signal = completion;
      publish_packet(p, g.packets[i].header, g.packets[i].setup);
    }
    if (g.terminal_barrier) {
      auto* b = reinterpret_cast<hsa_barrier_and_packet_t*>(slot(first + count - 1));
      encode_barrier_and(b, {}, completion);
      publish_packet(b, kBarrierAndHeader, 0);
    }
    api_.hsa_signal_store_screlease(queue_->doorbell_signal, hsa_signal_value_t(first + count - 1));
    last_ = completion;
  }

  void patch_graph(int graph, size_t step, size_t offset, std::span<const std::byte> bytes) override {
    Graph& g = this->graph(graph);
    if (step >= g.packets.size()) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "native graph has no step {}", step);
    Packet& p = g.packets[step];
    if (offset + bytes.size() > p.args_size)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "patch of bytes [{}, {}) outside step {}'s {} argument bytes", offset,
                 offset + bytes.size(), step, p.args_size);
    // The explicit arguments lead the kernarg segment; the caller waited
    // for the previous replay, so the packet processor is not reading it.
    std::memcpy(p.kernarg + offset, bytes.data(), bytes.size());
  }

  void destroy_graph(int graph) override {
    Graph& g = this->graph(graph);
    for (auto& signal : g.completions)
      if (last_.handle == signal.handle) last_ = hsa_signal_t{0};
    release(g);
    graphs_.at(static_cast<size_t>(graph)).reset();
  }

  void* alloc_device(size_t size) override { return device_.allocate(size); }
  void free_device(void* ptr) override { device_.free(ptr); }
  void* alloc_pinned(size_t size) override { return device_.allocate_host(size); }
  void free_pinned(void* ptr) override { device_.free_host(ptr); }

 private:
  void wait(hsa_signal_t s, hsa_wait_state_t state = HSA_WAIT_STATE_ACTIVE) {
    while (api_.hsa_signal_wait_scacquire(s, HSA_SIGNAL_CONDITION_LT, 1, UINT64_MAX, state) >= 1) {
    }
  }
  struct Packet {
    hsa_kernel_dispatch_packet_t body;  // all but the header word
    uint16_t header = 0, setup = 0;
    std::byte* kernarg = nullptr;
    size_t args_size = 0;  // explicit argument bytes
  };
  struct Graph {
    std::vector<Packet> packets;
    bool terminal_barrier = false;  // a barrier-AND carries the completion signal
    std::array<hsa_signal_t, 64> completions{};  // back-to-back replays rarely wait for one
    size_t signals_made = 0;
    uint64_t next = 0;
    std::byte* kernargs = nullptr;
  };
  Graph& graph(int handle) {
    if (handle < 0 || size_t(handle) >= graphs_.size() || !graphs_[size_t(handle)])
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "no native graph {}", handle);
    return *graphs_[size_t(handle)];
  }
  // Waits for the graph's replays, then frees its signals and kernargs.
  void release(Graph& g) {
    for (size_t i = 0; i < g.signals_made; ++i) {
      wait(g.completions[i]);
      api_.hsa_signal_destroy(g.completions[i]);
    }
    g.signals_made = 0;
    if (g.kernargs) device_.free_kernarg(g.kernargs);
    g.kernargs = nullptr;
  }
  // Builds the packet images and kernargs of build_graph.
  void fill_graph(Graph& graph, std::span<const native::GraphStep> steps, const std::vector<size_t>& offsets,
                  size_t total) {
    Graph* g = &graph;
    g->kernargs = static_cast<std::byte*>(device_.allocate_kernarg(std::max<size_t>(total, 64)));
    for (auto& signal : g->completions) {
      LRRT_HSA_CHECK(api_, LR_ERROR_RUNTIME, hsa_signal_create(0, 0, nullptr, &signal));
      ++g->signals_made;
    }
    size_t last_barrier = 0;
    for (size_t i = 0; i < steps.size(); ++i) {
      const native::GraphStep& step = steps[i];
      const HsaKernel& k = *kernels_.at(static_cast<size_t>(step.kernel));
      bool barrier = i == 0;
      for (size_t d : step.after) {
        if (d >= i) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "native graph step {} waits for a later step {}", i, d);
        if (d >= last_barrier) barrier = true;
      }
      if (barrier) last_barrier = i;
      const LaunchConfig config{{step.grid.x, step.grid.y, step.grid.z}, {step.block.x, step.block.y, step.block.z}, 0};
      std::vector<std::byte> packed(std::max<size_t>(k.kernarg_size, step.args.size()), std::byte{0});
      pack_kernargs(k.info_, config, step.args, packed);
      Packet p{};
      p.kernarg = g->kernargs + offsets[i];
      p.args_size = step.args.size();
      std::memcpy(p.kernarg, packed.data(), packed.size());
      encode_dispatch(&p.body, config, k.kernel_object, p.kernarg, k.group_segment_size, k.private_segment_size,
                      hsa_signal_t{0});
      p.header = packet_header(HSA_PACKET_TYPE_KERNEL_DISPATCH, barrier, HSA_FENCE_SCOPE_SYSTEM,
                               HSA_FENCE_SCOPE_SYSTEM);
      p.setup = dispatch_setup(hsa::grid_dims(config));
      g->packets.push_back(p);
    }
    g->terminal_barrier = last_barrier != steps.size() - 1;
  }

  HsaDevice& device_;
  const HsaSymbols& api_;
  std::vector<std::unique_ptr<Graph>> graphs_;
  hsa_queue_t* queue_ = nullptr;
  std::byte* kernargs_ = nullptr;
  std::vector<hsa_signal_t> signals_;
  uint64_t next_ = 0;
  hsa_signal_t last_{0};
  std::vector<hsa_signal_t> copy_signals_, free_copy_signals_, pending_copies_;
  std::vector<std::unique_ptr<HsaModule>> modules_;
  std::vector<HsaKernel*> kernels_;
  int packed_kernel_ = -1;
  LaunchConfig packed_config_;
  std::vector<std::byte> packed_args_;
  std::vector<std::byte> packed_;
};

}  // namespace
}  // namespace lrrt::rt::hsa

namespace lrrt::rt {

std::unique_ptr<native::Baseline> make_hsa_native_baseline(Device& device) {
  auto* d = dynamic_cast<hsa::HsaDevice*>(&device);
  if (!d) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "not an hsa device");
  return std::make_unique<hsa::HsaNativeBaseline>(*d);
}

}  // namespace lrrt::rt

// The hsa backend's native baseline for `lrrt bench` (bench-only,
// include/lrrt/native_baseline.hpp): what a program written
// against ROCr directly does for one dispatch -- reserve a packet slot, write
// the AQL kernel dispatch packet, publish its header, store the doorbell --
// and a wait on the completion signal. It uses the backend's loaded library
// (no second dlopen) and its code-object loader, but a queue, kernarg ring
// and signals of its own. Copies: hsa_amd_memory_async_copy between pinned
// and device memory (ROCr cannot copy pageable memory asynchronously).
#include <cstring>
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

  void* alloc_device(size_t size) override { return device_.allocate(size); }
  void free_device(void* ptr) override { device_.free(ptr); }
  void* alloc_pinned(size_t size) override { return device_.allocate_host(size); }
  void free_pinned(void* ptr) override { device_.free_host(ptr); }

 private:
  void wait(hsa_signal_t s, hsa_wait_state_t state = HSA_WAIT_STATE_ACTIVE) {
    while (api_.hsa_signal_wait_scacquire(s, HSA_SIGNAL_CONDITION_LT, 1, UINT64_MAX, state) >= 1) {
    }
  }
  HsaDevice& device_;
  const HsaSymbols& api_;
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

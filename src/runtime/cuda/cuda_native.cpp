// The cuda backend's native baseline for `lrrt bench` (bench-only,
// include/lrrt/native_baseline.hpp): raw driver calls
// through the backend's symbol table (the library is loaded once), in the
// device's primary context, on a non-blocking stream of its own. Waits are
// the driver's own blocking calls (cuStreamSynchronize), as a CUDA program
// would write them.
#include <vector>

#include "cuda_device.hpp"
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
    if (stream_) {
      s.cuStreamSynchronize(stream_);
      s.cuStreamDestroy(stream_);
    }
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
    // The same call lrrt makes: one packed argument buffer.
    size_t size = args.size();
    void* config[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, const_cast<std::byte*>(args.data()),
                      CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
    LRRT_CUDA_CHECK(cu(), LR_ERROR_RUNTIME,
                    cuLaunchKernel(functions_.at(static_cast<size_t>(kernel)), grid.x, grid.y, grid.z, block.x,
                                   block.y, block.z, 0, stream_, nullptr, size ? config : nullptr));
  }

  void synchronize() override { LRRT_CUDA_CHECK(cu(), LR_ERROR_RUNTIME, cuStreamSynchronize(stream_)); }
  bool synchronize_blocking() override {
    LRRT_CUDA_CHECK(cu(), LR_ERROR_RUNTIME, cuEventRecord(blocking_, stream_));
    LRRT_CUDA_CHECK(cu(), LR_ERROR_RUNTIME, cuEventSynchronize(blocking_));
    return true;
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
  CudaDevice& device_;
  CUstream stream_ = nullptr;
  CUevent blocking_ = nullptr;
  std::vector<CUmodule> modules_;
  std::vector<CUfunction> functions_;
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

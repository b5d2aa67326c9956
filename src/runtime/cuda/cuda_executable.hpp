// Modules from cubin, PTX (JIT-compiled by the driver, its log in the error)
// and fatbin; kernels with their parameter layout from cuFuncGetParamInfo, or
// from the image itself (cuda_inspect.cpp) on older drivers.
#pragma once

#include <cuda.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend.hpp"

namespace lrrt::rt::cuda {

class CudaDevice;

// Packed argument bytes as the CU_LAUNCH_PARAM_* list that cuLaunchKernel,
// cuLaunchKernelEx and kernel nodes take as `extra`: a manifest's layout
// reaches the kernel unchanged. The driver copies the list and the bytes
// during the call. Not copyable: the list points at its own size.
class ArgumentBuffer {
 public:
  explicit ArgumentBuffer(std::span<const std::byte> bytes)
      : size_(bytes.size()),
        list_{CU_LAUNCH_PARAM_BUFFER_POINTER, const_cast<std::byte*>(bytes.data()), CU_LAUNCH_PARAM_BUFFER_SIZE,
              &size_, CU_LAUNCH_PARAM_END} {}
  ArgumentBuffer(const ArgumentBuffer&) = delete;
  ArgumentBuffer& operator=(const ArgumentBuffer&) = delete;
  // Null for a kernel without argument bytes.
  void** extra() { return size_ ? list_ : nullptr; }

 private:
  size_t size_;
  void* list_[5];
};

class CudaKernel final : public Kernel {
 public:
  CudaKernel(CudaDevice& device, CUfunction function, KernelInfo info)
      : device_(device), function_(function), info_(std::move(info)) {}
  const KernelInfo& info() const override { return info_; }
  CUfunction function() const { return function_; }
  // Raises the kernel's dynamic shared memory limit when a launch asks for
  // more than the default 48 KiB.
  void ensure_dynamic_shared(uint32_t bytes);
  // Bytes of kernel arguments the driver expects (0 when unknown).
  uint32_t param_bytes() const { return info_.has_arg_layout ? info_.explicit_kernarg_size() : 0; }

 private:
  CudaDevice& device_;
  CUfunction function_;
  KernelInfo info_;
  std::atomic<uint32_t> dynamic_shared_limit_{48 * 1024};
  std::mutex mutex_;
};

class CudaModule final : public Module {
 public:
  // One CUmodule per part: a library's fatbins (one per translation unit)
  // each load on their own.
  struct Part {
    CUmodule module = nullptr;
    std::vector<std::byte> image;  // the code object the driver loaded (decoded)
    std::string description;       // which entry, and why
  };
  CudaModule(CudaDevice& device, std::vector<Part> parts);
  ~CudaModule() override;
  Kernel& kernel(std::string_view name) override;
  std::vector<std::string> kernel_names() const override;

 private:
  KernelInfo describe(CUfunction function, const std::string& name, std::span<const std::byte> image) const;

  CudaDevice& device_;
  std::vector<Part> parts_;
  std::mutex mutex_;
  std::unordered_map<std::string, std::unique_ptr<CudaKernel>> kernels_;
};

}  // namespace lrrt::rt::cuda

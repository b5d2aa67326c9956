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

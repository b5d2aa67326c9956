// A host code object: a shared object exporting lrrt_host_library_query
// (host_symbols.hpp loads it from bytes, as every backend loads), and the
// kernels of its table.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "backend.hpp"
#include "host_symbols.hpp"
#include "lrrt/host_kernel_abi.h"

namespace lrrt::rt::host {

class HostKernel final : public Kernel {
 public:
  HostKernel(const lrrt_host_kernel_t& desc);
  const KernelInfo& info() const override { return info_; }
  lrrt_host_kernel_fn_t entry() const { return entry_; }

 private:
  KernelInfo info_;
  lrrt_host_kernel_fn_t entry_;
};

class HostModule final : public Module {
 public:
  explicit HostModule(std::span<const std::byte> image);
  Kernel& kernel(std::string_view name) override;
  std::vector<std::string> kernel_names() const override;

 private:
  HostLibrary library_;  // outlives the kernels, whose entries point into it
  std::map<std::string, std::unique_ptr<HostKernel>, std::less<>> kernels_;
};

}  // namespace lrrt::rt::host

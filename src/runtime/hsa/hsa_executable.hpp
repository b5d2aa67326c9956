// Code objects as HSA executables: HSACO or clang offload bundle, checked
// against the agent's ISA, loaded through a code object reader.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hsa_device.hpp"
#include "lrrt/formats/amdgpu_printf.hpp"
#include "services.hpp"

namespace lrrt::rt::hsa {

// Stack per work-item a kernel with a dynamic stack (.uses_dynamic_stack:
// recursion, indirect or external calls) gets beyond its fixed frames. HIP
// gives such a kernel max(its fixed size, the device stack size), 1024 bytes
// unless hipDeviceSetLimit(hipLimitStackSize) changes it (clr
// rocvirtual.cpp, device.hpp); lrrt gives the fixed size plus 1024, never
// less than HIP and never the fixed size alone.
constexpr uint32_t kDynamicStackBytes = 1024;

// The private segment size a dispatch of a kernel carries.
constexpr uint32_t dispatch_private_segment(uint32_t fixed, bool uses_dynamic_stack) {
  return uses_dynamic_stack ? fixed + kDynamicStackBytes : fixed;
}

struct HsaKernel final : public Kernel {
  KernelInfo info_;
  uint64_t kernel_object = 0;
  uint32_t kernarg_size = 0;  // what the loader reports (>= metadata)
  uint32_t group_segment_size = 0;
  uint32_t private_segment_size = 0;  // what a dispatch carries (dispatch_private_segment)
  KernelServices services;  // what its hidden arguments ask for
  // The code object's printf format table, when services.printf_buffer.
  std::shared_ptr<const formats::amdgpu::PrintfTable> printf_table;
  const KernelInfo& info() const override { return info_; }
};

class HsaModule final : public Module {
 public:
  HsaModule(HsaDevice& device, std::span<const std::byte> image);
  ~HsaModule() override;
  Kernel& kernel(std::string_view name) override;
  std::vector<std::string> kernel_names() const override;

 private:
  HsaDevice& device_;
  // One code object per part (a .hip_fatbin's bundles), each in its own
  // executable, as HIP loads them: ROCr's loader refuses a second definition
  // of a non-local symbol in one executable, and translation units share
  // weak ones (template kernels' .kd symbols, inline variables).
  std::vector<std::vector<std::byte>> images_;
  std::vector<hsa_code_object_reader_t> readers_;
  std::vector<hsa_executable_t> executables_;
  std::vector<std::unique_ptr<HsaKernel>> kernels_;
};

}  // namespace lrrt::rt::hsa

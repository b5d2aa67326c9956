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

struct HsaKernel final : public Kernel {
  KernelInfo info_;
  uint64_t kernel_object = 0;
  uint32_t kernarg_size = 0;  // what the loader reports (>= metadata)
  uint32_t group_segment_size = 0;
  uint32_t private_segment_size = 0;
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
  // One code object per part (a .hip_fatbin's bundles), all in one executable.
  std::vector<std::vector<std::byte>> images_;
  std::vector<hsa_code_object_reader_t> readers_;
  hsa_executable_t executable_{0};
  std::vector<std::unique_ptr<HsaKernel>> kernels_;
};

}  // namespace lrrt::rt::hsa

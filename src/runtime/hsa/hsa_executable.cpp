// Code objects -> HSA executables: HSACO or clang offload bundle, checked
// against the agent's ISA, loaded through a code object reader; kernels
// described by the metadata note and the loader's symbol information.
#include "hsa_executable.hpp"

#include <algorithm>

#include "lrrt/formats/format.hpp"
#include "lrrt/formats/select.hpp"

namespace lrrt::rt::hsa {

// Code-object errors from lrrt_formats (FormatError) reach the C ABI, which
// reports them as LR_ERROR_INVALID_IMAGE.
HsaModule::HsaModule(HsaDevice& device, std::span<const std::byte> image) : device_(device) {
  const HsaSymbols& api = device.api();
  const auto& agent_target = device.target();
  // HSACO, a bundle (compressed or not) or a host binary's .hip_fatbin: the
  // entry for this agent (one per bundle with kernels), decoded.
  std::vector<formats::Selection> selections;
  try {
    selections = formats::select_parts_for_amdgpu(image, agent_target);
  } catch (const formats::FormatError& e) {
    LRRT_THROW(LR_ERROR_INVALID_IMAGE, "{}", e.what());
  }
  source_ = formats::describe_parts(selections, "bundles");
  std::vector<amdgpu::CodeObject> code_objects;
  for (const auto& selection : selections) {
    std::span<const std::byte> elf = selection.entry.bytes;
    amdgpu::CodeObject co = amdgpu::parse_code_object(elf);
    if (!amdgpu::target_compatible(co.target_id, agent_target))
      LRRT_THROW(LR_ERROR_INVALID_IMAGE,
                 "the code object is built for {}, but hsa device '{}' is {}; rebuild with "
                 "--offload-arch={}",
                 co.target_id.str(), device.properties().name, agent_target.str(), agent_target.processor);
    // The reader may refer to the bytes until the executable is destroyed.
    images_.emplace_back(elf.begin(), elf.end());
    code_objects.push_back(std::move(co));
  }

  try {
    for (const auto& bytes : images_) {
      hsa_code_object_reader_t reader{0};
      LRRT_HSA_CHECK(api, LR_ERROR_INVALID_IMAGE,
                     hsa_code_object_reader_create_from_memory(bytes.data(), bytes.size(), &reader));
      readers_.push_back(reader);
    }
    for (const auto& reader : readers_) {
      hsa_executable_t executable{0};
      LRRT_HSA_CHECK(api, LR_ERROR_RUNTIME, hsa_executable_create_alt(
          HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, nullptr, &executable));
      executables_.push_back(executable);
      LRRT_HSA_CHECK(api, LR_ERROR_INVALID_IMAGE, hsa_executable_load_agent_code_object(
          executable, device.agent(), reader, nullptr, nullptr));
      LRRT_HSA_CHECK(api, LR_ERROR_INVALID_IMAGE, hsa_executable_freeze(executable, nullptr));
    }
    hsa_agent_t agent = device.agent();
    for (size_t part = 0; part < code_objects.size(); ++part) {
      auto& co = code_objects[part];
      const hsa_executable_t executable = executables_[part];
      std::shared_ptr<const formats::amdgpu::PrintfTable> printf_table;  // one per code object
      for (auto& info : co.kernels) {
        auto k = std::make_unique<HsaKernel>();
        std::string symbol = info.symbol.empty() ? info.name + ".kd" : info.symbol;
        hsa_executable_symbol_t sym;
        LRRT_HSA_CHECK(api, LR_ERROR_INVALID_IMAGE, hsa_executable_get_symbol_by_name(
            executable, symbol.c_str(), &agent, &sym));
        uint32_t kernarg = 0, group = 0, priv = 0;
        LRRT_HSA_CHECK(api, LR_ERROR_RUNTIME, hsa_executable_symbol_get_info(
            sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, &k->kernel_object));
        LRRT_HSA_CHECK(api, LR_ERROR_RUNTIME, hsa_executable_symbol_get_info(
            sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE, &kernarg));
        LRRT_HSA_CHECK(api, LR_ERROR_RUNTIME, hsa_executable_symbol_get_info(
            sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE, &group));
        LRRT_HSA_CHECK(api, LR_ERROR_RUNTIME, hsa_executable_symbol_get_info(
            sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE, &priv));
        k->kernarg_size = std::max(kernarg, info.kernarg_size);
        k->group_segment_size = std::max(group, info.group_segment_size);
        k->private_segment_size =
            dispatch_private_segment(std::max(priv, info.private_segment_size), info.uses_dynamic_stack);
        k->info_ = std::move(info);
        k->info_.symbol = symbol;
        k->services = kernel_services(k->info_);
        if (k->services.printf_buffer) {
          if (!printf_table) printf_table = std::make_shared<formats::amdgpu::PrintfTable>(co.printf_formats);
          k->printf_table = printf_table;
        }
        kernels_.push_back(std::move(k));
      }
    }
  } catch (...) {
    for (auto& e : executables_) api.hsa_executable_destroy(e);
    for (auto& r : readers_) api.hsa_code_object_reader_destroy(r);
    throw;
  }
}

HsaModule::~HsaModule() {
  const HsaSymbols& api = device_.api();
  for (auto& e : executables_) api.hsa_executable_destroy(e);
  for (auto& r : readers_)
    if (r.handle) api.hsa_code_object_reader_destroy(r);
}

Kernel& HsaModule::kernel(std::string_view name) {
  // A kernel defined by several parts (a template instantiated in two
  // translation units) is the first part's, as a weak symbol would resolve.
  for (auto& k : kernels_)
    if (k->info_.name == name || k->info_.symbol == name) {
      check_services(k->services);  // a kernel needing what lrrt lacks is refused here
      return *k;
    }
  std::string names;
  for (auto& k : kernels_) names += (names.empty() ? "" : ", ") + k->info_.name;
  LRRT_THROW(LR_ERROR_NOT_FOUND, "the code object has no kernel '{}' (it has: {})", name,
             names.empty() ? "none" : names);
}

std::vector<std::string> HsaModule::kernel_names() const {
  std::vector<std::string> out;
  for (auto& k : kernels_)
    if (std::find(out.begin(), out.end(), k->info_.name) == out.end()) out.push_back(k->info_.name);
  return out;
}

}  // namespace lrrt::rt::hsa

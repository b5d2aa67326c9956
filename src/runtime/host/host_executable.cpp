#include "host_executable.hpp"

#include "code_object_format.hpp"
#include "error.hpp"

namespace lrrt::rt::host {
namespace {

const lrrt_host_library_t* query_library(const HostSymbols& symbols) {
  const lrrt_host_library_t* lib = symbols.lrrt_host_library_query(LRRT_HOST_ABI_VERSION);
  if (!lib || lib->abi_version != LRRT_HOST_ABI_VERSION)
    LRRT_THROW(LR_ERROR_INVALID_IMAGE, "the host kernel library does not support host ABI version {}",
               LRRT_HOST_ABI_VERSION);
  if (lib->kernel_count && !lib->kernels)
    LRRT_THROW(LR_ERROR_INVALID_IMAGE, "the host kernel library's kernel table is null");
  return lib;
}

// The image, once it is known to be a host shared object.
std::span<const std::byte> host_image(std::span<const std::byte> image) {
  auto format = detect_code_object_format(image);
  if (format != CodeObjectFormat::HostSharedObject)
    LRRT_THROW(LR_ERROR_INVALID_IMAGE,
               "the code object is {}; the host device runs host shared objects (*.host.so)",
               describe_code_object(image));
  return image;
}

}  // namespace

HostKernel::HostKernel(const lrrt_host_kernel_t& desc) : entry_(desc.entry) {
  info_.name = desc.name ? desc.name : "";
  info_.symbol = info_.name;
  info_.has_arg_layout = true;
  info_.kernarg_size = desc.kernarg_size;
  info_.kernarg_align = desc.kernarg_align;
  info_.group_segment_size = desc.static_shared_bytes;
  info_.max_workgroup_size = 0;
  for (uint32_t i = 0; i < desc.arg_count; ++i) {
    const auto& a = desc.args[i];
    KernelArgInfo arg;
    arg.offset = a.offset;
    arg.size = a.size;
    bool pointer = a.kind == LRRT_HOST_ARG_POINTER;
    arg.kind = pointer ? LR_ARG_GLOBAL_BUFFER : LR_ARG_BY_VALUE;
    arg.value_kind = pointer ? "global_buffer" : "by_value";
    arg.name = a.name ? a.name : "";
    arg.type_name = a.type_name ? a.type_name : "";
    info_.args.push_back(std::move(arg));
  }
}

HostModule::HostModule(std::span<const std::byte> image) : library_(host_image(image)) {
  const lrrt_host_library_t* lib = query_library(library_.symbols());
  for (uint32_t i = 0; i < lib->kernel_count; ++i) {
    const auto& k = lib->kernels[i];
    if (!k.name || !k.entry)
      LRRT_THROW(LR_ERROR_INVALID_IMAGE, "kernel table entry {} has no name or entry point", i);
    kernels_.emplace(k.name, std::make_unique<HostKernel>(k));
  }
}

Kernel& HostModule::kernel(std::string_view name) {
  auto it = kernels_.find(name);
  if (it == kernels_.end()) {
    std::string names;
    for (auto& [n, k] : kernels_) names += (names.empty() ? "" : ", ") + n;
    LRRT_THROW(LR_ERROR_NOT_FOUND, "kernel '{}' not found in the code object; it holds: {}", name,
               names.empty() ? "no kernels" : names);
  }
  return *it->second;
}

std::vector<std::string> HostModule::kernel_names() const {
  std::vector<std::string> out;
  for (auto& [n, k] : kernels_) out.push_back(n);
  return out;
}

std::vector<KernelInfo> describe_host_library(std::span<const std::byte> image) {
  HostModule module(image);
  std::vector<KernelInfo> out;
  for (const auto& name : module.kernel_names()) out.push_back(module.kernel(name).info());
  return out;
}

}  // namespace lrrt::rt::host

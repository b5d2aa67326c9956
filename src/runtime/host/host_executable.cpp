#include "host_executable.hpp"

#include "error.hpp"
#include "lrrt/formats/container.hpp"
#include "lrrt/formats/format.hpp"
#include "lrrt/formats/host_library.hpp"

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

// The image, once it is known to be a host shared object whose headers the
// dynamic loader can trust (formats::host::check_loadable; a FormatError
// reaches the C ABI as LR_ERROR_INVALID_IMAGE).
std::span<const std::byte> host_image(std::span<const std::byte> image) {
  if (formats::detect_format(image) != formats::Format::HostSharedObject)
    LRRT_THROW(LR_ERROR_INVALID_IMAGE,
               "the code object is {}; the host device runs host shared objects (*.host.so)",
               formats::describe_format(image));
  if (formats::file_format(image) == formats::Format::HostBinary) {
    std::string targets;
    for (const auto& e : formats::code_object_entries(image))
      targets += fmt::format("{}{} ({})", targets.empty() ? "" : ", ", e.target, formats::format_backend(e.format));
    LRRT_THROW(LR_ERROR_INVALID_IMAGE,
               "the code object is a host binary carrying GPU code ({}) and no host kernels; run it with the "
               "backend named for its targets (--backend hsa or cuda)",
               targets);
  }
  formats::host::check_loadable(image);
  // Only a library that exports the query function is loaded: anyone
  // else's (librocrand, libcublas) would run its constructors in lrrt.
  (void)formats::host::read_host_library(image);
  return image;
}

}  // namespace

HostKernel::HostKernel(const lrrt_host_kernel_t& desc)
    : info_(formats::host::kernel_info(desc)), entry_(desc.entry) {}

HostModule::HostModule(std::span<const std::byte> image) : library_(host_image(image)) {
  source_ = fmt::format("the whole file: a host kernel library for {}", formats::host_machine());
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

}  // namespace lrrt::rt::host

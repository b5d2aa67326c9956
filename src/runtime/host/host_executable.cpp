#include "host_executable.hpp"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "code_object_format.hpp"
#include "error.hpp"

namespace lrrt::rt::host {
namespace {

// Writes the image to an anonymous in-memory file and dlopens it: the loader
// needs a path, the ABI hands us bytes. The file descriptor stays open while
// the library is loaded: glibc matches already-loaded libraries by path, so
// "/proc/self/fd/N" must not name another image meanwhile.
void* dlopen_image(std::span<const std::byte> image, int& fd_out, std::string& path_out) {
  int fd = memfd_create("lrrt-host-code-object", MFD_CLOEXEC);
  if (fd < 0) LRRT_THROW_AT(LR_ERROR_RUNTIME, "memfd_create failed: {}", std::strerror(errno));
  size_t written = 0;
  while (written < image.size()) {
    ssize_t n = ::write(fd, image.data() + written, image.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      LRRT_THROW_AT(LR_ERROR_RUNTIME, "writing the code object to memory failed: {}", std::strerror(err));
    }
    written += static_cast<size_t>(n);
  }
  std::string path = fmt::format("/proc/self/fd/{}", fd);
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    std::string error = dlerror();
    ::close(fd);
    LRRT_THROW(LR_ERROR_INVALID_IMAGE, "the host shared object cannot be loaded: {}", error);
  }
  fd_out = fd;
  path_out = std::move(path);
  return handle;
}

const lrrt_host_library_t* query_library(void* handle) {
  auto query = reinterpret_cast<lrrt_host_library_query_fn_t>(dlsym(handle, LRRT_HOST_LIBRARY_QUERY_SYMBOL));
  if (!query)
    LRRT_THROW(LR_ERROR_INVALID_IMAGE,
               "the shared object exports no {}: it was not built as an lrrt host kernel library "
               "(see include/lrrt/host_kernel_abi.h)",
               LRRT_HOST_LIBRARY_QUERY_SYMBOL);
  const lrrt_host_library_t* lib = query(LRRT_HOST_ABI_VERSION);
  if (!lib || lib->abi_version != LRRT_HOST_ABI_VERSION)
    LRRT_THROW(LR_ERROR_INVALID_IMAGE, "the host kernel library does not support host ABI version {}",
               LRRT_HOST_ABI_VERSION);
  if (lib->kernel_count && !lib->kernels)
    LRRT_THROW(LR_ERROR_INVALID_IMAGE, "the host kernel library's kernel table is null");
  return lib;
}

void require_host_image(std::span<const std::byte> image) {
  auto format = detect_code_object_format(image);
  if (format != CodeObjectFormat::HostSharedObject)
    LRRT_THROW(LR_ERROR_INVALID_IMAGE,
               "the code object is {}; the host device runs host shared objects (*.host.so)",
               describe_code_object(image));
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

HostModule::HostModule(std::span<const std::byte> image) {
  require_host_image(image);
  handle_ = dlopen_image(image, fd_, path_);
  try {
    const lrrt_host_library_t* lib = query_library(handle_);
    for (uint32_t i = 0; i < lib->kernel_count; ++i) {
      const auto& k = lib->kernels[i];
      if (!k.name || !k.entry)
        LRRT_THROW(LR_ERROR_INVALID_IMAGE, "kernel table entry {} has no name or entry point", i);
      kernels_.emplace(k.name, std::make_unique<HostKernel>(k));
    }
  } catch (...) {
    unload();
    throw;
  }
}

HostModule::~HostModule() {
  kernels_.clear();
  unload();
}

void HostModule::unload() {
  if (!handle_) return;
  dlclose(std::exchange(handle_, nullptr));
  // A library with unique symbols is never unloaded (glibc marks it
  // NODELETE); then its path must stay reserved, so the descriptor is kept.
  if (void* still = dlopen(path_.c_str(), RTLD_NOW | RTLD_NOLOAD)) {
    dlclose(still);
    return;
  }
  ::close(fd_);
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

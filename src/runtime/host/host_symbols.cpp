#include "host_symbols.hpp"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include <fmt/format.h>

#include "host_status.hpp"

namespace lrrt::rt::host {

// Writes the image to an anonymous in-memory file and dlopens it. The file
// descriptor stays open while the library is loaded: glibc matches
// already-loaded libraries by path, so "/proc/self/fd/N" must not name
// another image meanwhile.
HostLibrary::HostLibrary(std::span<const std::byte> image) {
  int fd = -1;
  LRRT_HOST_CHECK(LR_ERROR_RUNTIME, fd = ::memfd_create("lrrt-host-code-object", MFD_CLOEXEC));
  size_t written = 0;
  while (written < image.size()) {
    ssize_t n = ::write(fd, image.data() + written, image.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      throw_errno(err, LR_ERROR_RUNTIME, "writing the code object to memory", __FILE__, __LINE__);
    }
    written += static_cast<size_t>(n);
  }
  std::string path = fmt::format("/proc/self/fd/{}", fd);
  handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    std::string error = dlerror();
    ::close(fd);
    LRRT_THROW(LR_ERROR_INVALID_IMAGE, "the host shared object cannot be loaded: {}", error);
  }
  fd_ = fd;
  path_ = std::move(path);
#define LRRT_HOST_RESOLVE_SYMBOL(name, type)                                                             \
  symbols_.name = reinterpret_cast<type>(dlsym(handle_, #name));                                       \
  if (!symbols_.name) {                                                                                \
    unload();                                                                                          \
    LRRT_THROW(LR_ERROR_INVALID_IMAGE,                                                                 \
               "the shared object exports no {}: it was not built as an lrrt host kernel library (see " \
               "include/lrrt/host_kernel_abi.h)",                                                      \
               #name);                                                                                 \
  }
  LRRT_HOST_SYMBOLS(LRRT_HOST_RESOLVE_SYMBOL)
#undef LRRT_HOST_RESOLVE_SYMBOL
}

HostLibrary::~HostLibrary() { unload(); }

void HostLibrary::unload() {
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

}  // namespace lrrt::rt::host

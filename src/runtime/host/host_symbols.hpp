// A host kernel library loaded from bytes (memfd + dlopen: the loader needs
// a path, the ABI hands lrrt bytes) and its symbols (host_symbol_table.h):
// the host backend's counterpart of the GPU backends' driver symbol tables.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "host_symbol_table.h"

namespace lrrt::rt::host {

struct HostSymbols {
#define LRRT_HOST_DECLARE_SYMBOL(name, type) type name = nullptr;
  LRRT_HOST_SYMBOLS(LRRT_HOST_DECLARE_SYMBOL)
#undef LRRT_HOST_DECLARE_SYMBOL
};

class HostLibrary {
 public:
  // Throws LR_ERROR_INVALID_IMAGE when the bytes are no loadable shared
  // object or lack a symbol of the table.
  explicit HostLibrary(std::span<const std::byte> image);
  ~HostLibrary();
  HostLibrary(const HostLibrary&) = delete;
  HostLibrary& operator=(const HostLibrary&) = delete;

  const HostSymbols& symbols() const { return symbols_; }

 private:
  void unload();
  void* handle_ = nullptr;
  int fd_ = -1;
  std::string path_;  // /proc/self/fd/N
  HostSymbols symbols_;
};

}  // namespace lrrt::rt::host

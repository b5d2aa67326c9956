// Linked into every host kernel library: the one exported entry point the
// host backend looks up (see include/lrrt/host_kernel_abi.h).
#include "lrrt_kernel.h"

namespace lrrt::host_kernel {
Table& table() {
  static Table t;  // function-local: no order-of-initialisation hazard
  return t;
}
}  // namespace lrrt::host_kernel

extern "C" __attribute__((visibility("default"))) const lrrt_host_library_t*
lrrt_host_library_query(uint32_t abi_version) {
  if (abi_version != LRRT_HOST_ABI_VERSION) return nullptr;
  return &lrrt::host_kernel::table().library;
}

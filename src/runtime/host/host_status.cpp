#include "host_status.hpp"

#include <cstring>

#include <fmt/format.h>

namespace lrrt::rt::host {
namespace {

std::string workgroup_coords(const lrrt_host_dispatch_state_t& d, uint64_t i) {
  uint64_t nx = d.workgroup_count[0], ny = d.workgroup_count[1];
  return fmt::format("({}, {}, {})", i % nx, (i / nx) % ny, i / (nx * ny));
}

}  // namespace

void throw_errno(int error, lr_status_t status, std::string_view what, const char* file, int line) {
  throw Error(status, fmt::format("{} failed: {} [at {}:{}]", what, std::strerror(error), file_basename(file), line));
}

void throw_kernel_fault(const std::string& kernel, const KernelFault& fault,
                        const lrrt_host_dispatch_state_t& dispatch, std::string_view detail) {
  if (fault.signal && fault.stack_overflow)
    LRRT_THROW(LR_ERROR_KERNEL_FAULT,
               "kernel '{}' faulted: stack overflow ({} at address {}, below the end of its {} MiB stack: a frame "
               "too large or recursion too deep) in workgroup {}",
               kernel, strsignal(fault.signal), fault.address, fault.stack_bytes >> 20,
               workgroup_coords(dispatch, fault.workgroup));
  if (fault.signal)
    LRRT_THROW(LR_ERROR_KERNEL_FAULT, "kernel '{}' faulted: {} at address {} in workgroup {}{}{}", kernel,
               strsignal(fault.signal), fault.address, workgroup_coords(dispatch, fault.workgroup),
               detail.empty() ? "" : "; ", detail);
  LRRT_THROW(LR_ERROR_KERNEL_FAULT, "kernel '{}' failed with code {} in workgroup {}{}", kernel, fault.code,
             workgroup_coords(dispatch, fault.workgroup), fault.code == -1 ? " (it threw a C++ exception)" : "");
}

}  // namespace lrrt::rt::host

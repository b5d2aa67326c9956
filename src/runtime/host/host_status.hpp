// Host failures as lrrt errors. The host backend calls no driver with status
// codes; what fails is a POSIX call (errno) or a kernel (a fault signal or a
// non-zero return code of its entry). LRRT_HOST_CHECK has the shape of the
// GPU backends' check macros without their symbol table (libc is linked).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "error.hpp"
#include "lrrt/host_kernel_abi.h"

namespace lrrt::rt::host {

// Throws lrrt::Error(status, "<what> failed: <strerror(error)> [at file:line]").
[[noreturn]] void throw_errno(int error, lr_status_t status, std::string_view what, const char* file, int line);

// The first failure of a dispatch, as its workgroups saw it.
struct KernelFault {
  int signal = 0;           // SIGSEGV, SIGBUS, SIGFPE or SIGILL
  void* address = nullptr;  // where the signal hit
  int code = 0;             // non-zero return code of the entry
  uint64_t workgroup = 0;   // linear workgroup index
  bool stack_overflow = false;  // the signal came from the kernel running off its stack
  size_t stack_bytes = 0;       // the size of that stack
  bool failed() const { return signal || code; }
};

// Throws LR_ERROR_KERNEL_FAULT naming the kernel, what went wrong and the
// workgroup's coordinates, then `detail` when there is one (where the
// faulting address lies: GuardedMemory::describe).
[[noreturn]] void throw_kernel_fault(const std::string& kernel, const KernelFault& fault,
                                     const lrrt_host_dispatch_state_t& dispatch, std::string_view detail = {});

}  // namespace lrrt::rt::host

// LRRT_HOST_CHECK(status, call): evaluates a POSIX call (an assignment of its
// result may be part of it); -1 throws with errno's text.
//   LRRT_HOST_CHECK(LR_ERROR_RUNTIME, fd = ::memfd_create("name", MFD_CLOEXEC));
#define LRRT_HOST_CHECK(status, call)                                                                         \
  do {                                                                                                        \
    if ((call) == -1)                                                                                         \
      ::lrrt::rt::host::throw_errno(errno, (status), ::lrrt::rt::call_name(#call), __FILE__, __LINE__); \
  } while (0)

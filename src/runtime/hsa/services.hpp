// Runtime services an AMDGPU kernel asks for through its hidden (implicit)
// arguments, and which of them lrrt provides. The metadata lists a hidden
// argument whenever the compiler could not prove the kernel does not use it,
// so a listed kind is taken as needed: lrrt fills what it provides (geometry,
// global offsets, dynamic LDS size; kernargs.cpp) and an OpenCL printf buffer
// (printf_buffer.cpp), and refuses the kernel for anything else (hostcall,
// heap, multi-grid sync, device-side enqueue, queue and aperture pointers,
// kinds it does not know) instead of launching it with a zero there. Needs
// no HSA headers, so unit tests use it too.
#pragma once

#include <string>

#include "backend.hpp"

namespace lrrt::rt::hsa {

struct KernelServices {
  // hidden_printf_buffer in an OpenCL C kernel: the backend gives the
  // dispatch a printf buffer and prints its records afterwards.
  bool printf_buffer = false;
  // Empty when lrrt provides every hidden argument the kernel lists; else the
  // whole refusal, naming the kernel and each service it lacks.
  std::string refusal;
};

// What `kernel`'s hidden arguments ask for (from its metadata alone).
KernelServices kernel_services(const KernelInfo& kernel);

// Throws LR_ERROR_NOT_SUPPORTED with services.refusal unless it is empty.
void check_services(const KernelServices& services);

}  // namespace lrrt::rt::hsa

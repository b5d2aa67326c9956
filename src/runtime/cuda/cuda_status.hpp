// CUDA results as lrrt errors. Every failed driver call is reported by
// LRRT_CUDA_CHECK (or, on a device's context, LRRT_CUDA_CHECK_DEVICE), the
// backend's check macros (hsa and host have the same shape): they name the
// call, the driver's text for the result and the call site.
#pragma once

#include <cuda.h>

#include <string>
#include <string_view>

#include "cuda_symbols.hpp"
#include "error.hpp"

namespace lrrt::rt::cuda {

// "CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)".
std::string cu_error_text(CUresult result);
// True for the errors after which the context is unusable (sticky errors:
// illegal address, launch failure, trap, ...).
bool cu_is_sticky_fault(CUresult result);
// The lr_status_t that describes a CUresult; `fallback` for results that
// say nothing more specific.
lr_status_t cu_status(CUresult result, lr_status_t fallback = LR_ERROR_RUNTIME);

// Throws lrrt::Error(cu_status(result, status), "<what> failed: <CUDA text> [at file:line]").
[[noreturn]] void throw_cu_error(CUresult result, lr_status_t status, std::string_view what, const char* file,
                                 int line);

}  // namespace lrrt::rt::cuda

// LRRT_CUDA_CHECK(symbols, status, call): calls symbols.call; when it fails,
// throws lrrt::Error (status: cu_status(result, status)).
//   LRRT_CUDA_CHECK(cu(), LR_ERROR_RUNTIME, cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
#define LRRT_CUDA_CHECK(symbols, status, call)                                                 \
  do {                                                                                         \
    const CUresult lrrt_cu_result_ = (symbols).call;                                           \
    if (lrrt_cu_result_ != CUDA_SUCCESS)                                                       \
      ::lrrt::rt::cuda::throw_cu_error(lrrt_cu_result_, (status), ::lrrt::rt::call_name(#call), \
                                       __FILE__, __LINE__);                                    \
  } while (0)

// LRRT_CUDA_CHECK_DEVICE(device, kernels, call): the same for a call in a
// device's context (through cu()): a sticky fault goes to device.fail, which
// names `kernels` (evaluated only on failure) or the last launched kernel
// and marks the context unusable.
#define LRRT_CUDA_CHECK_DEVICE(device, kernels, call)                                               \
  do {                                                                                              \
    const CUresult lrrt_cu_result_ = ::lrrt::rt::cuda::cu().call;                                   \
    if (lrrt_cu_result_ != CUDA_SUCCESS)                                                            \
      (device).fail(lrrt_cu_result_, ::lrrt::rt::call_name(#call), (kernels), __FILE__, __LINE__); \
  } while (0)

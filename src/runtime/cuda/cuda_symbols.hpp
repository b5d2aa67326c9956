// The CUDA driver API, loaded at run time: libcuda.so.1 is dlopen'd (or the
// file named by LRRT_CUDA_LIBRARY) and every entry point is resolved through
// cuGetProcAddress, which picks the versioned symbol (cuMemAlloc_v2, ...) that
// matches the headers we were built with. The build needs only cuda.h.
//
// Each member of CudaSymbols is named and typed after cuda.h's prototype, so
// `cu().cuMemAlloc(&p, n)` reads like the driver API (cuda.h's macros map the
// name to its _v2 spelling on both sides).
#pragma once

#include <cuda.h>

#include <string>
#include <string_view>

#include "error.hpp"

// Entry points the backend cannot work without.
#define LRRT_CUDA_REQUIRED_SYMBOLS(X) \
  X(cuDriverGetVersion)               \
  X(cuGetErrorName)                   \
  X(cuGetErrorString)                 \
  X(cuDeviceGetCount)                 \
  X(cuDeviceGet)                      \
  X(cuDeviceGetName)                  \
  X(cuDeviceGetAttribute)             \
  X(cuDeviceTotalMem)                 \
  X(cuDeviceGetPCIBusId)              \
  X(cuDevicePrimaryCtxRetain)         \
  X(cuDevicePrimaryCtxRelease)        \
  X(cuCtxSetCurrent)                  \
  X(cuCtxGetCurrent)                  \
  X(cuCtxSynchronize)                 \
  X(cuMemAlloc)                       \
  X(cuMemFree)                        \
  X(cuMemGetInfo)                     \
  X(cuMemHostAlloc)                   \
  X(cuMemFreeHost)                    \
  X(cuMemcpyHtoD)                     \
  X(cuMemcpyDtoH)                     \
  X(cuMemcpyDtoD)                     \
  X(cuMemcpyHtoDAsync)                \
  X(cuMemcpyDtoHAsync)                \
  X(cuMemcpyDtoDAsync)                \
  X(cuStreamCreate)                   \
  X(cuStreamDestroy)                  \
  X(cuStreamSynchronize)              \
  X(cuStreamQuery)                    \
  X(cuStreamWaitEvent)                \
  X(cuEventCreate)                    \
  X(cuEventDestroy)                   \
  X(cuEventRecord)                    \
  X(cuEventSynchronize)               \
  X(cuEventQuery)                     \
  X(cuEventElapsedTime)               \
  X(cuModuleLoadDataEx)               \
  X(cuModuleUnload)                   \
  X(cuModuleGetFunction)              \
  X(cuFuncGetAttribute)               \
  X(cuFuncSetAttribute)               \
  X(cuLaunchKernel)

// Entry points of newer drivers (12.3/12.4+); null when the driver lacks them.
#define LRRT_CUDA_OPTIONAL_SYMBOLS(X) \
  X(cuFuncGetParamInfo)               \
  X(cuFuncGetName)                    \
  X(cuModuleGetFunctionCount)         \
  X(cuModuleEnumerateFunctions)

namespace lrrt::rt::cuda {

struct CudaSymbols {
#define LRRT_CUDA_DECLARE_SYMBOL(name) decltype(&::name) name = nullptr;
  decltype(&::cuInit) cuInit = nullptr;
  LRRT_CUDA_REQUIRED_SYMBOLS(LRRT_CUDA_DECLARE_SYMBOL)
  LRRT_CUDA_OPTIONAL_SYMBOLS(LRRT_CUDA_DECLARE_SYMBOL)
#undef LRRT_CUDA_DECLARE_SYMBOL

  void* library = nullptr;
  std::string library_name;  // what was dlopen'd
  int driver_version = 0;    // cuDriverGetVersion: 13000 for CUDA 13.0
};

// Loads the library, resolves the symbols and calls cuInit(0), once per
// process. Returns "" on success, else one sentence saying what is missing.
std::string load_cuda();
// The loaded table; only valid after load_cuda() returned "".
const CudaSymbols& cu();

// "CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)".
std::string cu_error_text(CUresult result);
// The lr_status_t that describes a CUresult.
lr_status_t cu_status(CUresult result);
// True for the errors after which the context is unusable (sticky errors:
// illegal address, launch failure, trap, ...).
bool cu_is_sticky_fault(CUresult result);

[[noreturn]] void throw_cu(CUresult result, std::string_view what, const char* file, int line);

}  // namespace lrrt::rt::cuda

// Throws lrrt::rt::Error naming the call, the CUDA error and the call site
// when `call` does not return CUDA_SUCCESS.
#define LRRT_CU(call, what)                                                   \
  do {                                                                        \
    CUresult lrrt_cu_result_ = (call);                                        \
    if (lrrt_cu_result_ != CUDA_SUCCESS)                                      \
      ::lrrt::rt::cuda::throw_cu(lrrt_cu_result_, (what), __FILE__, __LINE__); \
  } while (0)

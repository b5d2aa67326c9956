// The CUDA driver entry points the cuda backend calls, one X(name) each: the
// lists cuda_symbols.{hpp,cpp} expand into the table's members and their
// resolution. Adding a driver call means adding its name here.
#pragma once

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
  X(cuModuleEnumerateFunctions)       \
  LRRT_CUDA_CAPTURE_GRAPH_SYMBOLS(X)

// The native graph of `lrrt bench replay` (cuda_native.cpp): stream capture,
// instantiation, launch and kernel-node patches. Optional: lrrt itself does not
// need them, and the baseline reports no native graph without them. The
// names are spelled as cuda.h maps them (cuStreamBeginCapture is
// cuStreamBeginCapture_v2, cuStreamGetCaptureInfo _v3,
// cuGraphExecKernelNodeSetParams _v2), and the resolver asks cuGetProcAddress
// for the version of the headers; cuGraphInstantiateWithFlags is named
// explicitly because cuGraphInstantiate changed its signature in CUDA 12.
#define LRRT_CUDA_CAPTURE_GRAPH_SYMBOLS(X) \
  X(cuStreamBeginCapture)                  \
  X(cuStreamEndCapture)                    \
  X(cuStreamGetCaptureInfo)                \
  X(cuGraphInstantiateWithFlags)           \
  X(cuGraphLaunch)                         \
  X(cuGraphExecKernelNodeSetParams)        \
  X(cuGraphExecDestroy)                    \
  X(cuGraphDestroy)

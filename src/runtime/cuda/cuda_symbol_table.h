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
  X(cuDeviceCanAccessPeer)            \
  X(cuCtxEnablePeerAccess)            \
  X(cuMemcpyPeerAsync)                \
  X(cuLaunchKernel)

// Entry points of newer drivers (12.3/12.4+); null when the driver lacks them.
#define LRRT_CUDA_OPTIONAL_SYMBOLS(X) \
  X(cuLaunchKernelEx)                 \
  X(cuFuncGetParamInfo)               \
  X(cuFuncGetName)                    \
  X(cuModuleGetFunctionCount)         \
  X(cuModuleEnumerateFunctions)       \
  X(cuStreamWriteValue32)             \
  X(cuDeviceGetP2PAttribute)          \
  X(cuMemHostGetDevicePointer)        \
  X(cuTensorMapEncodeTiled)           \
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

// Graph entry points for the retained-replay lowering (cuda_graph.cpp), each
// resolved at an explicit API version whose prototype is the one cuda.h
// declares under that name: 12.0, where cuGraphAddKernelNode and
// cuGraphExecKernelNodeSetParams became the _v2 entry points taking
// CUDA_KERNEL_NODE_PARAMS_v2 (the struct the lowering fills; asking for the
// driver's newest version could hand back a later one). The others have kept
// their prototype since they appeared (10.0; cuGraphInstantiateWithFlags
// 11.4). Null when the driver is older than 12.0; replay then falls back to
// the generic lowering.
#define LRRT_CUDA_GRAPH_SYMBOLS(X)           \
  X(cuGraphCreate, 12000)                    \
  X(cuGraphDestroy, 12000)                   \
  X(cuGraphAddKernelNode, 12000)             \
  X(cuGraphAddMemcpyNode, 12000)             \
  X(cuGraphAddMemsetNode, 12000)             \
  X(cuGraphAddEventRecordNode, 12000)        \
  X(cuGraphInstantiateWithFlags, 12000)      \
  X(cuGraphExecDestroy, 12000)               \
  X(cuGraphExecKernelNodeSetParams, 12000)   \
  X(cuGraphLaunch, 12000)

// Optional graph entry points, at the version of their prototype in cuda.h:
// cuGraphAddDependencies with edge data (_v2, CUDA 12.3) for programmatic
// edges between kernels that wait for their producer (LR_KERNEL_WAITS_FOR_
// PRODUCER). Null on older drivers: those edges are full edges then. The
// batch memory-operation node (its prototype unchanged since CUDA 11.7) for
// launches that write their own completion word (cuda_ticketed_launch.hpp);
// without it LRRT_CUDA_SYNC=launch acts as flag.
#define LRRT_CUDA_GRAPH_OPTIONAL_SYMBOLS(X)   \
  X(cuGraphAddDependencies, 12030)            \
  X(cuGraphAddBatchMemOpNode, 12000)          \
  X(cuGraphExecBatchMemOpNodeSetParams, 12000)

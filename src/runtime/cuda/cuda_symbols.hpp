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

#include "cuda_symbol_table.h"

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

// The graph entry points (LRRT_CUDA_GRAPH_SYMBOLS), each requested at the
// version its prototype has in cuda.h (the member for cuGraphAddKernelNode is
// cuGraphAddKernelNode_v2 after cuda.h's macro, taking the _v2 struct).
struct CudaGraphSymbols {
#define LRRT_CUDA_DECLARE_GRAPH_SYMBOL(name, version) decltype(&::name) name = nullptr;
  LRRT_CUDA_GRAPH_SYMBOLS(LRRT_CUDA_DECLARE_GRAPH_SYMBOL)
  LRRT_CUDA_GRAPH_OPTIONAL_SYMBOLS(LRRT_CUDA_DECLARE_GRAPH_SYMBOL)  // may stay null
#undef LRRT_CUDA_DECLARE_GRAPH_SYMBOL
  // Every entry point resolved; else `missing` names those that were not.
  bool available = false;
  std::string missing;
};

// Loads the library, resolves the symbols and calls cuInit(0), once per
// process. Returns "" on success, else one sentence saying what is missing.
std::string load_cuda();
// The loaded table; only valid after load_cuda() returned "".
const CudaSymbols& cu();
// The graph entry points, resolved by load_cuda() (optional: see `available`).
const CudaGraphSymbols& cu_graph();

}  // namespace lrrt::rt::cuda

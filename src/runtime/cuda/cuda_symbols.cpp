#include "cuda_symbols.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include <fmt/format.h>

#include "cuda_status.hpp"

namespace lrrt::rt::cuda {
namespace {

CudaSymbols g_symbols;
CudaGraphSymbols g_graph_symbols;

#define LRRT_CUDA_STR_(x) #x
// The name after cuda.h's macros: cuMemAlloc -> "cuMemAlloc_v2".
#define LRRT_CUDA_EXPANDED_NAME(x) LRRT_CUDA_STR_(x)

using GetProcAddressFn = CUresult (*)(const char*, void**, int, cuuint64_t,
                                      CUdriverProcAddressQueryResult*);

std::string version_text(int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); }

std::string do_load() {
  CudaSymbols& s = g_symbols;
  const char* override_name = std::getenv("LRRT_CUDA_LIBRARY");
  s.library_name = override_name && *override_name ? override_name : "libcuda.so.1";
  s.library = dlopen(s.library_name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!s.library) {
    const char* why = dlerror();
    return fmt::format(
        "the CUDA driver library {} could not be loaded ({}): no NVIDIA driver is installed "
        "here, or set LRRT_CUDA_LIBRARY to its path",
        s.library_name, why ? why : "unknown reason");
  }
  auto raw = [&](const char* name) { return dlsym(s.library, name); };
  s.cuInit = reinterpret_cast<decltype(s.cuInit)>(raw("cuInit"));
  s.cuGetErrorName = reinterpret_cast<decltype(s.cuGetErrorName)>(raw("cuGetErrorName"));
  s.cuGetErrorString = reinterpret_cast<decltype(s.cuGetErrorString)>(raw("cuGetErrorString"));
  s.cuDriverGetVersion =
      reinterpret_cast<decltype(s.cuDriverGetVersion)>(raw("cuDriverGetVersion"));
  if (!s.cuInit || !s.cuGetErrorName || !s.cuGetErrorString || !s.cuDriverGetVersion)
    return fmt::format("{} is not a CUDA driver library: it has no cuInit", s.library_name);

  CUresult r = s.cuInit(0);
  if (r != CUDA_SUCCESS)
    return fmt::format("cuInit failed in {}: {}{}", s.library_name, cu_error_text(r),
                       r == CUDA_ERROR_NO_DEVICE ? "; no NVIDIA GPU is visible to this process" : "");
  s.cuDriverGetVersion(&s.driver_version);
  // Ask for the entry points of the API version the headers describe, or of
  // the driver when it is older.
  int api_version = std::min(s.driver_version, CUDA_VERSION);

  auto get_proc = reinterpret_cast<GetProcAddressFn>(raw("cuGetProcAddress_v2"));
  auto resolve = [&](const char* base, const char* expanded) -> void* {
    if (get_proc) {
      void* fn = nullptr;
      CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
      if (get_proc(base, &fn, api_version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status) ==
              CUDA_SUCCESS &&
          fn)
        return fn;
    }
    return raw(expanded);
  };

  std::string missing;
#define LRRT_CUDA_RESOLVE_REQUIRED(name)                                                      \
  s.name = reinterpret_cast<decltype(s.name)>(resolve(#name, LRRT_CUDA_EXPANDED_NAME(name))); \
  if (!s.name) missing += (missing.empty() ? "" : ", ") + std::string(#name);
#define LRRT_CUDA_RESOLVE_OPTIONAL(name) \
  s.name = reinterpret_cast<decltype(s.name)>(resolve(#name, LRRT_CUDA_EXPANDED_NAME(name)));
  LRRT_CUDA_REQUIRED_SYMBOLS(LRRT_CUDA_RESOLVE_REQUIRED)
  LRRT_CUDA_OPTIONAL_SYMBOLS(LRRT_CUDA_RESOLVE_OPTIONAL)
#undef LRRT_CUDA_RESOLVE_REQUIRED
#undef LRRT_CUDA_RESOLVE_OPTIONAL
  if (!missing.empty())
    return fmt::format("the CUDA driver in {} (CUDA {}) lacks {}; lrrt needs a newer driver",
                       s.library_name, version_text(s.driver_version), missing);

  // The graph entry points at the version whose prototype cuda.h declares
  // (no dlsym fallback: the unversioned export may take an older struct).
  CudaGraphSymbols& g = g_graph_symbols;
  auto resolve_at = [&](const char* base, int version) -> void* {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
    if (!get_proc || version > s.driver_version) return nullptr;
    if (get_proc(base, &fn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status) != CUDA_SUCCESS ||
        status != CU_GET_PROC_ADDRESS_SUCCESS)
      return nullptr;
    return fn;
  };
#define LRRT_CUDA_RESOLVE_GRAPH(name, version)                                   \
  g.name = reinterpret_cast<decltype(g.name)>(resolve_at(#name, version));      \
  if (!g.name) g.missing += (g.missing.empty() ? "" : ", ") + fmt::format("{} ({})", #name, version_text(version));
  LRRT_CUDA_GRAPH_SYMBOLS(LRRT_CUDA_RESOLVE_GRAPH)
#undef LRRT_CUDA_RESOLVE_GRAPH
  g.available = g.missing.empty();
#define LRRT_CUDA_RESOLVE_GRAPH_OPTIONAL(name, version) \
  g.name = reinterpret_cast<decltype(g.name)>(resolve_at(#name, version));
  LRRT_CUDA_GRAPH_OPTIONAL_SYMBOLS(LRRT_CUDA_RESOLVE_GRAPH_OPTIONAL)
#undef LRRT_CUDA_RESOLVE_GRAPH_OPTIONAL
  return {};
}

}  // namespace

std::string load_cuda() {
  static std::once_flag once;
  static std::string result;
  std::call_once(once, [] { result = do_load(); });
  return result;
}

const CudaSymbols& cu() { return g_symbols; }

const CudaGraphSymbols& cu_graph() { return g_graph_symbols; }

}  // namespace lrrt::rt::cuda

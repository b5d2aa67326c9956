// make_native_baseline: picks the backend's baseline (native_bench.hpp).
#include "native_bench.hpp"

#include "error.hpp"

namespace lrrt::rt {

std::unique_ptr<NativeBaseline> make_native_baseline(std::string_view backend, Device& device) {
  if (backend == "host") return make_host_native_baseline(device);
#if defined(LRRT_HAVE_CUDA)
  if (backend == "cuda") return make_cuda_native_baseline(device);
#endif
#if defined(LRRT_HAVE_HSA)
  if (backend == "hsa") return make_hsa_native_baseline(device);
#endif
  LRRT_THROW(LR_ERROR_NOT_SUPPORTED, "no native baseline for backend '{}' in this build", backend);
}

}  // namespace lrrt::rt

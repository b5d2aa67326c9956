// lrrt::native::make_baseline (include/lrrt/native_baseline.hpp): the
// opened device's backend picks its baseline, <backend>/<backend>_native.cpp.
// Part of the bench-only library lrrt_native_baselines, not of liblrrt.so.
#include "lrrt/native_baseline.hpp"

#include <memory>

#include "error.hpp"
#include "runtime.hpp"

namespace lrrt::rt {

std::unique_ptr<native::Baseline> make_host_native_baseline(Device& device);
#if defined(LRRT_HAVE_HSA)
std::unique_ptr<native::Baseline> make_hsa_native_baseline(Device& device);
#endif
#if defined(LRRT_HAVE_CUDA)
std::unique_ptr<native::Baseline> make_cuda_native_baseline(Device& device);
#endif

}  // namespace lrrt::rt

namespace lrrt::native {

std::unique_ptr<Baseline> make_baseline(lrrt::Device device) {
  rt::Runtime* runtime = rt::Runtime::instance();
  if (!runtime) LRRT_THROW(LR_ERROR_NOT_INITIALIZED, "the runtime is not initialised");
  rt::DeviceState& state = runtime->device(device.get());
  rt::Device& opened = runtime->opened(state);
  const std::string& backend = state.backend->name;
  if (backend == "host") return rt::make_host_native_baseline(opened);
#if defined(LRRT_HAVE_HSA)
  if (backend == "hsa") return rt::make_hsa_native_baseline(opened);
#endif
#if defined(LRRT_HAVE_CUDA)
  if (backend == "cuda") return rt::make_cuda_native_baseline(opened);
#endif
  LRRT_THROW(LR_ERROR_NOT_SUPPORTED, "no native baseline for backend '{}' in this build", backend);
}

}  // namespace lrrt::native

namespace lrrt::native {

// Backends without a native graph (host) keep these.
int Baseline::build_graph(std::span<const GraphStep>) {
  LRRT_THROW(LR_ERROR_NOT_SUPPORTED, "this backend has no native graph");
}
void Baseline::launch_graph(int) { LRRT_THROW(LR_ERROR_NOT_SUPPORTED, "this backend has no native graph"); }
void Baseline::patch_graph(int, size_t, size_t, std::span<const std::byte>) {
  LRRT_THROW(LR_ERROR_NOT_SUPPORTED, "this backend has no native graph");
}
void Baseline::destroy_graph(int) { LRRT_THROW(LR_ERROR_NOT_SUPPORTED, "this backend has no native graph"); }

}  // namespace lrrt::native

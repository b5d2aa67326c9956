// The backends compiled into this build, in "auto" preference order: GPU
// backends first, host last.
#include "backend.hpp"

namespace lrrt::rt {

std::unique_ptr<Backend> make_host_backend();
#if defined(LRRT_HAVE_HSA)
std::unique_ptr<Backend> make_hsa_backend();
#endif
#if defined(LRRT_HAVE_CUDA)
std::unique_ptr<Backend> make_cuda_backend();
#endif

std::vector<BackendRegistration> registered_backends() {
  std::vector<BackendRegistration> out;
#if defined(LRRT_HAVE_HSA)
  out.push_back({"hsa", make_hsa_backend});
#endif
#if defined(LRRT_HAVE_CUDA)
  out.push_back({"cuda", make_cuda_backend});
#endif
  out.push_back({"host", make_host_backend});
  return out;
}

}  // namespace lrrt::rt

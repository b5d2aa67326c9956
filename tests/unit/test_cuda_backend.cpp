// The cuda backend where no GPU may be present: initialize() never throws and
// says in one line why the backend is unusable.
#if defined(LRRT_HAVE_CUDA)
#include <doctest/doctest.h>

#include "backend.hpp"

namespace lrrt::rt {
std::unique_ptr<Backend> make_cuda_backend();
}

TEST_CASE("cuda backend: initialize never throws and says why when unusable") {
  auto backend = lrrt::rt::make_cuda_backend();
  auto status = backend->initialize();
  if (status.usable) {
    CHECK(backend->device_count() > 0);
  } else {
    MESSAGE("cuda backend unusable here: ", status.message);
    CHECK_FALSE(status.message.empty());
    CHECK(status.message.find('\n') == std::string::npos);
    CHECK(backend->device_count() == 0);
  }
}
#endif

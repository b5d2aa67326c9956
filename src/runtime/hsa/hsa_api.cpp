#include "hsa_api.hpp"

#include <dlfcn.h>

#include <cstdlib>

#include <fmt/format.h>

namespace lrrt::rt::hsa {

std::string Api::describe(hsa_status_t status) const {
  const char* text = nullptr;
  if (hsa_status_string && hsa_status_string(status, &text) == HSA_STATUS_SUCCESS && text)
    return fmt::format("{} (status {})", text, int(status));
  return fmt::format("HSA status {}", int(status));
}

std::string load_api(Api& api) {
  const char* env = std::getenv("LRRT_HSA_LIBRARY");
  api.path = env && *env ? env : "libhsa-runtime64.so.1";
  api.handle = dlopen(api.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!api.handle) {
    const char* why = dlerror();
    return fmt::format("cannot load {} ({}); install ROCm's libhsa-runtime64 or set LRRT_HSA_LIBRARY",
                       api.path, why ? why : "unknown reason");
  }
#define LRRT_HSA_LOAD(name)                                                          \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(api.handle, #name));         \
  if (!api.name)                                                                     \
    return fmt::format("{} lacks the function {}; it is not a usable libhsa-runtime64", \
                       api.path, #name);
  LRRT_HSA_FUNCTIONS(LRRT_HSA_LOAD)
#undef LRRT_HSA_LOAD
  return "";
}

}  // namespace lrrt::rt::hsa

#include "hsa_symbols.hpp"

#include <dlfcn.h>

#include <cstdlib>

#include <fmt/format.h>

namespace lrrt::rt::hsa {

std::string load_hsa_symbols(HsaSymbols& s) {
  const char* env = std::getenv("LRRT_HSA_LIBRARY");
  s.library_name = env && *env ? env : "libhsa-runtime64.so.1";
  s.library = dlopen(s.library_name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!s.library) {
    const char* why = dlerror();
    return fmt::format("cannot load {} ({}); install ROCm's libhsa-runtime64 or set LRRT_HSA_LIBRARY",
                       s.library_name, why ? why : "unknown reason");
  }
#define LRRT_HSA_RESOLVE_SYMBOL(name)                                                                 \
  s.name = reinterpret_cast<decltype(s.name)>(dlsym(s.library, #name));                             \
  if (!s.name)                                                                                      \
    return fmt::format("{} lacks the function {}; it is not a usable libhsa-runtime64", s.library_name, \
                       #name);
  LRRT_HSA_SYMBOLS(LRRT_HSA_RESOLVE_SYMBOL)
#undef LRRT_HSA_RESOLVE_SYMBOL
  return "";
}

}  // namespace lrrt::rt::hsa

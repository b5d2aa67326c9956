// The HSA functions lrrt calls (hsa_symbol_table.h), loaded from
// libhsa-runtime64 with dlopen: the build needs only the headers.
// LRRT_HSA_LIBRARY overrides the path; the test stand-in (tests/hsa/standin)
// is loaded the same way. Each backend instance loads its own table (tests
// switch libraries within one process).
#pragma once

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#include <string>

#include "hsa_symbol_table.h"

namespace lrrt::rt::hsa {

struct HsaSymbols {
#define LRRT_HSA_DECLARE_SYMBOL(name) decltype(&::name) name = nullptr;
  LRRT_HSA_SYMBOLS(LRRT_HSA_DECLARE_SYMBOL)
#undef LRRT_HSA_DECLARE_SYMBOL
  void* library = nullptr;
  std::string library_name;  // what was dlopen'd
};

// Loads the library and every symbol. Returns "" on success, else one
// sentence saying why not. Never throws.
std::string load_hsa_symbols(HsaSymbols& symbols);

}  // namespace lrrt::rt::hsa

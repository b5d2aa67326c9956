#include "hsa_status.hpp"

#include <fmt/format.h>

namespace lrrt::rt::hsa {

std::string hsa_error_text(const HsaSymbols& symbols, hsa_status_t status) {
  const char* text = nullptr;
  if (symbols.hsa_status_string && symbols.hsa_status_string(status, &text) == HSA_STATUS_SUCCESS && text)
    return fmt::format("{} (status {})", text, int(status));
  return fmt::format("HSA status {}", int(status));
}

void throw_hsa_error(const HsaSymbols& symbols, hsa_status_t result, lr_status_t status, const char* call,
                     const char* file, int line) {
  throw Error(status, fmt::format("{} failed: {} [at {}:{}]", call_name(call), hsa_error_text(symbols, result),
                                  file_basename(file), line));
}

}  // namespace lrrt::rt::hsa

// HSA status codes as lrrt errors. Every failed HSA call is reported by
// LRRT_HSA_CHECK, the backend's one check macro (cuda and host have the same
// shape): it names the call, ROCr's text for the status and the call site.
#pragma once

#include <string>

#include "error.hpp"
#include "hsa_symbols.hpp"

namespace lrrt::rt::hsa {

// "HSA_STATUS_ERROR_OUT_OF_RESOURCES: ... (status 4104)", from the library's
// hsa_status_string when it has one.
std::string hsa_error_text(const HsaSymbols& symbols, hsa_status_t status);

// True for HSA_STATUS_SUCCESS and HSA_STATUS_INFO_BREAK (an iteration the
// callback ended on purpose).
constexpr bool hsa_succeeded(hsa_status_t status) {
  return status == HSA_STATUS_SUCCESS || status == HSA_STATUS_INFO_BREAK;
}

// ROCr's statuses say little about the cause (one status covers a bad code
// object and a full device), so the call site chooses the lr_status_t.
[[noreturn]] void throw_hsa_error(const HsaSymbols& symbols, hsa_status_t result, lr_status_t status,
                                  const char* call, const char* file, int line);

}  // namespace lrrt::rt::hsa

// LRRT_HSA_CHECK(symbols, status, call): calls symbols.call; when it fails,
// throws lrrt::Error(status, "<function> failed: <HSA text> [at file:line]").
//   LRRT_HSA_CHECK(api_, LR_ERROR_RUNTIME, hsa_signal_create(1, 0, nullptr, &signal));
#define LRRT_HSA_CHECK(symbols, status, call)                                                  \
  do {                                                                                         \
    const hsa_status_t lrrt_hsa_result_ = (symbols).call;                                      \
    if (!::lrrt::rt::hsa::hsa_succeeded(lrrt_hsa_result_))                                     \
      ::lrrt::rt::hsa::throw_hsa_error((symbols), lrrt_hsa_result_, (status), #call, __FILE__, \
                                       __LINE__);                                              \
  } while (0)

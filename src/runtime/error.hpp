// Errors inside the runtime are C++ exceptions carrying an lr_status_t: the
// public lrrt::Error of the C++ wrapper (include/lrrt/lrrt.hpp), so code
// linking the runtime directly (the bench-only native baselines, tests)
// catches what a wrapper user catches. The C ABI (c_api*.cpp) turns them into
// status codes and per-thread messages in one place. Messages name the call
// site so a user report points at the code.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

#include "lrrt/lrrt.hpp"

namespace lrrt::rt {

// Runtime code throws and catches lrrt::Error; inside lrrt::rt the plain name
// Error finds it (there is no second exception type).

// Strips the directory so messages stay short: "cuda_device.cpp:120".
constexpr const char* file_basename(const char* path) {
  const char* base = path;
  for (const char* p = path; *p; ++p)
    if (*p == '/') base = p + 1;
  return base;
}

// The function a backend's check macro called, from the call's text:
// "hsa_signal_create(1, 0, nullptr, &s)" -> "hsa_signal_create",
// "fd = ::memfd_create(...)" -> "memfd_create".
constexpr std::string_view call_name(std::string_view call) {
  std::string_view callee = call.substr(0, call.find('('));
  const size_t last = callee.find_last_of(" =:.>");
  return last == std::string_view::npos ? callee : callee.substr(last + 1);
}

}  // namespace lrrt::rt

// Throws lrrt::Error with a formatted message; LRRT_THROW_AT adds the call
// site ("... [at file.cpp:42]") for errors that come from a library call.
#define LRRT_THROW(status, ...) \
  throw ::lrrt::Error((status), ::fmt::format(__VA_ARGS__))
#define LRRT_THROW_AT(status, ...)                                        \
  throw ::lrrt::Error(                                                    \
      (status), ::fmt::format(__VA_ARGS__) +                              \
                    ::fmt::format(" [at {}:{}]",                          \
                                  ::lrrt::rt::file_basename(__FILE__), __LINE__))

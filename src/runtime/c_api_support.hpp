// Private to the C ABI's files (c_api*.cpp, one per section of
// include/lrrt/lrrt.h): what their lr_* functions share. guard() is the one
// place an exception becomes a status code (its message kept per thread for
// lr_last_error_message()); rt(), require(), copy_string() check and convert
// arguments; events_of(), to_config(), arg_bytes() and launch() turn handles
// and launch arguments into the runtime's types. Defined in c_api.cpp.
#pragma once

#include <cstddef>
#include <exception>
#include <new>
#include <span>
#include <string>
#include <vector>

#include "error.hpp"
#include "lrrt/formats/error.hpp"
#include "lrrt/lrrt.h"
#include "runtime.hpp"

namespace lrrt::c_api {

using lrrt::rt::CopyKind;
using lrrt::rt::DeviceState;
using lrrt::Error;
using lrrt::rt::Event;
using lrrt::rt::Runtime;

namespace formats = lrrt::formats;

extern thread_local std::string t_last_error;

template <typename F>
lr_status_t guard(const char* function, F&& body) noexcept {
  try {
    body();
    t_last_error.clear();
    return LR_SUCCESS;
  } catch (const Error& e) {
    t_last_error = std::string(function) + ": " + e.what();
    return e.status();
  } catch (const formats::FormatError& e) {
    // A code object that is not what it claims to be (lrrt_formats' readers).
    t_last_error = std::string(function) + ": " + e.what();
    return LR_ERROR_INVALID_IMAGE;
  } catch (const std::bad_alloc&) {
    t_last_error = std::string(function) + ": out of host memory";
    return LR_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    t_last_error = std::string(function) + ": " + e.what();
    return LR_ERROR_RUNTIME;
  } catch (...) {
    t_last_error = std::string(function) + ": unknown error";
    return LR_ERROR_RUNTIME;
  }
}

Runtime& rt();

template <typename T>
void require(const T* p, const char* what) {
  if (!p) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "{} is null", what);
}

void copy_string(char* dst, size_t capacity, const std::string& src);

// lr_graph_create, lr_queue_create, lr_event_create: `*out` (named `what` in
// the error when null) = a new handle made by `create` on the device; null
// when that fails.
template <class Handle>
lr_status_t create_on_device(const char* function, lr_device_t device, Handle** out, const char* what,
                             Handle* (Runtime::*create)(DeviceState&)) {
  return guard(function, [&] {
    require(out, what);
    *out = nullptr;
    Runtime& r = rt();
    *out = (r.*create)(r.device(device));
  });
}

std::vector<Event*> events_of(Runtime& r, lr_event_t* const* deps, size_t count,
                              DeviceState* device);

lrrt::rt::LaunchConfig to_config(const lr_launch_config_t* c);

std::span<const std::byte> arg_bytes(const void* args, size_t size);

void launch(Runtime& r, lrrt::rt::Queue& queue, lrrt::rt::SubmitCount& submissions, DeviceState* queue_device,
            lr_kernel_t* kernel, const lr_launch_config_t* config, const void* args, size_t args_size,
            lr_event_t* const* deps, size_t dep_count);

void check_copy_args(void* dst, const void* src, size_t size);

}  // namespace lrrt::c_api

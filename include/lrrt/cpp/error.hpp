// lrrt C++ wrapper: lrrt::Error and check(): a failed call becomes an exception carrying
// its status and lr_last_error_message().
// One concept of lrrt/lrrt.hpp, the header to include.
#pragma once

#include <stdexcept>
#include <string>

#include "lrrt/c/status.h"

namespace lrrt {

class Error : public std::runtime_error {
 public:
  Error(lr_status_t status, const std::string& what)
      : std::runtime_error(what), status_(status) {}
  lr_status_t status() const noexcept { return status_; }

 private:
  lr_status_t status_;
};

inline void check(lr_status_t status, const char* operation) {
  if (status == LR_SUCCESS) return;
  // The C ABI's message already starts with the function's name.
  std::string message = lr_last_error_message();
  if (message.empty()) message = std::string(operation) + ": " + lr_status_string(status);
  throw Error(status, message);
}

}  // namespace lrrt

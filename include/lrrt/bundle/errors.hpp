// Errors the bundle library and the tool raise, each carrying the process exit code the CLI
// returns for it (documented in `lrrt --help` and docs/manifest.md):
//   0 success, 1 verification failed, 2 usage or input error,
//   3 runtime, device or output I/O error.
// A library user tells bad input (InputError, ManifestError) from a failing
// device (DeviceError) by type or by exit_code().
#pragma once

#include <stdexcept>
#include <string>

namespace lrrt::bundle {

enum ExitCode : int {
  kExitOk = 0,
  kExitVerificationFailed = 1,
  kExitInputError = 2,
  kExitRuntimeError = 3,
};

class Error : public std::runtime_error {
 public:
  Error(int exit_code, const std::string& message)
      : std::runtime_error(message), exit_code_(exit_code) {}
  int exit_code() const noexcept { return exit_code_; }

 private:
  int exit_code_;
};

// Bad manifest, bad file, bad option: exit 2.
class InputError : public Error {
 public:
  explicit InputError(const std::string& message) : Error(kExitInputError, message) {}
};

// The device or runtime failed (allocation, launch, kernel fault): exit 3.
class DeviceError : public Error {
 public:
  explicit DeviceError(const std::string& message) : Error(kExitRuntimeError, message) {}
};

// A result file could not be written although its path was fine when the
// command started (disk full, I/O error, quota): exit 3, like a device
// failure, because the input was good.
class OutputError : public Error {
 public:
  explicit OutputError(const std::string& message) : Error(kExitRuntimeError, message) {}
};

}  // namespace lrrt::bundle

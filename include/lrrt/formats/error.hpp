// The one exception every reader in lrrt::formats throws: the bytes are not
// what they claim to be. The message is a sentence that names what is wrong
// and where ("invalid cubin: section header 3 (64 bytes at offset 9000) lies
// outside the 4096-byte file"). The runtime turns it into
// LR_ERROR_INVALID_IMAGE; `lrrt inspect` into an input error (exit 2).
#pragma once

#include <stdexcept>
#include <string>

namespace lrrt::formats {

class FormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace lrrt::formats

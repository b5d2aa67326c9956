// Host kernel libraries (ELF shared objects for this host, the host
// backend's code objects) read from the file alone: nothing is loaded, no
// constructor runs. The kernels come from the kernel records each kernel
// exports (include/lrrt/host_kernel_abi.h). The runtime still loads the
// library to run it and takes the kernel table from lrrt_host_library_query.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lrrt/formats/error.hpp"
#include "lrrt/formats/kernel.hpp"
#include "lrrt/host_kernel_abi.h"

namespace lrrt::formats::host {

struct HostLibrary {
  std::string machine;     // "x86_64"
  bool has_query = false;  // exports lrrt_host_library_query
  // False for libraries without kernel records (built before records
  // existed, or hand-written): their kernels are known only once loaded.
  bool has_records = false;
  std::vector<KernelInfo> kernels;  // from the records, by name
};

// FormatError("invalid host kernel library: ...") when the ELF or a record
// is malformed, or when the file exports no lrrt_host_library_query.
HostLibrary read_host_library(std::span<const std::byte> image);

// One entry of the ABI's kernel table as a KernelInfo (the host backend).
KernelInfo kernel_info(const lrrt_host_kernel_t& kernel);

}  // namespace lrrt::formats::host

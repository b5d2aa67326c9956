// lrrt::formats: reads code objects from their bytes, without a device or a
// GPU library (library lrrt_formats, src/formats/). One header per concept:
#pragma once

#include "lrrt/formats/error.hpp"           // FormatError
#include "lrrt/formats/format.hpp"          // detect_format, format_name, describe_format
#include "lrrt/formats/elf.hpp"             // the bounds-checked ELF reader
#include "lrrt/formats/kernel.hpp"          // KernelInfo, KernelArgInfo, ArgKind
#include "lrrt/formats/amdgpu.hpp"          // HSACO metadata, target IDs, kernarg layout
#include "lrrt/formats/amdgpu_printf.hpp"   // OpenCL printf: format table, printf buffer records
#include "lrrt/formats/compression.hpp"     // zlib, zstd, LZ4, MD5
#include "lrrt/formats/offload_bundle.hpp"  // clang offload bundles, plain and compressed
#include "lrrt/formats/nvidia.hpp"          // cubin, fatbin, PTX
#include "lrrt/formats/host_library.hpp"    // host kernel libraries (.so)
#include "lrrt/formats/container.hpp"       // the entries a file holds
#include "lrrt/formats/select.hpp"          // the entry for a device, and why
#include "lrrt/formats/inspect.hpp"         // what `lrrt inspect` reports
#include "lrrt/formats/triton.hpp"          // Triton cache entries

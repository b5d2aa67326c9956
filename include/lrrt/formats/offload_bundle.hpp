// Clang offload bundles ("__CLANG_OFFLOAD_BUNDLE__"), the container HIP uses
// for fat binaries: a header, then (offset, size, id) per entry. Entry ids
// look like "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+" or
// "host-x86_64-unknown-linux-gnu-". Compressed bundles ("CCOB") are
// recognised and refused with a sentence (not read yet).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lrrt/formats/amdgpu.hpp"

namespace lrrt::formats {

struct BundleEntry {
  std::string id;                    // full entry id
  std::string kind;                  // "hipv4", "hip", "openmp", "host"
  std::string triple;                // amdgcn-amd-amdhsa
  std::string target;                // "gfx90a:xnack+" ("" for host)
  uint64_t offset = 0;               // in the bundle
  std::span<const std::byte> image;  // inside the bundle's bytes
  bool is_amdgpu() const { return triple.rfind("amdgcn-", 0) == 0; }
};

// FormatError("invalid clang offload bundle: ...") when malformed or compressed.
std::vector<BundleEntry> parse_offload_bundle(std::span<const std::byte> bundle);

// The AMDGPU entry that best matches `agent`; FormatError listing the
// targets present when none does.
const BundleEntry& select_bundle_entry(const std::vector<BundleEntry>& entries,
                                       const amdgpu::TargetId& agent);

}  // namespace lrrt::formats

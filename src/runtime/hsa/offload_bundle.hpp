// Clang offload bundles ("__CLANG_OFFLOAD_BUNDLE__"), the container HIP uses
// for fat binaries: a header, then (offset, size, id) per entry. Entry ids
// look like "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+" or "host-x86_64-...".
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "code_object.hpp"

namespace lrrt::rt::amdgpu {

struct BundleEntry {
  std::string id;                   // full entry id
  std::string kind;                 // "hipv4", "hip", "openmp", "host"
  std::string triple;               // amdgcn-amd-amdhsa
  std::string target;               // "gfx90a:xnack+" ("" for host)
  std::span<const std::byte> image;  // inside the bundle's bytes
  bool is_amdgpu() const { return triple.rfind("amdgcn-", 0) == 0; }
};

// Throws Error(LR_ERROR_INVALID_IMAGE) when malformed or compressed.
std::vector<BundleEntry> parse_offload_bundle(std::span<const std::byte> bundle);

// The AMDGPU entry that best matches `agent`; throws LR_ERROR_INVALID_IMAGE
// listing the targets present when none does.
const BundleEntry& select_bundle_entry(const std::vector<BundleEntry>& entries,
                                       const TargetId& agent);

}  // namespace lrrt::rt::amdgpu

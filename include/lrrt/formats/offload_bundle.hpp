// Clang offload bundles ("__CLANG_OFFLOAD_BUNDLE__"), the container HIP uses
// for fat binaries: a header, then (offset, size, id) per entry. Entry ids
// look like "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+" or
// "host-x86_64-unknown-linux-gnu-". Compressed bundles ("CCOB", clang's
// --offload-compress; versions 1-3, zlib or zstd) are decompressed, their
// sizes and MD5 hash checked, before any entry is read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
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

struct OffloadBundle {
  std::vector<BundleEntry> entries;
  uint64_t stored_size = 0;        // bytes of the input the bundle occupies (where a next one may start)
  std::string compression;         // "", "zlib", "zstd"
  uint16_t compressed_version = 0;  // CCOB version, 0 when not compressed
  // The decompressed bundle the entries point into (null when not compressed).
  std::shared_ptr<const std::vector<std::byte>> storage;
};

// A bundle at the start of `bytes`, compressed or not; bytes after it are
// ignored (stored_size says where it ends). FormatError("invalid clang
// offload bundle: ...") when malformed, when a compressed one's sizes lie or
// its stream is corrupt, or when its hash does not match.
OffloadBundle read_offload_bundle(std::span<const std::byte> bytes);
bool is_compressed(std::span<const std::byte> bytes);

// The AMDGPU entry that best matches `agent`; FormatError listing the
// targets present when none does.
const BundleEntry& select_bundle_entry(const std::vector<BundleEntry>& entries,
                                       const amdgpu::TargetId& agent);

}  // namespace lrrt::formats

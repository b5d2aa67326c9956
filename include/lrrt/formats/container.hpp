// The container layer: a file is either one code object or a container of
// several (clang offload bundle, fatbin). code_object_entries() yields the
// code objects a file holds, each with where it lies and what it is, so every
// consumer (the runtime picking an entry, `lrrt inspect` listing them) walks
// containers the same way. Containers still to come (compressed bundles,
// compressed fatbin entries, the .hip_fatbin/.nv_fatbin sections of host
// executables) become more cases here: an entry then owns its decompressed
// bytes through `storage`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lrrt/formats/error.hpp"
#include "lrrt/formats/format.hpp"

namespace lrrt::formats {

struct CodeObjectEntry {
  Format container = Format::Unknown;  // the file's format (== format for a plain file)
  Format format = Format::Unknown;     // the entry's own format (Unknown when compressed or empty)
  std::string id;         // bundle entry id, fatbin entry ("sm_90 cubin"); "" for a plain file
  std::string target;     // target the container names: "gfx90a:xnack+", "sm_90", "compute_90"
  uint64_t offset = 0;    // where the entry's bytes lie in the file
  uint64_t size = 0;      // stored bytes
  std::string compression;  // "", "lz4", "zstd": bytes not readable yet
  std::span<const std::byte> bytes;  // the code object (empty when compressed)
  std::shared_ptr<const std::vector<std::byte>> storage;  // owns `bytes` when a container decoded them
};

// FormatError when the file is a malformed container; a file that is no
// container gives one entry covering it.
std::vector<CodeObjectEntry> code_object_entries(std::span<const std::byte> image);

}  // namespace lrrt::formats

// The container layer: a file is either one code object or a container of
// several, and code_object_entries() yields the code objects it holds, each
// with where it lies and what it is, so every consumer (the runtime picking an
// entry, `lrrt inspect` listing them) walks containers the same way.
//
// Containers read (docs/code-objects.md):
//  - clang offload bundles, plain or compressed (CCOB v1-3, zlib or zstd);
//  - fatbins, whose entries may be compressed (zstd or LZ4);
//  - host executables and shared libraries (ELF for this host) carrying GPU
//    code in .hip_fatbin (offload bundles), .nv_fatbin or __nv_relfatbin
//    (fatbins): read as files, never loaded, so no constructor runs.
// Entries whose bytes are stored compressed in a fatbin are decoded only when
// asked (decode_entry), so listing a 46 MB library decodes nothing it is not
// told to.
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
  Format format = Format::Unknown;     // the entry's own format
  std::string id;       // bundle entry id, fatbin entry ("sm_90 cubin"); "" for a plain file
  std::string target;   // target the container names: "gfx90a:xnack+", "sm_90a", "compute_90"
  std::string section;  // host binaries: the ELF section holding it (".nv_fatbin"); "" otherwise
  uint32_t group = 0;   // which bundle or fatbin of the file (several in one section)
  // Where the entry's stored bytes lie: in the file, or for a compressed
  // bundle's entries in the decompressed bundle (then `in_compressed_bundle`).
  uint64_t offset = 0;
  uint64_t size = 0;  // stored bytes
  bool in_compressed_bundle = false;
  std::string compression;  // how its container stored it: "", "zlib", "zstd", "lz4"
  uint64_t uncompressed_size = 0;  // bytes once decoded
  std::span<const std::byte> stored;  // the bytes as stored (compressed when pending)
  std::span<const std::byte> bytes;   // the code object; empty until decode_entry when pending
  std::shared_ptr<const std::vector<std::byte>> storage;  // owns `bytes` when decoded here
  bool pending() const { return bytes.empty() && !compression.empty() && size != 0; }
  // "entry 'sm_90 cubin' of fatbin 0 in section .nv_fatbin" / "the whole file".
  std::string where() const;
  std::string container_kind() const;  // "bundle", "compressed bundle", "fatbin"
};

// FormatError when the file is a malformed container; a file that is no
// container gives one entry covering it. A host ELF with no GPU code gives
// one HostSharedObject entry (a host kernel library, or not lrrt's at all).
std::vector<CodeObjectEntry> code_object_entries(std::span<const std::byte> image);

// Decodes a pending entry's bytes (no-op otherwise): FormatError when its
// compressed stream is corrupt or does not expand to the recorded size.
void decode_entry(CodeObjectEntry& entry);

// The format of a whole file: detect_format, except that a host ELF carrying
// GPU code sections and no lrrt host kernels is HostBinary.
Format file_format(std::span<const std::byte> image);

// The ELF sections of a host binary that hold GPU code.
inline constexpr const char* kGpuCodeSections[] = {".hip_fatbin", ".nv_fatbin", "__nv_relfatbin"};

}  // namespace lrrt::formats

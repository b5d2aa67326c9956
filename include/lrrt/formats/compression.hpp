// Decompression for the containers that store code compressed: clang's
// compressed offload bundles (CCOB: zlib or zstd) and fatbin entries (LZ4
// blocks or zstd frames). Every size comes from a file, so every call is told
// the exact size the bytes must expand to and refuses anything else: a lying
// header, a truncated or corrupt stream, or trailing garbage is a
// FormatError, and no buffer larger than the bound below is ever allocated.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "lrrt/formats/error.hpp"

namespace lrrt::formats {

enum class Codec { Zlib, Zstd, Lz4Block };

// "zlib", "zstd", "lz4".
std::string_view codec_name(Codec codec);

// No code object is larger; a header claiming more is hostile or corrupt.
inline constexpr uint64_t kMaxDecompressedBytes = uint64_t(1) << 31;
// zstd and zlib cannot expand data by more than about this factor for real
// code (measured: 5-15x on code objects); the bound keeps a 100-byte file
// from claiming 2 GiB.
inline constexpr uint64_t kMaxCompressionRatio = 1024;

// Exactly `size` bytes from `compressed`, all of which must be used;
// FormatError("<what>: ...") otherwise.
std::vector<std::byte> decompress(Codec codec, std::span<const std::byte> compressed, uint64_t size,
                                  std::string_view what);

// How many bytes at the start of `bytes` the one zstd frame or zlib stream
// there occupies (containers that do not record the compressed size);
// FormatError when no whole frame is there.
uint64_t compressed_frame_size(Codec codec, std::span<const std::byte> bytes, std::string_view what);

// The MD5 digest (RFC 1321): clang's compressed bundles carry the first 8
// bytes of the uncompressed bundle's MD5.
std::array<uint8_t, 16> md5(std::span<const std::byte> bytes);

}  // namespace lrrt::formats

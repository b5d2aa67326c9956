// NumPy .npy files (format versions 1, 2 and 3): read any little-endian
// numeric array, write the manifest's element types. bf16 has no numpy type
// and is written as float32 (exactly).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tool/dtype.hpp"

namespace lrrt::tool {

struct NpyArray {
  std::string descr;            // as in the file: "<f4"
  DType type = DType::f32;
  std::vector<uint64_t> shape;  // () for a scalar
  std::vector<std::byte> data;  // C order
  uint64_t count() const;
};

// Throws InputError naming `what` (usually the file) on any problem:
// bad magic, unsupported descr, Fortran order, truncated data.
NpyArray parse_npy(std::span<const std::byte> bytes, const std::string& what);
NpyArray read_npy(const std::filesystem::path& path);

// The bytes of a .npy file holding `count` elements of `type` with `shape`.
std::string npy_bytes(DType type, const std::vector<uint64_t>& shape, const std::byte* data);

// Reads a whole file; InputError naming the file on failure.
std::vector<std::byte> read_file_bytes(const std::filesystem::path& path);

}  // namespace lrrt::tool

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

#include "lrrt/bundle/dtype.hpp"

namespace lrrt::bundle {

struct NpyArray {
  std::string descr;            // as in the file: "<f4"
  DType type = DType::f32;
  std::vector<uint64_t> shape;  // () for a scalar
  std::vector<std::byte> data;  // C order
  uint64_t count() const;
};

// The header of a .npy file, parsed as the Python literal it is.
struct NpyHeader {
  std::string descr;
  DType type = DType::f32;
  bool fortran_order = false;
  std::vector<uint64_t> shape;
  uint64_t count = 1;        // product of shape (checked for overflow)
  uint64_t data_bytes = 0;   // count * element size (checked for overflow)
  uint64_t data_offset = 0;  // where the data starts in the file
};

// Parses the magic, version and header dict at the start of `bytes` (which
// must hold at least the whole header). Throws InputError naming `what`:
// bad magic, unsupported version or descr, Fortran order, a header that is
// not exactly one {'descr', 'fortran_order', 'shape'} dict, duplicate or
// unknown keys, a shape whose size overflows.
NpyHeader parse_npy_header(std::span<const std::byte> bytes, const std::string& what);

// A whole .npy file in memory; the data must be exactly what the shape needs.
NpyArray parse_npy(std::span<const std::byte> bytes, const std::string& what);

struct NpyExpectation {
  std::optional<uint64_t> count;  // elements the caller needs, checked before the data is read
};
// Reads a regular file: header first, sizes checked against the file's size
// (and the expectation) before the data is read.
NpyArray read_npy(const std::filesystem::path& path, const NpyExpectation& expect = {});

// The bytes of a .npy file holding `count` elements of `type` with `shape`.
std::string npy_bytes(DType type, const std::vector<uint64_t>& shape, const std::byte* data);


}  // namespace lrrt::bundle

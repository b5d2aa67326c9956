// Element types of manifest buffers and scalars, with conversions between
// JSON/double values and bytes, including IEEE half (f16) and bfloat16 with
// round-to-nearest-even.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lrrt::bundle {

// c64 and c128 are complex numbers: two f32 or f64 parts, real first (C's
// float _Complex, std::complex<float>, numpy complex64).
enum class DType : uint8_t { i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64, c64, c128 };

std::optional<DType> parse_dtype(std::string_view name);
std::string_view dtype_name(DType t);
size_t dtype_size(DType t);
// Floats include the complex types (NaN poison, rounding, tolerances).
bool dtype_is_float(DType t);
bool dtype_is_complex(DType t);
// A complex type's part type (c64 -> f32, c128 -> f64); other types: t.
DType dtype_part(DType t);
// 2 for complex types (real, imaginary), else 1.
size_t dtype_parts(DType t);
// The natural (C) alignment: the part's size for complex types, else the size.
size_t dtype_align(DType t);
bool dtype_is_signed(DType t);  // signed integer types
// Every type name, "i8, i16, ..." for messages.
std::string dtype_list();

// numpy's descr for the type ("<f4"); bf16 has none and returns "".
std::string_view dtype_npy_descr(DType t);
std::optional<DType> dtype_from_npy_descr(std::string_view descr);

// Round-to-nearest-even conversions; NaN stays NaN (quiet), overflow gives
// infinity, tiny values become subnormals or signed zero.
uint16_t double_to_f16_bits(double v);
uint16_t double_to_bf16_bits(double v);
double f16_bits_to_double(uint16_t bits);
double bf16_bits_to_double(uint16_t bits);

// Reads element i of a typed array as long double (exact for every integer
// type on x86-64, where long double has a 64-bit mantissa). For a complex
// type, the real part of element i; store_element sets the real part and a
// zero imaginary part (use dtype_part on 2 * count parts for both).
long double load_element(DType t, const std::byte* base, size_t i);
// Writes element i from a long double: floats round to nearest even,
// integers are truncated to the type's range by the caller (see fits()).
void store_element(DType t, std::byte* base, size_t i, long double v);

// True when v (an integer value) is representable in the integer type t.
bool integer_fits(DType t, long double v);

}  // namespace lrrt::bundle

#include "lrrt/bundle/dtype.hpp"

#include <cmath>
#include <cstring>
#include <limits>

namespace lrrt::bundle {
namespace {

struct Info {
  DType type;
  std::string_view name;
  size_t size;
  std::string_view npy;
};

constexpr Info kInfo[] = {
    {DType::i8, "i8", 1, "|i1"},     {DType::i16, "i16", 2, "<i2"},  {DType::i32, "i32", 4, "<i4"},
    {DType::i64, "i64", 8, "<i8"},   {DType::u8, "u8", 1, "|u1"},    {DType::u16, "u16", 2, "<u2"},
    {DType::u32, "u32", 4, "<u4"},   {DType::u64, "u64", 8, "<u8"},  {DType::f16, "f16", 2, "<f2"},
    {DType::bf16, "bf16", 2, ""},    {DType::f32, "f32", 4, "<f4"},  {DType::f64, "f64", 8, "<f8"},
    {DType::c64, "c64", 8, "<c8"},   {DType::c128, "c128", 16, "<c16"},
};

const Info& info(DType t) { return kInfo[static_cast<size_t>(t)]; }

// Encodes a finite or special double into a binary float with `exp_bits`
// exponent bits and `man_bits` stored mantissa bits, rounding to nearest even.
uint16_t encode_small_float(double v, int exp_bits, int man_bits) {
  const uint16_t sign = std::signbit(v) ? uint16_t(1u << (exp_bits + man_bits)) : 0;
  const uint32_t exp_all_ones = (1u << exp_bits) - 1;
  if (std::isnan(v)) return uint16_t(sign | (exp_all_ones << man_bits) | (1u << (man_bits - 1)));
  double a = std::fabs(v);
  if (std::isinf(a)) return uint16_t(sign | (exp_all_ones << man_bits));
  if (a == 0.0) return sign;
  const int bias = (1 << (exp_bits - 1)) - 1;
  const int emin = 1 - bias;  // exponent of the smallest normal
  int e2 = 0;
  (void)std::frexp(a, &e2);   // a = m * 2^e2, m in [0.5, 1)
  int e = e2 - 1;             // a = 1.f * 2^e
  uint64_t bits;
  if (e < emin) {
    // Subnormal: quantum 2^(emin - man_bits); the mantissa field is the count
    // of quanta, and a count of 2^man_bits is exactly the smallest normal.
    double q = std::ldexp(a, man_bits - emin);  // exact scaling by a power of two
    bits = static_cast<uint64_t>(std::nearbyint(q));
  } else {
    double q = std::ldexp(a, man_bits - e);  // in [2^man_bits, 2^(man_bits+1))
    uint64_t r = static_cast<uint64_t>(std::nearbyint(q));
    // r == 2^(man_bits+1) carries into the exponent field, which is exactly
    // what adding it to the biased exponent does.
    bits = (static_cast<uint64_t>(e + bias) << man_bits) + (r - (uint64_t(1) << man_bits));
  }
  if (bits >= (static_cast<uint64_t>(exp_all_ones) << man_bits)) bits = uint64_t(exp_all_ones) << man_bits;
  return uint16_t(sign | bits);
}

double decode_small_float(uint16_t bits, int exp_bits, int man_bits) {
  const bool neg = (bits >> (exp_bits + man_bits)) & 1u;
  const uint32_t exp_all_ones = (1u << exp_bits) - 1;
  const uint32_t ef = (bits >> man_bits) & exp_all_ones;
  const uint32_t mf = bits & ((1u << man_bits) - 1);
  const int bias = (1 << (exp_bits - 1)) - 1;
  double v;
  if (ef == exp_all_ones) {
    v = mf ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (ef == 0) {
    v = std::ldexp(static_cast<double>(mf), 1 - bias - man_bits);
  } else {
    v = std::ldexp(static_cast<double>(mf | (1u << man_bits)), static_cast<int>(ef) - bias - man_bits);
  }
  return neg ? -v : v;
}

template <typename T>
T read_as(const std::byte* base, size_t i) {
  T v;
  std::memcpy(&v, base + i * sizeof(T), sizeof(T));
  return v;
}
template <typename T>
void write_as(std::byte* base, size_t i, T v) {
  std::memcpy(base + i * sizeof(T), &v, sizeof(T));
}

}  // namespace

std::optional<DType> parse_dtype(std::string_view name) {
  for (const auto& i : kInfo)
    if (i.name == name) return i.type;
  return std::nullopt;
}
std::string_view dtype_name(DType t) { return info(t).name; }
size_t dtype_size(DType t) { return info(t).size; }
bool dtype_is_float(DType t) {
  return t == DType::f16 || t == DType::bf16 || t == DType::f32 || t == DType::f64 || dtype_is_complex(t);
}
bool dtype_is_complex(DType t) { return t == DType::c64 || t == DType::c128; }
DType dtype_part(DType t) { return t == DType::c64 ? DType::f32 : t == DType::c128 ? DType::f64 : t; }
size_t dtype_parts(DType t) { return dtype_is_complex(t) ? 2 : 1; }
size_t dtype_align(DType t) { return dtype_size(dtype_part(t)); }
bool dtype_is_signed(DType t) {
  return t == DType::i8 || t == DType::i16 || t == DType::i32 || t == DType::i64;
}
std::string dtype_list() {
  std::string out;
  for (const auto& i : kInfo) {
    if (!out.empty()) out += ", ";
    out += i.name;
  }
  return out;
}
std::string_view dtype_npy_descr(DType t) { return info(t).npy; }
std::optional<DType> dtype_from_npy_descr(std::string_view d) {
  if (d.size() < 3 || d.size() > 4) return std::nullopt;
  for (const auto& i : kInfo) {
    if (i.npy.empty() || i.npy.substr(1) != d.substr(1)) continue;
    // Little-endian or native (this tool runs on little-endian hosts); byte
    // order does not matter for one-byte types.
    if (d[0] == '<' || d[0] == '=' || i.size == 1) return i.type;
  }
  return std::nullopt;
}

uint16_t double_to_f16_bits(double v) { return encode_small_float(v, 5, 10); }
uint16_t double_to_bf16_bits(double v) { return encode_small_float(v, 8, 7); }
double f16_bits_to_double(uint16_t b) { return decode_small_float(b, 5, 10); }
double bf16_bits_to_double(uint16_t b) { return decode_small_float(b, 8, 7); }

long double load_element(DType t, const std::byte* base, size_t i) {
  switch (t) {
    case DType::i8: return read_as<int8_t>(base, i);
    case DType::i16: return read_as<int16_t>(base, i);
    case DType::i32: return read_as<int32_t>(base, i);
    case DType::i64: return read_as<int64_t>(base, i);
    case DType::u8: return read_as<uint8_t>(base, i);
    case DType::u16: return read_as<uint16_t>(base, i);
    case DType::u32: return read_as<uint32_t>(base, i);
    case DType::u64: return read_as<uint64_t>(base, i);
    case DType::f16: return f16_bits_to_double(read_as<uint16_t>(base, i));
    case DType::bf16: return bf16_bits_to_double(read_as<uint16_t>(base, i));
    case DType::f32: return read_as<float>(base, i);
    case DType::f64: return read_as<double>(base, i);
    case DType::c64: return read_as<float>(base, 2 * i);
    case DType::c128: return read_as<double>(base, 2 * i);
  }
  return 0;
}

void store_element(DType t, std::byte* base, size_t i, long double v) {
  switch (t) {
    case DType::i8: write_as<int8_t>(base, i, static_cast<int8_t>(v)); break;
    case DType::i16: write_as<int16_t>(base, i, static_cast<int16_t>(v)); break;
    case DType::i32: write_as<int32_t>(base, i, static_cast<int32_t>(v)); break;
    case DType::i64: write_as<int64_t>(base, i, static_cast<int64_t>(v)); break;
    case DType::u8: write_as<uint8_t>(base, i, static_cast<uint8_t>(v)); break;
    case DType::u16: write_as<uint16_t>(base, i, static_cast<uint16_t>(v)); break;
    case DType::u32: write_as<uint32_t>(base, i, static_cast<uint32_t>(v)); break;
    case DType::u64: write_as<uint64_t>(base, i, static_cast<uint64_t>(v)); break;
    case DType::f16: write_as<uint16_t>(base, i, double_to_f16_bits(static_cast<double>(v))); break;
    case DType::bf16: write_as<uint16_t>(base, i, double_to_bf16_bits(static_cast<double>(v))); break;
    case DType::f32: write_as<float>(base, i, static_cast<float>(v)); break;
    case DType::f64: write_as<double>(base, i, static_cast<double>(v)); break;
    case DType::c64:
      write_as<float>(base, 2 * i, static_cast<float>(v));
      write_as<float>(base, 2 * i + 1, 0.0f);
      break;
    case DType::c128:
      write_as<double>(base, 2 * i, static_cast<double>(v));
      write_as<double>(base, 2 * i + 1, 0.0);
      break;
  }
}

bool integer_fits(DType t, long double v) {
  if (std::isnan(v) || v != std::floor(v)) return false;
  switch (t) {
    case DType::i8: return v >= INT8_MIN && v <= INT8_MAX;
    case DType::i16: return v >= INT16_MIN && v <= INT16_MAX;
    case DType::i32: return v >= INT32_MIN && v <= INT32_MAX;
    case DType::i64: return v >= static_cast<long double>(INT64_MIN) && v <= static_cast<long double>(INT64_MAX);
    case DType::u8: return v >= 0 && v <= UINT8_MAX;
    case DType::u16: return v >= 0 && v <= UINT16_MAX;
    case DType::u32: return v >= 0 && v <= UINT32_MAX;
    case DType::u64: return v >= 0 && v <= static_cast<long double>(UINT64_MAX);
    default: return true;
  }
}

}  // namespace lrrt::bundle

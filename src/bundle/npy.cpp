#include "lrrt/bundle/npy.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fmt/ranges.h>

#include <algorithm>

#include "lrrt/bundle/errors.hpp"
#include "lrrt/bundle/input_file.hpp"

namespace lrrt::bundle {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
// numpy itself refuses headers over 10000 bytes by default; a shape dict
// never needs more than this, and a lying length must not make lrrt read a
// gigabyte before it finds out.
constexpr size_t kMaxHeaderBytes = 1 << 20;

// A recursive-descent parser for the header: the Python literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } and nothing
// else (no substring search: a key inside a string value is just text).
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& what) : t_(text), what_(what) {}

  NpyHeader parse() {
    NpyHeader h;
    bool have_descr = false, have_order = false, have_shape = false;
    ws();
    expect('{');
    ws();
    while (!at('}')) {
      std::string key = string_literal();
      ws();
      expect(':');
      ws();
      if (key == "descr") {
        if (have_descr) fail("key 'descr' appears twice");
        have_descr = true;
        if (at('[')) fail("structured dtypes (a list descr) are not supported");
        h.descr = string_literal();
      } else if (key == "fortran_order") {
        if (have_order) fail("key 'fortran_order' appears twice");
        have_order = true;
        h.fortran_order = boolean();
      } else if (key == "shape") {
        if (have_shape) fail("key 'shape' appears twice");
        have_shape = true;
        h.shape = tuple_of_ints();
      } else {
        fail(fmt::format("unexpected key '{}' (a .npy header has descr, fortran_order and shape)", printable(key)));
      }
      ws();
      if (at(',')) {
        ++p_;
        ws();
      } else if (!at('}')) {
        fail("expected ',' or '}' after a value");
      }
    }
    expect('}');
    // After the dict: only the padding numpy writes (spaces) and the final
    // newline. Anything else means the header length does not match the
    // dict, and data would be read from inside the header (or vice versa).
    while (p_ < t_.size() && (t_[p_] == ' ' || t_[p_] == '\t' || t_[p_] == '\n' || t_[p_] == '\r' || t_[p_] == '\0'))
      ++p_;
    if (p_ != t_.size()) fail(fmt::format("unexpected bytes after the header dict at offset {}", p_));
    if (!have_descr) fail("header has no 'descr'");
    if (!have_order) fail("header has no 'fortran_order'");
    if (!have_shape) fail("header has no 'shape'");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw InputError(fmt::format("{}: not a usable .npy file: {}", what_, why));
  }
  bool at(char c) const { return p_ < t_.size() && t_[p_] == c; }
  void ws() {
    while (p_ < t_.size() && (t_[p_] == ' ' || t_[p_] == '\t' || t_[p_] == '\n' || t_[p_] == '\r')) ++p_;
  }
  void expect(char c) {
    if (!at(c)) fail(p_ < t_.size() ? fmt::format("expected '{}' at offset {} of the header", c, p_)
                                    : fmt::format("the header ends where '{}' was expected (is the header length right?)", c));
    ++p_;
  }
  static std::string printable(std::string_view s) {
    std::string out;
    for (char c : s.substr(0, 40)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
    if (s.size() > 40) out += "...";
    return out;
  }
  std::string string_literal() {
    if (!at('\'') && !at('"')) fail(fmt::format("expected a quoted string at offset {} of the header", p_));
    const char q = t_[p_++];
    std::string out;
    while (p_ < t_.size() && t_[p_] != q) {
      if (t_[p_] == '\\') fail("escapes in header strings are not supported");
      if (t_[p_] == '\n') fail("unterminated string in the header");
      out += t_[p_++];
    }
    expect(q);
    return out;
  }
  bool boolean() {
    if (t_.substr(p_, 4) == "True") {
      p_ += 4;
      return true;
    }
    if (t_.substr(p_, 5) == "False") {
      p_ += 5;
      return false;
    }
    fail("fortran_order must be True or False");
  }
  uint64_t integer() {
    const size_t begin = p_;
    uint64_t v = 0;
    while (p_ < t_.size() && t_[p_] >= '0' && t_[p_] <= '9') {
      const uint64_t digit = uint64_t(t_[p_] - '0');
      if (v > (UINT64_MAX - digit) / 10) fail("a shape dimension does not fit in 64 bits");
      v = v * 10 + digit;
      ++p_;
    }
    if (p_ == begin) fail(fmt::format("expected a non-negative integer at offset {} of the header", begin));
    if (at('L')) ++p_;  // Python 2 long literal, as old numpy wrote
    return v;
  }
  // (), (n,), (n, m), (n, m,) — Python's tuple syntax, commas required.
  std::vector<uint64_t> tuple_of_ints() {
    std::vector<uint64_t> dims;
    expect('(');
    ws();
    if (at(')')) {
      ++p_;
      return dims;
    }
    for (;;) {
      dims.push_back(integer());
      ws();
      if (at(')')) {
        if (dims.size() == 1) fail("a one-dimensional shape needs a trailing comma: (n,)");
        ++p_;
        return dims;
      }
      expect(',');
      ws();
      if (at(')')) {
        ++p_;
        return dims;
      }
    }
  }

  std::string_view t_;
  size_t p_ = 0;
  const std::string& what_;
};

InputError not_npy(const std::string& what, const std::string& why) {
  return InputError(fmt::format("{}: not a usable .npy file: {}", what, why));
}

// Magic, version and header length from the first bytes: (prefix, header
// length). `bytes` holds at least the 12 first bytes or the whole file.
std::pair<size_t, size_t> npy_prefix(std::span<const std::byte> bytes, const std::string& what) {
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < 10 || std::memcmp(b, kMagic, 6) != 0) throw not_npy(what, "missing the \\x93NUMPY magic");
  const unsigned major = b[6];
  if (major == 1) return {10, size_t(b[8]) | (size_t(b[9]) << 8)};
  if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw not_npy(what, "truncated header");
    return {12, size_t(b[8]) | (size_t(b[9]) << 8) | (size_t(b[10]) << 16) | (size_t(b[11]) << 24)};
  }
  throw not_npy(what, fmt::format("unsupported format version {}.{}", major, unsigned(b[7])));
}

}  // namespace

uint64_t NpyArray::count() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

NpyHeader parse_npy_header(std::span<const std::byte> bytes, const std::string& what) {
  auto [prefix, header_len] = npy_prefix(bytes, what);
  if (header_len > kMaxHeaderBytes)
    throw not_npy(what, fmt::format("header length {} is over the {} bytes lrrt accepts", header_len, kMaxHeaderBytes));
  if (header_len > bytes.size() - prefix) throw not_npy(what, "truncated header");
  std::string_view text(reinterpret_cast<const char*>(bytes.data()) + prefix, header_len);
  NpyHeader h = HeaderParser(text, what).parse();
  auto type = dtype_from_npy_descr(h.descr);
  if (!type)
    throw not_npy(what, fmt::format("unsupported dtype '{}' (supported: little-endian i1-i8, u1-u8, f2, f4, f8)",
                                    h.descr.substr(0, 40)));
  h.type = *type;
  if (h.fortran_order) throw not_npy(what, "Fortran-order arrays are not supported (save with order='C')");
  h.count = 1;
  for (uint64_t d : h.shape)
    if (__builtin_mul_overflow(h.count, d, &h.count))
      throw not_npy(what, fmt::format("shape {} has more elements than fit in 64 bits", fmt::join(h.shape, "x")));
  if (__builtin_mul_overflow(h.count, uint64_t(dtype_size(h.type)), &h.data_bytes))
    throw not_npy(what, fmt::format("shape {} of {} is more bytes than fit in 64 bits", fmt::join(h.shape, "x"), h.descr));
  h.data_offset = prefix + header_len;
  return h;
}

namespace {
void check_data_size(const NpyHeader& h, uint64_t file_size, const std::string& what) {
  const uint64_t have = file_size - h.data_offset;  // data_offset <= file_size: the header was read
  if (have < h.data_bytes)
    throw not_npy(what, fmt::format("data truncated: shape ({}) of {} needs {} bytes, the file has {}",
                                    fmt::join(h.shape, ", "), h.descr, h.data_bytes, have));
  if (have > h.data_bytes)
    throw not_npy(what, fmt::format("{} bytes follow the {} bytes of data that shape ({}) of {} needs",
                                    have - h.data_bytes, h.data_bytes, fmt::join(h.shape, ", "), h.descr));
}
}  // namespace

NpyArray parse_npy(std::span<const std::byte> bytes, const std::string& what) {
  NpyHeader h = parse_npy_header(bytes, what);
  check_data_size(h, bytes.size(), what);
  NpyArray a;
  a.descr = h.descr;
  a.type = h.type;
  a.shape = h.shape;
  a.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(h.data_offset), bytes.end());
  return a;
}

NpyArray read_npy(const std::filesystem::path& path, const NpyExpectation& expect) {
  const std::string what = path.string();
  InputFile file(path);
  // The header first: its length is in the first 12 bytes.
  std::vector<std::byte> head(static_cast<size_t>(std::min<uint64_t>(file.size(), 12)));
  file.read_at(0, head);
  auto [prefix, header_len] = npy_prefix(head, what);
  if (header_len > kMaxHeaderBytes)
    throw not_npy(what, fmt::format("header length {} is over the {} bytes lrrt accepts", header_len, kMaxHeaderBytes));
  if (prefix + header_len > file.size()) throw not_npy(what, "truncated header");
  head.resize(prefix + header_len);
  file.read_at(0, head);
  NpyHeader h = parse_npy_header(head, what);
  check_data_size(h, file.size(), what);
  if (expect.count && h.count != *expect.count)
    throw InputError(fmt::format("{}: has {} elements (shape ({})), {} expected", what, h.count,
                                 fmt::join(h.shape, ", "), *expect.count));
  NpyArray a;
  a.descr = h.descr;
  a.type = h.type;
  a.shape = h.shape;
  a.data.resize(static_cast<size_t>(h.data_bytes));
  file.read_at(h.data_offset, a.data);
  return a;
}

std::string npy_bytes(DType type, const std::vector<uint64_t>& shape, const std::byte* data) {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  std::vector<std::byte> converted;
  DType out_type = type;
  if (type == DType::bf16) {  // numpy has no bfloat16: widen to float32 exactly
    out_type = DType::f32;
    converted.resize(n * 4);
    for (uint64_t i = 0; i < n; ++i) store_element(DType::f32, converted.data(), i, load_element(type, data, i));
    data = converted.data();
  }
  std::string shape_s = "(";
  for (size_t i = 0; i < shape.size(); ++i) shape_s += fmt::format("{}{}", shape[i], shape.size() == 1 ? "," : (i + 1 < shape.size() ? ", " : ""));
  shape_s += ")";
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", dtype_npy_descr(out_type), shape_s);
  // Pad with spaces so the data starts on a 64-byte boundary; end with \n.
  const bool v2 = dict.size() + 11 > 65535;
  const size_t prefix = v2 ? 12 : 10;
  size_t total = prefix + dict.size() + 1;
  size_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict += '\n';
  std::string out(kMagic, 6);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  const size_t hl = dict.size();
  out += static_cast<char>(hl & 0xff);
  out += static_cast<char>((hl >> 8) & 0xff);
  if (v2) {
    out += static_cast<char>((hl >> 16) & 0xff);
    out += static_cast<char>((hl >> 24) & 0xff);
  }
  out += dict;
  out.append(reinterpret_cast<const char*>(data), n * dtype_size(out_type));
  return out;
}

}  // namespace lrrt::bundle

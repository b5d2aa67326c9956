#include "tool/npy.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "tool/errors.hpp"

namespace lrrt::tool {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

// Finds 'key': in the header dict and returns the position after the colon.
size_t find_key(const std::string& h, const std::string& key) {
  for (const char* q : {"'", "\""}) {
    std::string pat = std::string(q) + key + q;
    size_t p = h.find(pat);
    if (p == std::string::npos) continue;
    p = h.find(':', p + pat.size());
    if (p != std::string::npos) return p + 1;
  }
  return std::string::npos;
}

size_t skip_ws(const std::string& h, size_t p) {
  while (p < h.size() && (h[p] == ' ' || h[p] == '\t')) ++p;
  return p;
}

}  // namespace

uint64_t NpyArray::count() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

std::vector<std::byte> read_file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open: {}", path.string(), std::strerror(errno)));
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  in.seekg(0);
  std::vector<std::byte> out(static_cast<size_t>(size));
  if (size > 0 && !in.read(reinterpret_cast<char*>(out.data()), size))
    throw InputError(fmt::format("{}: read failed", path.string()));
  return out;
}

NpyArray parse_npy(std::span<const std::byte> bytes, const std::string& what) {
  auto fail = [&](const std::string& why) { return InputError(fmt::format("{}: not a usable .npy file: {}", what, why)); };
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic, 6) != 0) throw fail("missing the \\x93NUMPY magic");
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  const unsigned major = b[6];
  size_t header_len, header_start;
  if (major == 1) {
    header_len = b[8] | (size_t(b[9]) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw fail("truncated header");
    header_len = b[8] | (size_t(b[9]) << 8) | (size_t(b[10]) << 16) | (size_t(b[11]) << 24);
    header_start = 12;
  } else {
    throw fail(fmt::format("unsupported format version {}", major));
  }
  if (header_start + header_len > bytes.size()) throw fail("truncated header");
  std::string h(reinterpret_cast<const char*>(b + header_start), header_len);

  NpyArray a;
  size_t p = find_key(h, "descr");
  if (p == std::string::npos) throw fail("header has no descr");
  p = skip_ws(h, p);
  if (p >= h.size() || (h[p] != '\'' && h[p] != '"')) throw fail("descr is not a simple type string");
  size_t e = h.find(h[p], p + 1);
  if (e == std::string::npos) throw fail("bad descr");
  a.descr = h.substr(p + 1, e - p - 1);
  auto t = dtype_from_npy_descr(a.descr);
  if (!t) throw fail(fmt::format("unsupported dtype '{}' (supported: little-endian i1-i8, u1-u8, f2, f4, f8)", a.descr));
  a.type = *t;

  p = find_key(h, "fortran_order");
  if (p == std::string::npos) throw fail("header has no fortran_order");
  p = skip_ws(h, p);
  if (h.compare(p, 4, "True") == 0) throw fail("Fortran-order arrays are not supported (save with order='C')");
  if (h.compare(p, 5, "False") != 0) throw fail("bad fortran_order");

  p = find_key(h, "shape");
  if (p == std::string::npos) throw fail("header has no shape");
  p = skip_ws(h, p);
  if (p >= h.size() || h[p] != '(') throw fail("bad shape");
  e = h.find(')', p);
  if (e == std::string::npos) throw fail("bad shape");
  std::string dims = h.substr(p + 1, e - p - 1);
  size_t q = 0;
  while (q < dims.size()) {
    while (q < dims.size() && (dims[q] == ' ' || dims[q] == ',')) ++q;
    if (q >= dims.size()) break;
    size_t r = q;
    while (r < dims.size() && dims[r] >= '0' && dims[r] <= '9') ++r;
    if (r == q) throw fail("bad shape");
    a.shape.push_back(std::stoull(dims.substr(q, r - q)));
    q = r;
  }
  const uint64_t n = a.count();
  const size_t data_start = header_start + header_len;
  const uint64_t need = n * dtype_size(a.type);
  if (bytes.size() - data_start < need)
    throw fail(fmt::format("data truncated: shape needs {} bytes, file has {}", need, bytes.size() - data_start));
  a.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(data_start),
                bytes.begin() + static_cast<std::ptrdiff_t>(data_start + need));
  return a;
}

NpyArray read_npy(const std::filesystem::path& path) {
  auto bytes = read_file_bytes(path);
  return parse_npy(bytes, path.string());
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

}  // namespace lrrt::tool

// The JSON field helpers of the manifest parser: typed reads that name the
// field (a JSON pointer) in every error.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "lrrt/bundle/json_input.hpp"
#include "lrrt/bundle/text.hpp"
#include "manifest_parse.hpp"

namespace lrrt::bundle {

using nlohmann::json;
namespace fs = std::filesystem;

namespace manifest_parse {

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::string describe(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return v.get<bool>() ? "true" : "false";
    case json::value_t::string: return fmt::format("string \"{}\"", printable(v.get_ref<const std::string&>(), 40));
    case json::value_t::array: return fmt::format("an array of {}", v.size());
    case json::value_t::object: return "an object";
    default: return fmt::format("number {}", json_excerpt(v));
  }
}

void Obj::finish() const {
  for (auto it = j_.begin(); it != j_.end(); ++it) {
    if (std::find(known_.begin(), known_.end(), it.key()) != known_.end()) continue;
    std::string best;
    size_t best_d = 3;
    // A typo is a short key; edit distance on a huge one only costs time.
    if (it.key().size() <= 64)
      for (const auto& k : known_) {
        size_t d = edit_distance(it.key(), k);
        if (d < best_d) best_d = d, best = k;
      }
    std::string msg = "unknown field";
    if (!best.empty()) msg += fmt::format(" (did you mean \"{}\"?)", best);
    else {
      msg += " (expected one of:";
      for (const auto& k : known_) msg += " " + k;
      msg += ")";
    }
    throw ManifestError(ptr(it.key()), msg);
  }
}

// Names, paths and references never hold control characters: a NUL would
// cut the name where C code reads it (kernel "empty\0junk" ran "empty"), an
// ESC would reach the terminal. Prose (descriptions: allow_empty) may hold
// tabs and line breaks.
std::string get_string(const json& v, const std::string& ptr, bool allow_empty) {
  if (!v.is_string()) throw ManifestError(ptr, "expected a string, got " + describe(v));
  std::string s = v.get<std::string>();
  if (s.empty() && !allow_empty) throw ManifestError(ptr, "must not be empty");
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const bool prose_whitespace = allow_empty && (c == '\n' || c == '\t' || c == '\r');
    if ((c < 0x20 || c == 0x7f) && !prose_whitespace)
      throw ManifestError(ptr, fmt::format("holds control character 0x{:02x} at byte {}: {}", c, i, printable(s, 80)));
  }
  return s;
}

uint64_t get_uint(const json& v, const std::string& ptr, uint64_t min, uint64_t max) {
  uint64_t u = 0;
  if (v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0)) u = v.get<uint64_t>();
  else if (v.is_number_integer()) throw ManifestError(ptr, fmt::format("must be at least {}, got {}", min, json_excerpt(v)));
  else if (v.is_number_float() && std::isfinite(v.get<double>()) && v.get<double>() == std::floor(v.get<double>()) &&
           v.get<double>() >= 0 && v.get<double>() < 18446744073709551616.0)
    u = static_cast<uint64_t>(v.get<double>());
  else throw ManifestError(ptr, "expected a non-negative integer, got " + describe(v));
  if (u < min) throw ManifestError(ptr, fmt::format("must be at least {}, got {}", min, u));
  if (u > max) throw ManifestError(ptr, fmt::format("must be at most {}, got {}", max, u));
  return u;
}

double get_double(const json& v, const std::string& ptr) {
  if (!v.is_number()) throw ManifestError(ptr, "expected a number, got " + describe(v));
  return v.get<double>();
}

bool get_bool(const json& v, const std::string& ptr) {
  if (!v.is_boolean()) throw ManifestError(ptr, "expected true or false, got " + describe(v));
  return v.get<bool>();
}

// A number in JSON, or "nan", "inf", "-inf" for float types. Integers keep
// full 64-bit precision (long double).
long double get_number(const json& v, const std::string& ptr) {
  if (v.is_number_unsigned()) return static_cast<long double>(v.get<uint64_t>());
  if (v.is_number_integer()) return static_cast<long double>(v.get<int64_t>());
  if (v.is_number_float()) {
    // The JSON parser reads 1e400 as infinity: a number that large is a typo.
    if (!std::isfinite(v.get<double>()))
      throw ManifestError(ptr, "is beyond the range of a double; write \"inf\" or \"-inf\" for infinity");
    return v.get<double>();
  }
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    if (s == "nan") return std::numeric_limits<long double>::quiet_NaN();
    if (s == "inf" || s == "+inf") return std::numeric_limits<long double>::infinity();
    if (s == "-inf") return -std::numeric_limits<long double>::infinity();
  }
  throw ManifestError(ptr, "expected a number (or \"nan\", \"inf\", \"-inf\"), got " + describe(v));
}

// Checks that v is representable in t (integers: exact and in range;
// floats: a finite value must stay finite, so 1e39 is no silent inf in f32).
void check_value_fits(DType t, long double v, const std::string& ptr) {
  if (dtype_is_float(t)) {
    if (!std::isfinite(v)) return;  // only "inf"/"nan" strings get here
    std::array<std::byte, 16> bytes{};  // c128 is 16 bytes
    store_element(t, bytes.data(), 0, v);
    if (std::isinf(load_element(t, bytes.data(), 0)))
      throw ManifestError(ptr, fmt::format("{} is beyond the range of {} (it would become infinity; write \"inf\" if "
                                           "that is meant)",
                                           static_cast<double>(v), dtype_name(t)));
    return;
  }
  if (std::isnan(v) || std::isinf(v) || v != std::floor(v))
    throw ManifestError(ptr, fmt::format("{} needs an integer value, got {}", dtype_name(t), static_cast<double>(v)));
  if (!integer_fits(t, v))
    throw ManifestError(ptr, fmt::format("value {} does not fit in {}", static_cast<double>(v), dtype_name(t)));
}

std::pair<long double, long double> get_complex(const json& v, const std::string& ptr, DType t) {
  const DType part = dtype_part(t);
  if (!v.is_array()) {
    const long double re = get_number(v, ptr);
    check_value_fits(part, re, ptr);
    return {re, 0};
  }
  if (v.size() != 2)
    throw ManifestError(ptr, fmt::format("a {} value is [real, imaginary], got an array of {}", dtype_name(t), v.size()));
  const long double re = get_number(v[0], ptr + "/0"), im = get_number(v[1], ptr + "/1");
  check_value_fits(part, re, ptr + "/0");
  check_value_fits(part, im, ptr + "/1");
  return {re, im};
}

DType get_dtype(const json& v, const std::string& ptr) {
  std::string s = get_string(v, ptr);
  auto t = parse_dtype(s);
  if (!t) throw ManifestError(ptr, fmt::format("unknown type \"{}\" (expected one of: {})", s, dtype_list()));
  return *t;
}

fs::path resolve_input_file(const Manifest& m, const json& v, const std::string& ptr) {
  std::string s = get_string(v, ptr);
  fs::path p(s);
  if (p.is_relative()) p = m.base_dir / p;
  std::error_code ec;
  if (!fs::exists(p, ec)) throw ManifestError(ptr, fmt::format("file not found: {}", p.string()));
  if (!fs::is_regular_file(p, ec))
    throw ManifestError(ptr, fmt::format("{} is not a regular file (a device, FIFO or directory); lrrt reads only regular files",
                                         p.string()));
  return p;
}

size_t find_buffer_index(const Manifest& m, const json& v, const std::string& ptr) {
  std::string name = get_string(v, ptr);
  for (size_t i = 0; i < m.buffers.size(); ++i)
    if (m.buffers[i].name == name) return i;
  std::string known;
  for (const auto& b : m.buffers) known += (known.empty() ? "" : ", ") + b.name;
  throw ManifestError(ptr, fmt::format("no buffer named \"{}\" (buffers: {})", name, known.empty() ? "none" : known));
}

// {"count_of": "x"} or {"shape_of": "x", "axis": k}: a size taken from a
// buffer so a manifest cannot disagree with itself. "divided_by": d gives
// the size divided by d, rounded up: the launch of a kernel that takes d
// elements per work-item.
std::optional<uint64_t> size_reference(const Manifest& m, const json& v, const std::string& ptr) {
  if (!v.is_object()) return std::nullopt;
  auto divided = [](const Obj& o, uint64_t size) {
    const json* d = o.opt("divided_by");
    if (!d) return size;
    const uint64_t by = get_uint(*d, o.ptr("divided_by"), 1);
    return size / by + (size % by ? 1 : 0);
  };
  if (v.contains("count_of")) {
    Obj o(v, ptr, {"count_of", "divided_by"});
    o.finish();
    return divided(o, m.buffers[find_buffer_index(m, o.req("count_of"), o.ptr("count_of"))].count);
  }
  if (v.contains("shape_of")) {
    Obj o(v, ptr, {"shape_of", "axis", "divided_by"});
    o.finish();
    const auto& b = m.buffers[find_buffer_index(m, o.req("shape_of"), o.ptr("shape_of"))];
    uint64_t axis = get_uint(o.req("axis"), o.ptr("axis"));
    if (axis >= b.shape.size())
      throw ManifestError(o.ptr("axis"), fmt::format("buffer \"{}\" has {} dimension(s)", b.name, b.shape.size()));
    return divided(o, b.shape[axis]);
  }
  throw ManifestError(ptr, "expected a number, {\"count_of\": \"<buffer>\"} or {\"shape_of\": \"<buffer>\", \"axis\": N} "
                           "(either may add \"divided_by\": D)");
}

}  // namespace manifest_parse

std::string pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  // Pointers end up in messages: a hostile key must not flood or drive the
  // terminal.
  return printable(out, 80);
}

}  // namespace lrrt::bundle

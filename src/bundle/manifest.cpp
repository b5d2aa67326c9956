#include "lrrt/bundle/manifest.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <sstream>

#include "lrrt/bundle/json_input.hpp"
#include "lrrt/bundle/text.hpp"
#include "lrrt/lrrt.hpp"

namespace lrrt::bundle {

using nlohmann::json;
namespace fs = std::filesystem;

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

namespace {

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

// A JSON object whose every key must be known: finish() names the first
// unknown one (with a suggestion when it looks like a typo).
class Obj {
 public:
  Obj(const json& j, std::string ptr, std::vector<std::string> known)
      : j_(j), ptr_(std::move(ptr)), known_(std::move(known)) {
    if (!j_.is_object()) throw ManifestError(ptr_, "expected an object, got " + describe(j_));
  }
  const std::string& ptr() const { return ptr_; }
  std::string ptr(const std::string& key) const { return ptr_ + "/" + pointer_token(key); }
  bool has(const std::string& key) const { return j_.contains(key); }
  const json* opt(const std::string& key) const {
    auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
  }
  const json& req(const std::string& key, const std::string& hint = "") const {
    auto it = j_.find(key);
    if (it == j_.end())
      throw ManifestError(ptr_, fmt::format("missing required field \"{}\"{}", key, hint.empty() ? "" : " (" + hint + ")"));
    return *it;
  }
  void finish() const {
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

 private:
  const json& j_;
  std::string ptr_;
  std::vector<std::string> known_;
};

// Names, paths and references never hold control characters: a NUL would
// cut the name where C code reads it (kernel "empty\0junk" ran "empty"), an
// ESC would reach the terminal. Prose (descriptions: allow_empty) may hold
// tabs and line breaks.
std::string get_string(const json& v, const std::string& ptr, bool allow_empty = false) {
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

uint64_t get_uint(const json& v, const std::string& ptr, uint64_t min = 0,
                  uint64_t max = std::numeric_limits<uint64_t>::max()) {
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
    std::array<std::byte, 8> bytes{};
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

BufferInit parse_init(const Manifest& m, const json& v, const std::string& ptr, DType type) {
  BufferInit init;
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    if (s == "zeros") init.kind = BufferInit::Kind::Zeros;
    else if (s == "iota") init.kind = BufferInit::Kind::Iota;
    else if (s == "random") init.kind = BufferInit::Kind::Random;
    else if (s == "poison") init.kind = BufferInit::Kind::Poison;
    else
      throw ManifestError(ptr, fmt::format("unknown init \"{}\" (expected \"zeros\", \"iota\", \"random\", \"poison\" or an object with one of fill, iota, random, npy, raw)", s));
    return init;
  }
  if (!v.is_object()) throw ManifestError(ptr, "expected a string or an object, got " + describe(v));
  static const std::vector<std::string> kinds = {"zeros", "fill", "iota", "random", "npy", "raw", "poison"};
  Obj o(v, ptr, kinds);
  o.finish();
  if (v.size() != 1)
    throw ManifestError(ptr, "needs exactly one of: zeros, fill, iota, random, npy, raw, poison");
  const std::string key = v.begin().key();
  const json& val = v.begin().value();
  const std::string vp = o.ptr(key);
  if (key == "zeros" || key == "poison") {
    if (!(val.is_boolean() && val.get<bool>()) && !(val.is_object() && val.empty()))
      throw ManifestError(vp, "expected true");
    init.kind = key == "zeros" ? BufferInit::Kind::Zeros : BufferInit::Kind::Poison;
  } else if (key == "fill") {
    init.kind = BufferInit::Kind::Fill;
    init.fill = get_number(val, vp);
    check_value_fits(type, init.fill, vp);
  } else if (key == "iota") {
    init.kind = BufferInit::Kind::Iota;
    Obj io(val, vp, {"start", "step"});
    io.finish();
    if (auto* s = io.opt("start")) init.start = get_number(*s, io.ptr("start"));
    if (auto* s = io.opt("step")) init.step = get_number(*s, io.ptr("step"));
    if (dtype_is_float(type)) check_value_fits(type, init.start, io.ptr("start"));
    if (!dtype_is_float(type)) {
      check_value_fits(type, init.start, io.ptr("start"));
      if (init.step != std::floor(init.step)) throw ManifestError(io.ptr("step"), "must be an integer for integer buffers");
    }
  } else if (key == "random") {
    init.kind = BufferInit::Kind::Random;
    Obj ro(val, vp, {"seed", "min", "max"});
    ro.finish();
    if (auto* s = ro.opt("seed")) init.seed = get_uint(*s, ro.ptr("seed"));
    if (!dtype_is_float(type)) init.max = 100;  // integers: default range [0, 100]
    if (auto* s = ro.opt("min")) init.min = get_number(*s, ro.ptr("min"));
    if (auto* s = ro.opt("max")) init.max = get_number(*s, ro.ptr("max"));
    if (!std::isfinite(init.min)) throw ManifestError(ro.ptr("min"), "must be finite");
    if (!std::isfinite(init.max)) throw ManifestError(ro.ptr("max"), "must be finite");
    if (init.min > init.max) throw ManifestError(ro.ptr("max"), "must not be less than min");
    check_value_fits(type, init.min, ro.ptr("min"));
    check_value_fits(type, init.max, ro.ptr("max"));
  } else if (key == "npy" || key == "raw") {
    init.kind = key == "npy" ? BufferInit::Kind::Npy : BufferInit::Kind::Raw;
    init.file = resolve_input_file(m, val, vp);
  }
  return init;
}

void parse_buffers(Manifest& m, const json& v, const std::string& ptr) {
  if (!v.is_array()) throw ManifestError(ptr, "expected an array of buffers, got " + describe(v));
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string bp = fmt::format("{}/{}", ptr, i);
    Obj o(v[i], bp, {"name", "type", "count", "shape", "init", "access", "description"});
    o.finish();
    BufferSpec b;
    b.pointer = bp;
    b.name = get_string(o.req("name"), o.ptr("name"));
    for (const auto& other : m.buffers)
      if (other.name == b.name) throw ManifestError(o.ptr("name"), fmt::format("duplicate buffer name \"{}\"", b.name));
    b.type = get_dtype(o.req("type", "one of " + dtype_list()), o.ptr("type"));
    const json* count = o.opt("count");
    const json* shape = o.opt("shape");
    if (count && shape) throw ManifestError(bp, "give either \"count\" or \"shape\", not both");
    if (!count && !shape) throw ManifestError(bp, "missing required field \"count\" (or \"shape\")");
    if (count) {
      b.count = get_uint(*count, o.ptr("count"), 1);
      b.shape = {b.count};
    } else {
      const std::string sp = o.ptr("shape");
      if (!shape->is_array() || shape->empty() || shape->size() > 8)
        throw ManifestError(sp, "expected an array of 1 to 8 positive integers, got " + describe(*shape));
      b.count = 1;
      for (size_t d = 0; d < shape->size(); ++d) {
        uint64_t n = get_uint((*shape)[d], fmt::format("{}/{}", sp, d), 1);
        if (b.count > std::numeric_limits<uint64_t>::max() / n)
          throw ManifestError(sp, "element count overflows 64 bits");
        b.count *= n;
        b.shape.push_back(n);
      }
    }
    const uint64_t esize = dtype_size(b.type);
    if (b.count > std::numeric_limits<uint64_t>::max() / esize)
      throw ManifestError(count ? o.ptr("count") : o.ptr("shape"),
                          fmt::format("{} elements of {} overflow a 64-bit byte size", b.count, dtype_name(b.type)));
    b.bytes = b.count * esize;
    if (auto* a = o.opt("access")) {
      std::string s = get_string(*a, o.ptr("access"));
      if (s == "read") b.access = Access::Read;
      else if (s == "write") b.access = Access::Write;
      else if (s == "read_write") b.access = Access::ReadWrite;
      else throw ManifestError(o.ptr("access"), fmt::format("unknown access \"{}\" (expected read, write or read_write)", s));
    }
    if (auto* d = o.opt("description")) (void)get_string(*d, o.ptr("description"), true);
    m.buffers.push_back(std::move(b));
    // init may refer to files relative to the manifest; parsed after the name is known.
    if (auto* init = o.opt("init")) m.buffers.back().init = parse_init(m, *init, o.ptr("init"), m.buffers.back().type);
  }
}

void encode_scalar(ArgSpec& a) {
  a.bytes.fill(std::byte{0});
  store_element(a.type, a.bytes.data(), 0, a.value);
}

Access parse_access(const json& v, const std::string& ptr) {
  std::string s = get_string(v, ptr);
  if (s == "read") return Access::Read;
  if (s == "write") return Access::Write;
  if (s == "read_write") return Access::ReadWrite;
  throw ManifestError(ptr, fmt::format("unknown access \"{}\" (expected read, write or read_write)", printable(s, 40)));
}

// A byte range of buffer b: {"offset": bytes, "bytes": n}; both multiples of
// the element size, inside the buffer. bytes defaults to the rest.
void parse_range(const BufferSpec& b, const json& v, const std::string& ptr, uint64_t& offset, uint64_t& bytes) {
  Obj o(v, ptr, {"offset", "bytes"});
  o.finish();
  const uint64_t esize = dtype_size(b.type);
  offset = o.has("offset") ? get_uint(*o.opt("offset"), o.ptr("offset")) : 0;
  if (offset % esize) throw ManifestError(o.ptr("offset"), fmt::format("must be a multiple of {} ({}'s element size)", esize, dtype_name(b.type)));
  if (offset >= b.bytes) throw ManifestError(o.ptr("offset"), fmt::format("is past the end of buffer \"{}\" ({} bytes)", b.name, b.bytes));
  bytes = o.has("bytes") ? get_uint(*o.opt("bytes"), o.ptr("bytes"), 1) : b.bytes - offset;
  if (bytes % esize) throw ManifestError(o.ptr("bytes"), fmt::format("must be a multiple of {} ({}'s element size)", esize, dtype_name(b.type)));
  if (bytes > b.bytes - offset)
    throw ManifestError(o.ptr("bytes"), fmt::format("bytes [{}, {}) reach past the end of buffer \"{}\" ({} bytes)", offset,
                                                    offset + bytes, b.name, b.bytes));
}

// A kernel's arguments; `step` (sequence steps only) names the step, whose
// buffer arguments must declare their access.
void parse_args(const Manifest& m, const json& v, const std::string& ptr, std::vector<ArgSpec>& out,
                const std::string* step = nullptr) {
  if (!v.is_array()) throw ManifestError(ptr, "expected an array of arguments, got " + describe(v));
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string ap = fmt::format("{}/{}", ptr, i);
    std::vector<std::string> known = {"buffer", "type", "value", "offset", "name", "bounds"};
    if (step) known.insert(known.end(), {"access", "range"});
    Obj o(v[i], ap, known);
    o.finish();
    ArgSpec a;
    a.pointer = ap;
    if (auto* n = o.opt("name")) a.name = get_string(*n, o.ptr("name"));
    if (auto* off = o.opt("offset")) a.offset = static_cast<uint32_t>(get_uint(*off, o.ptr("offset"), 0, 1u << 20));
    if (o.has("buffer")) {
      if (o.has("type") || o.has("value"))
        throw ManifestError(ap, "a buffer argument takes no \"type\" or \"value\" (give either {\"buffer\": ...} or {\"type\": ..., \"value\": ...})");
      if (o.has("bounds")) throw ManifestError(o.ptr("bounds"), "only integer scalar arguments take bounds");
      a.kind = ArgSpec::Kind::Buffer;
      a.buffer = find_buffer_index(m, o.req("buffer"), o.ptr("buffer"));
      if (step) {
        const auto& b = m.buffers[a.buffer];
        if (!o.has("access"))
          throw ManifestError(ap, fmt::format("step \"{}\": buffer argument {} (\"{}\") has no access declaration: add "
                                              "\"access\": \"read\", \"write\" or \"read_write\"",
                                              *step, a.name.empty() ? std::to_string(i) : a.name, b.name));
        a.access = parse_access(*o.opt("access"), o.ptr("access"));
        if (auto* r = o.opt("range")) parse_range(b, *r, o.ptr("range"), a.range_offset, a.range_bytes);
      }
    } else {
      if (step && (o.has("access") || o.has("range")))
        throw ManifestError(o.ptr(o.has("access") ? "access" : "range"), "only buffer arguments declare access");
      if (!o.has("type") && !o.has("value"))
        throw ManifestError(ap, "missing required field \"buffer\" (a buffer argument) or \"type\" and \"value\" (a scalar)");
      a.kind = ArgSpec::Kind::Scalar;
      a.type = get_dtype(o.req("type", "a scalar needs a type: " + dtype_list()), o.ptr("type"));
      const json& val = o.req("value");
      if (auto ref = size_reference(m, val, o.ptr("value"))) a.value = static_cast<long double>(*ref);
      else a.value = get_number(val, o.ptr("value"));
      check_value_fits(a.type, a.value, o.ptr("value"));
      encode_scalar(a);
      if (auto* b = o.opt("bounds")) {
        const std::string bp = o.ptr("bounds");
        if (dtype_is_float(a.type)) throw ManifestError(bp, "only integer scalar arguments take bounds");
        if (!b->is_array()) throw ManifestError(bp, "expected an array of buffer names, got " + describe(*b));
        for (size_t k = 0; k < b->size(); ++k) {
          const std::string kp = fmt::format("{}/{}", bp, k);
          const auto& buf = m.buffers[find_buffer_index(m, (*b)[k], kp)];
          if (a.value > static_cast<long double>(buf.count))
            throw ManifestError(kp, fmt::format("buffer \"{}\" is too small: argument {} = {} but the buffer has {} elements",
                                                buf.name, a.name.empty() ? std::to_string(i) : a.name,
                                                static_cast<double>(a.value), buf.count));
        }
      }
    }
    out.push_back(std::move(a));
  }
}

void parse_launch(const Manifest& m, const json& v, const std::string& ptr, LaunchSpec& L) {
  Obj o(v, ptr, {"workgroup_size", "workgroup_count", "global_size", "dynamic_shared_bytes", "covers"});
  o.finish();
  const json& ws = o.req("workgroup_size", "work-items per workgroup, [x], [x, y] or [x, y, z]");
  const std::string wsp = o.ptr("workgroup_size");
  if (!ws.is_array() || ws.empty() || ws.size() > 3)
    throw ManifestError(wsp, "expected an array of 1 to 3 positive integers, got " + describe(ws));
  L.dims = static_cast<uint32_t>(ws.size());
  uint64_t wg_items = 1;
  for (size_t d = 0; d < ws.size(); ++d) {
    L.workgroup_size[d] = static_cast<uint32_t>(get_uint(ws[d], fmt::format("{}/{}", wsp, d), 1, UINT32_MAX));
    wg_items *= L.workgroup_size[d];
  }
  if (wg_items > UINT32_MAX) throw ManifestError(wsp, fmt::format("workgroup of {} work-items overflows 32 bits", wg_items));
  const json* wc = o.opt("workgroup_count");
  const json* gs = o.opt("global_size");
  if (wc && gs) throw ManifestError(ptr, "give exactly one of \"workgroup_count\" (workgroups) or \"global_size\" (work-items), not both");
  if (!wc && !gs) throw ManifestError(ptr, "missing \"workgroup_count\" (workgroups per dimension) or \"global_size\" (work-items per dimension)");
  L.from_global_size = gs != nullptr;
  const json& grid = gs ? *gs : *wc;
  const std::string gp = o.ptr(gs ? "global_size" : "workgroup_count");
  if (!grid.is_array() || grid.size() != ws.size())
    throw ManifestError(gp, fmt::format("expected an array of {} value(s), one per workgroup_size dimension, got {}", ws.size(), describe(grid)));
  for (size_t d = 0; d < grid.size(); ++d) {
    const std::string dp = fmt::format("{}/{}", gp, d);
    uint64_t n;
    if (auto ref = size_reference(m, grid[d], dp)) n = *ref;
    else n = get_uint(grid[d], dp, 1);
    if (n == 0) throw ManifestError(dp, "must be at least 1");
    const uint64_t wsz = L.workgroup_size[d];
    if (gs) {
      uint64_t groups = n / wsz + (n % wsz ? 1 : 0);
      if (n > UINT32_MAX || groups * wsz > UINT32_MAX)
        throw ManifestError(dp, fmt::format("grid arithmetic overflows: {} work-items (rounded up to {} workgroups of {}) exceed 2^32-1 per dimension",
                                            n, groups, wsz));
      L.workgroup_count[d] = static_cast<uint32_t>(groups);
      L.requested[d] = n;
    } else {
      if (n > UINT32_MAX || n * wsz > UINT32_MAX)
        throw ManifestError(dp, fmt::format("grid arithmetic overflows: {} workgroups of {} work-items exceed 2^32-1 work-items per dimension", n, wsz));
      L.workgroup_count[d] = static_cast<uint32_t>(n);
      L.requested[d] = n * wsz;
    }
  }
  unsigned __int128 total = 1;
  for (uint64_t r : L.requested) total *= r;
  if (total > std::numeric_limits<uint64_t>::max())
    throw ManifestError(gp, "grid arithmetic overflows: the total number of work-items exceeds 2^64-1");
  if (auto* s = o.opt("dynamic_shared_bytes"))
    L.dynamic_shared_bytes = static_cast<uint32_t>(get_uint(*s, o.ptr("dynamic_shared_bytes"), 0, UINT32_MAX));
  if (auto* c = o.opt("covers")) {
    const std::string cp = o.ptr("covers");
    if (!c->is_array()) throw ManifestError(cp, "expected an array, got " + describe(*c));
    for (size_t k = 0; k < c->size(); ++k) {
      const std::string kp = fmt::format("{}/{}", cp, k);
      Coverage cov;
      cov.pointer = kp;
      if ((*c)[k].is_string()) {
        cov.buffer = find_buffer_index(m, (*c)[k], kp);
      } else {
        Obj co((*c)[k], kp, {"buffer", "per"});
        co.finish();
        cov.buffer = find_buffer_index(m, co.req("buffer"), co.ptr("buffer"));
        if (auto* per = co.opt("per")) {
          std::string s = get_string(*per, co.ptr("per"));
          if (s == "workgroup") cov.per_workgroup = true;
          else if (s != "work_item") throw ManifestError(co.ptr("per"), fmt::format("unknown \"{}\" (expected work_item or workgroup)", s));
        }
      }
      const auto& b = m.buffers[cov.buffer];
      const uint64_t need = cov.per_workgroup ? L.total_workgroups() : L.total_workitems();
      if (b.count < need)
        throw ManifestError(kp, fmt::format("buffer \"{}\" is too small for the launch: it has {} elements, the launch covers {} {}",
                                            b.name, b.count, need, cov.per_workgroup ? "workgroups" : "work-items"));
      L.covers.push_back(cov);
    }
  }
}

void parse_expected(Manifest& m, VerifySpec& vs, const json& v, const std::string& ptr) {
  static const std::vector<std::string> kinds = {"npy", "raw", "values", "reference_backend", "reference"};
  Obj o(v, ptr, kinds);
  o.finish();
  if (v.size() != 1) throw ManifestError(ptr, "needs exactly one of: npy, raw, values, reference_backend, reference");
  const std::string key = v.begin().key();
  const json& val = v.begin().value();
  const std::string vp = o.ptr(key);
  const auto& buf = m.buffers[vs.buffer];
  if (key == "npy" || key == "raw") {
    vs.kind = key == "npy" ? VerifySpec::Kind::Npy : VerifySpec::Kind::Raw;
    vs.file = resolve_input_file(m, val, vp);
  } else if (key == "values") {
    vs.kind = VerifySpec::Kind::Values;
    if (!val.is_array()) throw ManifestError(vp, "expected an array of numbers, got " + describe(val));
    if (val.size() != buf.count)
      throw ManifestError(vp, fmt::format("has {} values but buffer \"{}\" has {} elements", val.size(), buf.name, buf.count));
    // Each value must be one the buffer's type holds: 0.9, 2^32 or "nan" for
    // a u32 would otherwise be truncated before the comparison.
    for (size_t k = 0; k < val.size(); ++k) {
      const std::string kp = fmt::format("{}/{}", vp, k);
      check_value_fits(buf.type, get_number(val[k], kp), kp);
    }
    vs.values = val;
  } else if (key == "reference_backend") {
    vs.kind = VerifySpec::Kind::ReferenceBackend;
    vs.backend = get_string(val, vp);
    if (vs.backend != "host" && vs.backend != "hsa" && vs.backend != "cuda")
      throw ManifestError(vp, fmt::format("unknown backend \"{}\" (expected host, hsa or cuda)", vs.backend));
  } else {
    vs.kind = VerifySpec::Kind::Reference;
    // Which references exist is the verifier's business (lrrt's are in
    // src/tool/reference_ops; the tool checks the name before a run).
    vs.reference = get_string(val, vp);
  }
}

// A check of a buffer nothing in the run writes can only see its initial
// contents: an error unless the check says "allow_unwritten" (the kernel or
// the arguments are then parsed already).
void check_checked_buffer_written(const Manifest& m, const VerifySpec& v) {
  const BufferSpec& b = m.buffers[v.buffer];
  std::string why;
  if (m.sequence) {
    bool written = false;
    for (const auto& s : m.sequence->steps) {
      if (s.kind != SequenceStep::Kind::Kernel) written |= s.to == v.buffer;
      else
        for (const auto& a : s.args)
          written |= a.kind == ArgSpec::Kind::Buffer && a.buffer == v.buffer && a.access != Access::Read;
      if (written) break;
    }
    if (!written)
      why = fmt::format("no step writes buffer \"{}\" (no kernel argument with access \"write\" or \"read_write\", no copy "
                        "to it, no fill of it)",
                        b.name);
  } else {
    const bool passed = std::any_of(m.args.begin(), m.args.end(), [&](const ArgSpec& a) {
      return a.kind == ArgSpec::Kind::Buffer && a.buffer == v.buffer;
    });
    if (!passed) why = fmt::format("no argument passes buffer \"{}\" to the kernel", b.name);
    else if (b.access == Access::Read)
      why = fmt::format("buffer \"{}\" is declared \"access\": \"read\" ({}/access): the kernel does not write it", b.name,
                        b.pointer);
  }
  if (!why.empty())
    throw ManifestError(v.pointer + "/buffer", fmt::format("{}, so the check can only see the buffer's initial contents; pass the "
                                                           "buffer the kernel writes, or add \"allow_unwritten\": true to the "
                                                           "check if that is what it means",
                                                           why));
}

void parse_verify(Manifest& m, const json& v, const std::string& ptr) {
  if (v.is_object()) {
    Obj o(v, ptr, {"skip"});
    o.finish();
    m.verify_skip_reason = get_string(o.req("skip", "the reason verification is skipped"), o.ptr("skip"));
    return;
  }
  if (!v.is_array()) throw ManifestError(ptr, "expected an array of checks or {\"skip\": \"reason\"}, got " + describe(v));
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string vp = fmt::format("{}/{}", ptr, i);
    Obj o(v[i], vp, {"buffer", "expected", "rtol", "atol", "equal_nan", "allow_unwritten"});
    o.finish();
    VerifySpec vs;
    vs.pointer = vp;
    vs.buffer = find_buffer_index(m, o.req("buffer"), o.ptr("buffer"));
    parse_expected(m, vs, o.req("expected", "npy, raw, values, reference_backend or reference"), o.ptr("expected"));
    // Integers compare exactly unless the manifest asks for a tolerance.
    if (!dtype_is_float(m.buffers[vs.buffer].type)) vs.rtol = vs.atol = 0;
    if (auto* r = o.opt("rtol")) vs.rtol = get_double(*r, o.ptr("rtol"));
    if (auto* a = o.opt("atol")) vs.atol = get_double(*a, o.ptr("atol"));
    if (vs.rtol < 0) throw ManifestError(o.ptr("rtol"), "must not be negative");
    if (vs.atol < 0) throw ManifestError(o.ptr("atol"), "must not be negative");
    if (auto* e = o.opt("equal_nan")) vs.equal_nan = get_bool(*e, o.ptr("equal_nan"));
    const bool allow_unwritten = o.has("allow_unwritten") && get_bool(*o.opt("allow_unwritten"), o.ptr("allow_unwritten"));
    if (!allow_unwritten) check_checked_buffer_written(m, vs);
    m.verify.push_back(std::move(vs));
  }
}

void parse_save(Manifest& m, const json& v, const std::string& ptr) {
  if (!v.is_array()) throw ManifestError(ptr, "expected an array of {\"buffer\": ..., \"npy\": ...}, got " + describe(v));
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string sp = fmt::format("{}/{}", ptr, i);
    Obj o(v[i], sp, {"buffer", "npy"});
    o.finish();
    SaveSpec s;
    s.pointer = sp;
    s.buffer = find_buffer_index(m, o.req("buffer"), o.ptr("buffer"));
    s.file = get_string(o.req("npy", "the .npy file to write"), o.ptr("npy"));
    if (s.file.empty()) throw ManifestError(o.ptr("npy"), "is empty");
    // Like every input path: relative to the manifest's folder, so a
    // manifest means the same wherever lrrt is started.
    if (s.file.is_relative()) s.file = m.base_dir / s.file;
    for (const auto& earlier : m.save)
      if (earlier.file.lexically_normal() == s.file.lexically_normal())
        throw ManifestError(o.ptr("npy"), fmt::format("{} is saved twice (also by {})", s.file.string(), earlier.pointer));
    m.save.push_back(std::move(s));
  }
}

void parse_code_object(std::map<std::string, std::string>& code_object, const json& v, const std::string& ptr) {
  if (v.is_string()) {
    code_object["*"] = get_string(v, ptr);
    return;
  }
  if (!v.is_object())
    throw ManifestError(ptr, "expected a path or an object {\"host\": ..., \"hsa\": ..., \"cuda\": ...}, got " + describe(v));
  Obj o(v, ptr, {"host", "hsa", "cuda"});
  o.finish();
  if (v.empty()) throw ManifestError(ptr, "needs at least one of host, hsa, cuda");
  for (auto it = v.begin(); it != v.end(); ++it) code_object[it.key()] = get_string(it.value(), o.ptr(it.key()));
}


// ---- Sequences (docs/manifest.md, "Sequences") -----------------------------

void parse_kernels(Sequence& seq, const json& v, const std::string& ptr) {
  if (!v.is_object() || v.empty())
    throw ManifestError(ptr, "expected an object {\"alias\": {\"code_object\": ..., \"kernel\": ...}, ...}, got " + describe(v));
  for (auto it = v.begin(); it != v.end(); ++it) {
    SequenceKernel k;
    k.alias = it.key();
    k.pointer = ptr + "/" + pointer_token(it.key());
    if (k.alias.empty()) throw ManifestError(k.pointer, "a kernel alias must not be empty");
    Obj o(it.value(), k.pointer, {"code_object", "kernel", "description", "waits_for_producer"});
    o.finish();
    parse_code_object(k.code_object, o.req("code_object", "path of the compiled kernel, or one per backend"), o.ptr("code_object"));
    k.kernel = o.has("kernel") ? get_string(*o.opt("kernel"), o.ptr("kernel")) : k.alias;
    if (auto* w = o.opt("waits_for_producer")) k.waits_for_producer = get_bool(*w, o.ptr("waits_for_producer"));
    if (auto* d = o.opt("description")) (void)get_string(*d, o.ptr("description"), true);
    seq.kernels.push_back(std::move(k));
  }
}

// Expands the written steps into Sequence::steps. Written steps are numbered
// in document order; `after` and `patch` name written steps.
class SequenceParser {
 public:
  SequenceParser(const Manifest& m, Sequence& seq) : m_(m), seq_(seq) {}

  void parse(const json& v, const std::string& ptr) {
    if (!v.is_array() || v.empty()) throw ManifestError(ptr, "expected a non-empty array of steps, got " + describe(v));
    collect(v, ptr);
    seq_.written_steps = written_.size();
    last_instance_.assign(written_.size(), SIZE_MAX);
    size_t next = 0;
    expand(v, next, "", 0);
  }

  // The written step called `name` (unique), for "patch".
  size_t written_index(const json& v, const std::string& ptr) const {
    const std::string name = get_string(v, ptr);
    auto it = by_name_.find(name);
    if (it == by_name_.end())
      throw ManifestError(ptr, fmt::format("no step named \"{}\" (named steps: {})", printable(name, 60), names()));
    return it->second;
  }
  const SequenceStep& written(size_t w) const { return written_[w]; }
  // The written step's JSON, as the manifest gives it (the document
  // outlives the parse).
  const json& written_json(size_t w) const { return *written_json_[w]; }

 private:
  std::string names() const {
    std::string out;
    for (const auto& [n, _] : by_name_) out += (out.empty() ? "" : ", ") + n;
    return out.empty() ? "none" : out;
  }

  // First pass: parse every written step once (names must be known before
  // `after` is resolved), check repeat counts and the expanded size.
  uint64_t collect(const json& v, const std::string& ptr) {
    uint64_t total = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string sp = fmt::format("{}/{}", ptr, i);
      const json& e = v[i];
      if (e.is_object() && e.contains("repeat")) {
        Obj o(e, sp, {"repeat", "steps", "description"});
        o.finish();
        const uint64_t n = get_uint(o.req("repeat"), o.ptr("repeat"), 1, kMaxSequenceSteps);
        const json& body = o.req("steps", "the steps to repeat");
        if (!body.is_array() || body.empty())
          throw ManifestError(o.ptr("steps"), "expected a non-empty array of steps, got " + describe(body));
        const uint64_t inner = collect(body, o.ptr("steps"));
        if (inner > kMaxSequenceSteps / n)
          throw ManifestError(o.ptr("repeat"), fmt::format("{} repetitions of {} step(s) exceed the limit of {} steps", n, inner, kMaxSequenceSteps));
        total += n * inner;
      } else {
        written_.push_back(parse_step(e, sp));
        written_json_.push_back(&e);
        total += 1;
      }
      if (total > kMaxSequenceSteps)
        throw ManifestError(sp, fmt::format("the sequence has more than {} steps", kMaxSequenceSteps));
    }
    return total;
  }

  SequenceStep parse_step(const json& e, const std::string& sp) {
    if (!e.is_object()) throw ManifestError(sp, "expected a step object (a kernel, copy, fill or {\"repeat\": N, \"steps\": [...]}), got " + describe(e));
    SequenceStep s;
    s.pointer = sp;
    s.written = written_.size();
    const bool is_copy = e.contains("copy"), is_fill = e.contains("fill"), is_kernel = e.contains("kernel");
    if (int(is_copy) + int(is_fill) + int(is_kernel) != 1)
      throw ManifestError(sp, "a step needs exactly one of \"kernel\", \"copy\" or \"fill\" (or is {\"repeat\": N, \"steps\": [...]})");
    std::vector<std::string> known = {"name", "after", "description"};
    if (is_kernel) known.insert(known.end(), {"kernel", "args", "launch"});
    else known.push_back(is_copy ? "copy" : "fill");
    Obj o(e, sp, known);
    o.finish();
    if (auto* d = o.opt("description")) (void)get_string(*d, o.ptr("description"), true);
    if (auto* n = o.opt("name")) {
      s.name = get_string(*n, o.ptr("name"));
      if (by_name_.count(s.name))
        throw ManifestError(o.ptr("name"), fmt::format("duplicate step name \"{}\" (first at {})", printable(s.name, 60),
                                                       written_[by_name_[s.name]].pointer));
    }
    if (is_kernel) {
      s.kind = SequenceStep::Kind::Kernel;
      const std::string alias = get_string(o.req("kernel"), o.ptr("kernel"));
      auto k = std::find_if(seq_.kernels.begin(), seq_.kernels.end(), [&](const SequenceKernel& x) { return x.alias == alias; });
      if (k == seq_.kernels.end()) {
        std::string known_k;
        for (const auto& x : seq_.kernels) known_k += (known_k.empty() ? "" : ", ") + x.alias;
        throw ManifestError(o.ptr("kernel"), fmt::format("no kernel \"{}\" in /kernels (it has: {})", printable(alias, 60), known_k));
      }
      s.kernel = static_cast<size_t>(k - seq_.kernels.begin());
      if (s.name.empty()) s.name = alias;
      parse_args(m_, o.req("args", "the kernel's arguments in order; [] for none"), o.ptr("args"), s.args, &s.name);
      parse_launch(m_, o.req("launch"), o.ptr("launch"), s.launch);
    } else if (is_copy) {
      s.kind = SequenceStep::Kind::Copy;
      if (s.name.empty()) s.name = "copy";
      const std::string cp = o.ptr("copy");
      Obj c(*o.opt("copy"), cp, {"from", "to", "bytes", "from_offset", "to_offset"});
      c.finish();
      s.from = find_buffer_index(m_, c.req("from"), c.ptr("from"));
      s.to = find_buffer_index(m_, c.req("to"), c.ptr("to"));
      const auto& from = m_.buffers[s.from];
      const auto& to = m_.buffers[s.to];
      if (auto* x = c.opt("from_offset")) s.from_offset = get_uint(*x, c.ptr("from_offset"));
      if (auto* x = c.opt("to_offset")) s.to_offset = get_uint(*x, c.ptr("to_offset"));
      if (s.from_offset >= from.bytes) throw ManifestError(c.ptr("from_offset"), fmt::format("is past the end of buffer \"{}\" ({} bytes)", from.name, from.bytes));
      if (s.to_offset >= to.bytes) throw ManifestError(c.ptr("to_offset"), fmt::format("is past the end of buffer \"{}\" ({} bytes)", to.name, to.bytes));
      s.bytes = c.has("bytes") ? get_uint(*c.opt("bytes"), c.ptr("bytes"), 1) : from.bytes - s.from_offset;
      const std::string bp = c.has("bytes") ? c.ptr("bytes") : cp;
      if (s.bytes > from.bytes - s.from_offset)
        throw ManifestError(bp, fmt::format("{} bytes from offset {} reach past the end of buffer \"{}\" ({} bytes)", s.bytes, s.from_offset, from.name, from.bytes));
      if (s.bytes > to.bytes - s.to_offset)
        throw ManifestError(bp, fmt::format("{} bytes at offset {} do not fit buffer \"{}\" ({} bytes)", s.bytes, s.to_offset, to.name, to.bytes));
      if (s.from == s.to && s.from_offset < s.to_offset + s.bytes && s.to_offset < s.from_offset + s.bytes)
        throw ManifestError(cp, "the source and destination ranges overlap");
    } else {
      s.kind = SequenceStep::Kind::Fill;
      if (s.name.empty()) s.name = "fill";
      const std::string fp = o.ptr("fill");
      Obj f(*o.opt("fill"), fp, {"buffer", "value", "range"});
      f.finish();
      s.from = s.to = find_buffer_index(m_, f.req("buffer"), f.ptr("buffer"));
      const auto& b = m_.buffers[s.to];
      const long double value = get_number(f.req("value", "the element value to fill with"), f.ptr("value"));
      check_value_fits(b.type, value, f.ptr("value"));
      std::array<std::byte, 8> bytes{};
      store_element(b.type, bytes.data(), 0, value);
      const size_t esize = dtype_size(b.type);
      if (esize == 8) {
        // The runtime fills with 1-, 2- or 4-byte patterns (cuMemsetD8/16/32).
        if (std::memcmp(bytes.data(), bytes.data() + 4, 4) != 0)
          throw ManifestError(f.ptr("value"), fmt::format("{} is not a repeated 4-byte pattern; fills of {} buffers take such values only (e.g. 0)",
                                                          static_cast<double>(value), dtype_name(b.type)));
        s.pattern_size = 4;
      } else {
        s.pattern_size = static_cast<uint32_t>(esize);
      }
      std::memcpy(s.pattern.data(), bytes.data(), s.pattern_size);
      s.to_offset = 0;
      s.bytes = b.bytes;
      if (auto* r = f.opt("range")) parse_range(b, *r, f.ptr("range"), s.to_offset, s.bytes);
    }
    if (o.has("name")) by_name_[s.name] = s.written;
    // `after` is resolved against the names known so far: an edge may only
    // point back in the sequence, so explicit edges can never form a cycle.
    if (auto* a = o.opt("after")) {
      const std::string ap = o.ptr("after");
      if (!a->is_array()) throw ManifestError(ap, "expected an array of names of earlier steps, got " + describe(*a));
      for (size_t k = 0; k < a->size(); ++k) {
        const std::string kp = fmt::format("{}/{}", ap, k);
        const std::string target = get_string((*a)[k], kp);
        if (o.has("name") && target == s.name)
          throw ManifestError(kp, fmt::format("step \"{}\" cannot come after itself (a cycle)", printable(target, 60)));
        auto it = by_name_.find(target);
        if (it == by_name_.end()) {
          if (later_name(target))
            throw ManifestError(kp, fmt::format("step \"{}\" comes later in the sequence: \"after\" names earlier steps "
                                                "only (an edge to a later step would form a cycle with program order)",
                                                printable(target, 60)));
          throw ManifestError(kp, fmt::format("no earlier step named \"{}\" (named steps before this one: {})", printable(target, 60), names()));
        }
        pending_after_[s.written].push_back(it->second);
      }
    }
    return s;
  }

  // Whether a step later in the document carries this name (for the message).
  bool later_name(const std::string& name) const { return later_names_.count(name) != 0; }

 public:
  // Every "name" in the document, so that a forward `after` is reported as
  // such rather than as unknown.
  void note_names(const json& v) {
    if (!v.is_array()) return;
    for (const auto& e : v) {
      if (!e.is_object()) continue;
      if (e.contains("repeat") && e.contains("steps")) note_names(e["steps"]);
      else if (e.contains("name") && e["name"].is_string()) later_names_.insert(e["name"].get<std::string>());
    }
  }

 private:
  // Second pass: repetitions in program order, `after` bound to the latest
  // expanded instance of the named step. A repeated step's label carries its
  // repetition per enclosing repeat: "saxpy[41]", "stage[2][0]".
  void expand(const json& v, size_t& next, const std::string& suffix, uint64_t repetition) {
    for (const json& e : v) {
      if (e.is_object() && e.contains("repeat")) {
        const uint64_t n = get_uint(e["repeat"], "", 1);
        const size_t first = next;
        for (uint64_t r = 0; r < n; ++r) {
          next = first;
          expand(e["steps"], next, fmt::format("{}[{}]", suffix, r), r);
        }
      } else {
        SequenceStep s = written_[next++];
        for (size_t w : pending_after_[s.written]) s.after.push_back(last_instance_[w]);
        last_instance_[s.written] = seq_.steps.size();
        s.label = s.name + suffix;
        s.repetition = repetition;
        seq_.steps.push_back(std::move(s));
      }
    }
  }

  const Manifest& m_;
  Sequence& seq_;
  std::vector<SequenceStep> written_;
  std::vector<const json*> written_json_;
  std::map<std::string, size_t> by_name_;
  std::set<std::string> later_names_;
  std::map<size_t, std::vector<size_t>> pending_after_;
  std::vector<size_t> last_instance_;
};

void parse_patch(const Manifest& m, Sequence& seq, const SequenceParser& P, const json& v, const std::string& ptr) {
  Obj o(v, ptr, {"step", "arg", "values"});
  o.finish();
  SequencePatch p;
  p.pointer = ptr;
  p.written = P.written_index(o.req("step", "the name of the kernel step whose argument changes"), o.ptr("step"));
  const SequenceStep& s = P.written(p.written);
  if (s.kind != SequenceStep::Kind::Kernel)
    throw ManifestError(o.ptr("step"), fmt::format("step \"{}\" is not a kernel step; only kernel arguments can be patched", s.name));
  const json& a = o.req("arg", "the argument's name or index");
  const std::string ap = o.ptr("arg");
  if (a.is_string()) {
    const std::string name = a.get<std::string>();
    auto it = std::find_if(s.args.begin(), s.args.end(), [&](const ArgSpec& x) { return x.name == name; });
    if (it == s.args.end())
      throw ManifestError(ap, fmt::format("step \"{}\" has no argument named \"{}\"", s.name, printable(name, 60)));
    p.arg = static_cast<size_t>(it - s.args.begin());
  } else {
    p.arg = static_cast<size_t>(get_uint(a, ap));
    if (p.arg >= s.args.size())
      throw ManifestError(ap, fmt::format("step \"{}\" has {} argument(s)", s.name, s.args.size()));
  }
  const ArgSpec& arg = s.args[p.arg];
  if (arg.kind != ArgSpec::Kind::Scalar)
    throw ManifestError(ap, fmt::format("argument {} of step \"{}\" is a buffer; only scalars can be patched", p.arg, s.name));
  const json& vals = o.req("values", "the values the argument takes, one per patched replay");
  const std::string vp = o.ptr("values");
  if (!vals.is_array() || vals.empty() || vals.size() > 1000)
    throw ManifestError(vp, "expected an array of 1 to 1000 values, got " + describe(vals));
  // The buffers a patched value must not index past, with the field that
  // says so: the argument's "bounds" (parse_args checked them); the buffer its
  // value is the "count_of" (the argument *is* that buffer's size); and, for a
  // count_of argument, every buffer the step's launch "covers" (one element
  // per work-item up to that size).
  struct PatchLimit {
    size_t buffer;
    std::string because;
  };
  std::vector<PatchLimit> limits;
  const json& arg_json = P.written_json(p.written).at("args").at(p.arg);
  if (auto b = arg_json.find("bounds"); b != arg_json.end())
    for (size_t k = 0; k < b->size(); ++k)
      limits.push_back({find_buffer_index(m, (*b)[k], fmt::format("{}/bounds/{}", arg.pointer, k)),
                        fmt::format("its \"bounds\" ({}/bounds) say the kernel indexes the buffer with [0, value)", arg.pointer)});
  if (auto v = arg_json.find("value"); v != arg_json.end() && v->is_object() && v->contains("count_of")) {
    limits.push_back({find_buffer_index(m, v->at("count_of"), arg.pointer + "/value/count_of"),
                      fmt::format("its value is the buffer's size ({}/value/count_of)", arg.pointer)});
    for (const Coverage& c : s.launch.covers)
      limits.push_back({c.buffer, fmt::format("its value is a size (count_of) and the launch covers the buffer ({})", c.pointer)});
  }
  for (size_t k = 0; k < vals.size(); ++k) {
    const std::string kp = fmt::format("{}/{}", vp, k);
    const long double x = get_number(vals[k], kp);
    check_value_fits(arg.type, x, kp);
    // "bounds" holds for every value the argument takes: a patched size
    // larger than a buffer would make the replay index past its end.
    for (const PatchLimit& lim : limits) {
      const BufferSpec& buf = m.buffers[lim.buffer];
      if (x > static_cast<long double>(buf.count))
        throw ManifestError(kp, fmt::format("buffer \"{}\" is too small: the patched argument {} of step \"{}\" takes {}, but "
                                            "{} and the buffer has {} elements",
                                            buf.name, arg.name.empty() ? std::to_string(p.arg) : arg.name, s.name,
                                            x >= 0 ? fmt::to_string(static_cast<uint64_t>(x)) : fmt::to_string(static_cast<int64_t>(x)),
                                            lim.because, buf.count));
    }
    std::array<std::byte, 8> bytes{};
    store_element(arg.type, bytes.data(), 0, x);
    p.values.push_back(x);
    p.encoded.push_back(bytes);
  }
  seq.patch = std::move(p);
}

void parse_sequence(Manifest& m, const Obj& o) {
  for (const char* single : {"code_object", "kernel", "args", "launch"})
    if (o.has(single))
      throw ManifestError(o.ptr(single), fmt::format("a sequence manifest names its kernels in /kernels and gives \"{}\" per step", single));
  Sequence seq;
  parse_kernels(seq, o.req("kernels", "the kernels the steps dispatch: {\"alias\": {\"code_object\": ..., \"kernel\": ...}}"), "/kernels");
  SequenceParser P(m, seq);
  P.note_names(*o.opt("sequence"));
  P.parse(*o.opt("sequence"), "/sequence");
  if (auto* p = o.opt("patch")) parse_patch(m, seq, P, *p, "/patch");
  m.sequence = std::move(seq);
}

// With a patch, every check follows the patched value: only the sequence's
// built-in reference can.
void check_patch_verifiable(const Manifest& m) {
  if (!m.sequence || !m.sequence->patch) return;
  for (const auto& v : m.verify)
    if (!(v.kind == VerifySpec::Kind::Reference && v.reference == "sequence"))
      throw ManifestError("/patch", fmt::format("the patched replays are verified against {{\"reference\": \"sequence\"}}, which follows the "
                                                "patched value; check {} ({}) cannot", v.pointer, v.method()));
}
}  // namespace

uint64_t LaunchSpec::total_workitems() const { return requested[0] * requested[1] * requested[2]; }
uint64_t LaunchSpec::total_workgroups() const {
  return uint64_t(workgroup_count[0]) * workgroup_count[1] * workgroup_count[2];
}

std::string VerifySpec::method() const {
  switch (kind) {
    case Kind::Npy: return "npy";
    case Kind::Raw: return "raw";
    case Kind::Values: return "values";
    case Kind::ReferenceBackend: return "reference_backend:" + backend;
    case Kind::Reference: return "reference:" + reference;
  }
  return "";
}

json BufferInit::to_json() const {
  switch (kind) {
    case Kind::Poison: return "poison";
    case Kind::Zeros: return "zeros";
    case Kind::Fill: return json{{"fill", static_cast<double>(fill)}};
    case Kind::Iota: return json{{"iota", {{"start", static_cast<double>(start)}, {"step", static_cast<double>(step)}}}};
    case Kind::Random: {
      json r{{"min", static_cast<double>(min)}, {"max", static_cast<double>(max)}};
      if (seed) r["seed"] = *seed;
      return json{{"random", r}};
    }
    case Kind::Npy: return json{{"npy", file.string()}};
    case Kind::Raw: return json{{"raw", file.string()}};
  }
  return nullptr;
}

uint64_t Sequence::dispatches() const {
  return static_cast<uint64_t>(std::count_if(steps.begin(), steps.end(), [](const SequenceStep& s) { return s.kind == SequenceStep::Kind::Kernel; }));
}

Manifest kernel_step_manifest(const Manifest& m, const SequenceStep& step) {
  Manifest k;
  k.path = m.path;
  k.base_dir = m.base_dir;
  k.name = m.name + ": " + step.label;
  k.buffers = m.buffers;
  const SequenceKernel& sk = m.sequence->kernels.at(step.kernel);
  k.code_object = sk.code_object;
  k.kernel = sk.kernel;
  k.args = step.args;
  k.launch = step.launch;
  k.waits_for_producer = sk.waits_for_producer;
  return k;
}

const BufferSpec* Manifest::find_buffer(const std::string& n) const {
  for (const auto& b : buffers)
    if (b.name == n) return &b;
  return nullptr;
}

std::optional<uint64_t> Manifest::traffic_bytes() const {
  if (bytes_per_iteration) return bytes_per_iteration;
  uint64_t total = 0;
  bool any = false;
  for (const auto& b : buffers) {
    if (b.access == Access::None) continue;
    any = true;
    total += b.access == Access::ReadWrite ? 2 * b.bytes : b.bytes;
  }
  return any ? std::optional<uint64_t>(total) : std::nullopt;
}

namespace {

// A code_object naming a Triton cache entry: its folder or its <name>.json
// (no other code object is JSON or a folder). The entry's description, or
// null when code_object names something else.
json triton_entry_for(const Manifest& m) {
  if (m.code_object.size() != 1 || !m.code_object.count("*")) {
    for (const auto& [backend, written] : m.code_object)
      if (written.size() > 5 && written.compare(written.size() - 5, 5, ".json") == 0)
        throw ManifestError("/code_object/" + pointer_token(backend),
                            "a Triton cache entry is one code_object for its own backend: write \"code_object\": \"" +
                                written + "\"");
    return nullptr;
  }
  const std::string& written = m.code_object.at("*");
  fs::path p = written;
  if (p.is_relative()) p = m.base_dir / p;
  std::error_code ec;
  const bool is_json = p.extension() == ".json";
  if (!is_json && !fs::is_directory(p, ec)) return nullptr;
  if (!fs::exists(p, ec)) throw ManifestError("/code_object", fmt::format("Triton entry {} not found", p.string()));
  try {
    return json::parse(lrrt::triton_describe(p.string()));
  } catch (const lrrt::Error& e) {
    throw ManifestError("/code_object", e.what());
  }
}

std::string triton_scalar_dtype(const std::string& t) {
  if (t == "i1") return "u8";
  if (t == "f16" || t == "bf16" || t == "f32" || t == "f64" || t == "i8" || t == "i16" || t == "i32" || t == "i64") return t;
  return "";
}

// The Triton parameters as the manifest's "args" array in parameter order:
// an object keyed by parameter name or an array; a scalar's type defaults to
// the parameter's, and its name is the parameter's.
json triton_args_array(const json& entry, const json& v, const std::string& ptr, std::vector<std::string>& written_ptrs) {
  const json& params = entry["params"];
  const std::string kname = entry["name"].get<std::string>();
  std::string names;
  for (const auto& p : params) names += (names.empty() ? "" : ", ") + p["name"].get<std::string>();
  json out = json::array();
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      bool known = false;
      for (const auto& p : params) known = known || p["name"] == it.key();
      if (!known)
        throw ManifestError(ptr + "/" + pointer_token(it.key()),
                            fmt::format("Triton kernel {} has no parameter \"{}\" (it has: {}; the scratch pointers are "
                                        "lrrt's to pass)",
                                        kname, it.key(), names));
    }
    for (const auto& p : params) {
      const std::string n = p["name"].get<std::string>();
      if (!v.contains(n))
        throw ManifestError(ptr, fmt::format("missing parameter \"{}\" of Triton kernel {} (it has: {})", n, kname, names));
      out.push_back(v[n]);
      written_ptrs.push_back(ptr + "/" + pointer_token(n));
    }
  } else if (v.is_array()) {
    if (v.size() != params.size())
      throw ManifestError(ptr, fmt::format("Triton kernel {} takes {} argument(s) ({}), the manifest gives {}; the scratch "
                                           "pointers are lrrt's to pass",
                                           kname, params.size(), names, v.size()));
    for (size_t i = 0; i < v.size(); ++i) {
      out.push_back(v[i]);
      written_ptrs.push_back(fmt::format("{}/{}", ptr, i));
    }
  } else {
    throw ManifestError(ptr, "expected the Triton kernel's arguments: an object {\"param\": ...} or an array, got " + describe(v));
  }
  for (size_t i = 0; i < out.size(); ++i) {
    json& a = out[i];
    const json& p = params[i];
    const std::string n = p["name"].get<std::string>();
    if (!a.is_object()) throw ManifestError(written_ptrs[i], "expected an object ({\"buffer\": ...} or {\"value\": ...}), got " + describe(a));
    if (a.contains("name") && a["name"] != n)
      throw ManifestError(written_ptrs[i] + "/name", fmt::format("parameter {} of Triton kernel {} is \"{}\"", i, kname, n));
    a["name"] = n;
    if (p["pointer"].get<bool>()) {
      if (!a.contains("buffer"))
        throw ManifestError(written_ptrs[i], fmt::format("parameter \"{}\" of Triton kernel {} is a pointer ({}): give "
                                                         "{{\"buffer\": NAME}}",
                                                         n, kname, p["aot"].get<std::string>()));
    } else if (!a.contains("buffer") && !a.contains("type")) {
      const std::string t = triton_scalar_dtype(p["type"].get<std::string>());
      if (t.empty()) throw ManifestError(written_ptrs[i], fmt::format("parameter \"{}\" has type {} lrrt has no scalar for", n, p["type"].get<std::string>()));
      a["type"] = t;
    }
  }
  return out;
}

std::string triton_rewrite_pointer(const std::string& what, const std::vector<std::string>& written_ptrs,
                                   const std::string& ptr) {
  for (size_t i = written_ptrs.size(); i-- > 0;) {
    const std::string from = fmt::format("{}/{}", ptr, i);
    if (what.rfind(from, 0) == 0 && (what.size() == from.size() || what[from.size()] == '/' || what[from.size()] == ':'))
      return written_ptrs[i] + what.substr(from.size());
  }
  return what;
}

// Triton's launch: "grid" in programs; blocks are warp_size x num_warps
// work-items, dynamic shared memory is the entry's "shared".
json triton_launch_object(const json& entry, const json& v, const std::string& ptr) {
  Obj o(v, ptr, {"grid", "covers"});
  for (const char* f : {"workgroup_size", "workgroup_count", "global_size", "dynamic_shared_bytes"})
    if (o.has(f))
      throw ManifestError(ptr + "/" + f, fmt::format("a Triton kernel's launch is \"grid\" (programs per dimension); lrrt "
                                                     "derives the block ({} = warp_size {} x num_warps {}) and the shared "
                                                     "bytes ({}) from the entry",
                                                     entry["block"].get<uint32_t>(), entry["warp_size"].get<uint32_t>(),
                                                     entry["num_warps"].get<uint32_t>(), entry["shared"].get<uint32_t>()));
  o.finish();
  const json& grid = o.req("grid", "Triton's grid: programs per dimension, [x], [x, y] or [x, y, z]");
  if (!grid.is_array() || grid.empty() || grid.size() > 3)
    throw ManifestError(o.ptr("grid"), "expected an array of 1 to 3 program counts, got " + describe(grid));
  json ws = json::array({entry["block"]});
  while (ws.size() < grid.size()) ws.push_back(1);
  json out = {{"workgroup_size", ws}, {"workgroup_count", grid}, {"dynamic_shared_bytes", entry["shared"]}};
  if (auto* c = o.opt("covers")) out["covers"] = *c;
  return out;
}

void parse_triton_kernel(Manifest& m, const Obj& o, const json& entry,
                         const std::function<void(const json&)>& parse_buffers_here,
                         const std::function<void(const json&, std::vector<ArgSpec>&)>& parse_args_here,
                         const std::function<void(const json&, LaunchSpec&)>& parse_launch_here) {
  const std::string name = entry["name"].get<std::string>();
  if (auto* k = o.opt("kernel")) {
    const std::string given = get_string(*k, "/kernel");
    if (given != name)
      throw ManifestError("/kernel", fmt::format("the Triton entry's kernel is \"{}\", not \"{}\"", name, given));
  }
  m.kernel = name;
  m.triton = entry;
  m.code_object.clear();
  m.code_object[entry["backend"].get<std::string>()] = entry["binary"].get<std::string>();
  if (m.name.empty()) m.name = name;
  if (auto* b = o.opt("buffers")) parse_buffers_here(*b);
  std::vector<std::string> written_ptrs;
  const json args = triton_args_array(entry, o.req("args", "the Triton kernel's arguments by parameter name"), "/args", written_ptrs);
  try {
    parse_args_here(args, m.args);
  } catch (const ManifestError& e) {
    throw ManifestError(triton_rewrite_pointer(e.pointer(), written_ptrs, "/args"),
                        std::string(e.what()).substr(e.pointer().size() + 2));
  }
  for (size_t i = 0; i < m.args.size(); ++i) m.args[i].pointer = written_ptrs[i];
  parse_launch_here(triton_launch_object(entry, o.req("launch", "Triton's grid: {\"grid\": [programs]}"), "/launch"), m.launch);
  // The hidden scratch pointers, after the user's parameters.
  const uint64_t programs = m.launch.total_workgroups();
  for (const auto& h : entry["hidden"]) {
    ArgSpec a;
    a.name = h["name"].get<std::string>();
    a.pointer = "/launch";
    const uint64_t size = h["size"].get<uint64_t>();
    if (size == 0) {
      a.kind = ArgSpec::Kind::Scalar;
      a.type = DType::u64;
      a.null_pointer = true;
    } else {
      BufferSpec b;
      b.name = "triton_" + a.name;
      b.type = DType::u8;
      b.count = programs * h["per_program_factor"].get<uint64_t>() * size;
      b.bytes = b.count;
      b.shape = {b.count};
      b.init.kind = BufferInit::Kind::Zeros;
      b.pointer = fmt::format("/buffers/{}", m.buffers.size());
      if (m.find_buffer(b.name)) throw ManifestError("/buffers", fmt::format("buffer name \"{}\" is lrrt's (Triton scratch)", b.name));
      m.buffers.push_back(b);
      a.kind = ArgSpec::Kind::Buffer;
      a.buffer = m.buffers.size() - 1;
    }
    m.args.push_back(a);
  }
}

}  // namespace

Manifest parse_manifest(const json& doc, const fs::path& base_dir) {
  if (doc.is_object() && doc.contains("axes"))
    throw ManifestError("/axes", "a sweep manifest stands for one manifest per state: run it with `lrrt run` (lrrt::bundle: "
                                 "load_sweep, then Sweep::state_manifest)");
  Manifest m;
  m.base_dir = base_dir;
  Obj o(doc, "", {"$schema", "lrrt_manifest", "name", "description", "code_object", "kernel", "buffers", "args",
                  "launch", "warmup", "iterations", "verify", "save", "bytes_per_iteration", "elements_per_iteration", "kernels",
                  "sequence", "patch", "waits_for_producer"});
  const json& ver = o.req("lrrt_manifest", "the format version; this lrrt reads 1");
  if (!ver.is_number_integer() || ver.get<int64_t>() != kManifestVersion)
    throw ManifestError("/lrrt_manifest", fmt::format("unsupported manifest version {} (this lrrt reads {})", json_excerpt(ver), kManifestVersion));
  o.finish();
  if (auto* s = o.opt("$schema")) (void)get_string(*s, "/$schema");
  if (auto* n = o.opt("name")) m.name = get_string(*n, "/name");
  if (auto* d = o.opt("description")) m.description = get_string(*d, "/description", true);
  if (o.has("sequence")) {
    if (o.has("waits_for_producer"))
      throw ManifestError("/waits_for_producer", "a sequence manifest sets waits_for_producer per kernel, in /kernels/<alias>");
    if (auto* b = o.opt("buffers")) parse_buffers(m, *b, "/buffers");
    parse_sequence(m, o);
    if (m.name.empty()) m.name = "sequence";
  } else {
    for (const char* seq_only : {"kernels", "patch"})
      if (o.has(seq_only)) throw ManifestError(std::string("/") + seq_only, "only a sequence manifest (with \"sequence\") takes this field");
    parse_code_object(m.code_object, o.req("code_object", "path of the compiled kernel, or one per backend"), "/code_object");
    if (json entry = triton_entry_for(m); !entry.is_null()) {
      parse_triton_kernel(
          m, o, entry, [&](const json& b) { parse_buffers(m, b, "/buffers"); },
          [&](const json& a, std::vector<ArgSpec>& out) { parse_args(m, a, "/args", out); },
          [&](const json& l, LaunchSpec& L) { parse_launch(m, l, "/launch", L); });
    } else {
    m.kernel = get_string(o.req("kernel", "the kernel's symbol name"), "/kernel");
    if (m.name.empty()) m.name = m.kernel;
    if (auto* b = o.opt("buffers")) parse_buffers(m, *b, "/buffers");
    parse_args(m, o.req("args", "the kernel's arguments in order; [] for none"), "/args", m.args);
    parse_launch(m, o.req("launch"), "/launch", m.launch);
    }
  }
  if (auto* w = o.opt("waits_for_producer")) m.waits_for_producer = get_bool(*w, "/waits_for_producer");
  if (m.triton.is_object() && m.triton.value("launch_pdl", false)) m.waits_for_producer = true;  // Triton's own word
  if (auto* w = o.opt("warmup")) m.warmup = static_cast<uint32_t>(get_uint(*w, "/warmup", 0, 1000000));
  if (auto* it = o.opt("iterations")) m.iterations = static_cast<uint32_t>(get_uint(*it, "/iterations", 0, 10000000));
  if (auto* v = o.opt("verify")) parse_verify(m, *v, "/verify");
  if (auto* s = o.opt("save")) parse_save(m, *s, "/save");
  if (auto* b = o.opt("bytes_per_iteration")) m.bytes_per_iteration = get_uint(*b, "/bytes_per_iteration");
  if (auto* e = o.opt("elements_per_iteration")) m.elements_per_iteration = get_uint(*e, "/elements_per_iteration");
  check_patch_verifiable(m);
  return m;
}

Manifest load_manifest(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw InputError(fmt::format("{}: manifest not found", path.string()));
  json doc = read_json_file(path, kMaxManifestBytes);
  fs::path base = path.parent_path();
  if (base.empty()) base = ".";
  try {
    Manifest m = parse_manifest(doc, base);
    m.path = path;
    return m;
  } catch (const ManifestError& e) {
    throw InputError(path.string() + ": " + e.what());
  }
}

std::vector<std::string> build_file_names(const std::string& name, const std::string& backend, const std::string& arch) {
  if (backend == "host") return {name + ".host.so"};
  if (backend == "hsa") return {name + "." + arch + ".hsaco", name + ".bundle.hsaco"};
  if (backend == "cuda") return {name + "." + arch + ".cubin", name + ".fatbin", name + ".ptx"};
  return {};
}

fs::path resolve_code_object_path(const std::string& written, const std::string& backend, const std::string& arch,
                                  const fs::path& kernel_dir, const fs::path& base_dir) {
  std::string s = written;
  for (size_t p; (p = s.find("{arch}")) != std::string::npos;) s.replace(p, 6, arch);
  const std::string prefix = "@kernels/";
  const bool in_kernels = s.rfind(prefix, 0) == 0;
  fs::path path;
  if (in_kernels) path = kernel_dir / s.substr(prefix.size());
  else if (s == "@kernels") path = kernel_dir;
  else {
    path = s;
    if (path.is_relative()) path = base_dir / path;
  }
  const std::string hint =
      in_kernels ? fmt::format(" (@kernels is {}; set it with --kernel-dir or $LRRT_KERNEL_DIR)", kernel_dir.string()) : "";
  std::error_code ec;
  const std::string file = path.filename().string();
  if (file.size() > 2 && file.ends_with(".*")) {
    // NAME.*: the build's file of NAME for this backend and arch, best first.
    const std::string name = file.substr(0, file.size() - 2);
    const auto names = build_file_names(name, backend, arch);
    for (const auto& n : names)
      if (fs::is_regular_file(path.parent_path() / n, ec)) return path.parent_path() / n;
    std::string looked;
    for (const auto& n : names) looked += (looked.empty() ? "" : ", ") + n;
    throw InputError(fmt::format("no {} build of {} for {} in {} (looked for {}){}", backend, name, arch,
                                 path.parent_path().string(), looked.empty() ? "nothing: unknown backend" : looked, hint));
  }
  if (!fs::is_regular_file(path, ec)) throw InputError(fmt::format("code object not found: {}{}", path.string(), hint));
  return path;
}

fs::path resolve_code_object(const Manifest& m, const std::string& backend, const std::string& arch,
                             const fs::path& kernel_dir) {
  std::string ptr = "/code_object/" + backend;
  auto it = m.code_object.find(backend);
  if (it == m.code_object.end()) {
    it = m.code_object.find("*");
    ptr = "/code_object";
  }
  if (it == m.code_object.end()) {
    std::string have;
    for (const auto& [k, _] : m.code_object) have += (have.empty() ? "" : ", ") + k;
    throw ManifestError("/code_object", fmt::format("no code object for backend \"{}\" (the manifest has: {})", backend, have));
  }
  try {
    return resolve_code_object_path(it->second, backend, arch, kernel_dir, m.base_dir);
  } catch (const InputError& e) {
    throw ManifestError(ptr, e.what());
  }
}

}  // namespace lrrt::bundle

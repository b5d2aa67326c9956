#include "lrrt/bundle/manifest.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "lrrt/bundle/json_input.hpp"
#include "lrrt/bundle/text.hpp"

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

std::string get_string(const json& v, const std::string& ptr, bool allow_empty = false) {
  if (!v.is_string()) throw ManifestError(ptr, "expected a string, got " + describe(v));
  std::string s = v.get<std::string>();
  if (s.empty() && !allow_empty) throw ManifestError(ptr, "must not be empty");
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
  if (v.is_number_float()) return v.get<double>();
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    if (s == "nan") return std::numeric_limits<long double>::quiet_NaN();
    if (s == "inf" || s == "+inf") return std::numeric_limits<long double>::infinity();
    if (s == "-inf") return -std::numeric_limits<long double>::infinity();
  }
  throw ManifestError(ptr, "expected a number (or \"nan\", \"inf\", \"-inf\"), got " + describe(v));
}

// Checks that v is representable in t (integers: exact and in range).
void check_value_fits(DType t, long double v, const std::string& ptr) {
  if (dtype_is_float(t)) return;
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
// buffer so a manifest cannot disagree with itself.
std::optional<uint64_t> size_reference(const Manifest& m, const json& v, const std::string& ptr) {
  if (!v.is_object()) return std::nullopt;
  if (v.contains("count_of")) {
    Obj o(v, ptr, {"count_of"});
    o.finish();
    return m.buffers[find_buffer_index(m, o.req("count_of"), o.ptr("count_of"))].count;
  }
  if (v.contains("shape_of")) {
    Obj o(v, ptr, {"shape_of", "axis"});
    o.finish();
    const auto& b = m.buffers[find_buffer_index(m, o.req("shape_of"), o.ptr("shape_of"))];
    uint64_t axis = get_uint(o.req("axis"), o.ptr("axis"));
    if (axis >= b.shape.size())
      throw ManifestError(o.ptr("axis"), fmt::format("buffer \"{}\" has {} dimension(s)", b.name, b.shape.size()));
    return b.shape[axis];
  }
  throw ManifestError(ptr, "expected a number, {\"count_of\": \"<buffer>\"} or {\"shape_of\": \"<buffer>\", \"axis\": N}");
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
    if (!dtype_is_float(type)) {
      check_value_fits(type, init.min, ro.ptr("min"));
      check_value_fits(type, init.max, ro.ptr("max"));
    }
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

void parse_args(Manifest& m, const json& v, const std::string& ptr) {
  if (!v.is_array()) throw ManifestError(ptr, "expected an array of arguments, got " + describe(v));
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string ap = fmt::format("{}/{}", ptr, i);
    Obj o(v[i], ap, {"buffer", "type", "value", "offset", "name", "bounds"});
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
    } else {
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
    m.args.push_back(std::move(a));
  }
}

void parse_launch(Manifest& m, const json& v, const std::string& ptr) {
  Obj o(v, ptr, {"workgroup_size", "workgroup_count", "global_size", "dynamic_shared_bytes", "covers"});
  o.finish();
  LaunchSpec& L = m.launch;
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
    for (size_t k = 0; k < val.size(); ++k) (void)get_number(val[k], fmt::format("{}/{}", vp, k));
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
    Obj o(v[i], vp, {"buffer", "expected", "rtol", "atol", "equal_nan"});
    o.finish();
    VerifySpec vs;
    vs.pointer = vp;
    vs.buffer = find_buffer_index(m, o.req("buffer"), o.ptr("buffer"));
    parse_expected(m, vs, o.req("expected", "npy, raw, values, reference_backend or reference"), o.ptr("expected"));
    if (auto* r = o.opt("rtol")) vs.rtol = get_double(*r, o.ptr("rtol"));
    if (auto* a = o.opt("atol")) vs.atol = get_double(*a, o.ptr("atol"));
    if (vs.rtol < 0) throw ManifestError(o.ptr("rtol"), "must not be negative");
    if (vs.atol < 0) throw ManifestError(o.ptr("atol"), "must not be negative");
    if (auto* e = o.opt("equal_nan")) vs.equal_nan = get_bool(*e, o.ptr("equal_nan"));
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
    m.save.push_back(std::move(s));
  }
}

void parse_code_object(Manifest& m, const json& v, const std::string& ptr) {
  if (v.is_string()) {
    m.code_object["*"] = get_string(v, ptr);
    return;
  }
  if (!v.is_object())
    throw ManifestError(ptr, "expected a path or an object {\"host\": ..., \"hsa\": ..., \"cuda\": ...}, got " + describe(v));
  Obj o(v, ptr, {"host", "hsa", "cuda"});
  o.finish();
  if (v.empty()) throw ManifestError(ptr, "needs at least one of host, hsa, cuda");
  for (auto it = v.begin(); it != v.end(); ++it) m.code_object[it.key()] = get_string(it.value(), o.ptr(it.key()));
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

Manifest parse_manifest(const json& doc, const fs::path& base_dir) {
  Manifest m;
  m.base_dir = base_dir;
  Obj o(doc, "", {"$schema", "lrrt_manifest", "name", "description", "code_object", "kernel", "buffers", "args",
                  "launch", "warmup", "iterations", "verify", "save", "bytes_per_iteration"});
  const json& ver = o.req("lrrt_manifest", "the format version; this lrrt reads 1");
  if (!ver.is_number_integer() || ver.get<int64_t>() != kManifestVersion)
    throw ManifestError("/lrrt_manifest", fmt::format("unsupported manifest version {} (this lrrt reads {})", json_excerpt(ver), kManifestVersion));
  o.finish();
  if (auto* s = o.opt("$schema")) (void)get_string(*s, "/$schema");
  if (auto* n = o.opt("name")) m.name = get_string(*n, "/name");
  if (auto* d = o.opt("description")) m.description = get_string(*d, "/description", true);
  parse_code_object(m, o.req("code_object", "path of the compiled kernel, or one per backend"), "/code_object");
  m.kernel = get_string(o.req("kernel", "the kernel's symbol name"), "/kernel");
  if (m.name.empty()) m.name = m.kernel;
  if (auto* b = o.opt("buffers")) parse_buffers(m, *b, "/buffers");
  parse_args(m, o.req("args", "the kernel's arguments in order; [] for none"), "/args");
  parse_launch(m, o.req("launch"), "/launch");
  if (auto* w = o.opt("warmup")) m.warmup = static_cast<uint32_t>(get_uint(*w, "/warmup", 0, 1000000));
  if (auto* it = o.opt("iterations")) m.iterations = static_cast<uint32_t>(get_uint(*it, "/iterations", 0, 10000000));
  if (auto* v = o.opt("verify")) parse_verify(m, *v, "/verify");
  if (auto* s = o.opt("save")) parse_save(m, *s, "/save");
  if (auto* b = o.opt("bytes_per_iteration")) m.bytes_per_iteration = get_uint(*b, "/bytes_per_iteration");
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

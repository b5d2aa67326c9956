// Buffers (their size and init), verify and save.
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
    if (dtype_is_complex(type)) {
      const auto [re, im] = get_complex(val, vp, type);
      init.fill = re;
      init.fill_imag = im;
    } else {
      init.fill = get_number(val, vp);
      check_value_fits(type, init.fill, vp);
    }
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
      if (dtype_is_complex(buf.type)) get_complex(val[k], kp, buf.type);  // [re, im] or a real number
      else check_value_fits(buf.type, get_number(val[k], kp), kp);
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
        for (const auto& u : buffer_uses(s.args)) written |= u.buffer == v.buffer && u.access != Access::Read;
      if (written) break;
    }
    if (!written)
      why = fmt::format("no step writes buffer \"{}\" (no kernel argument with access \"write\" or \"read_write\", no copy "
                        "to it, no fill of it)",
                        b.name);
  } else {
    const auto uses = buffer_uses(m.args);
    // A tensor map the kernel only reads through does not write the buffer.
    const bool passed = std::any_of(uses.begin(), uses.end(), [&](const BufferUse& u) {
      return u.buffer == v.buffer && !(m.args[u.arg].kind == ArgSpec::Kind::TensorMap && u.access == Access::Read);
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

}  // namespace

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
    if (auto* a = o.opt("access")) b.access = parse_access(*a, o.ptr("access"));
    if (auto* d = o.opt("description")) (void)get_string(*d, o.ptr("description"), true);
    m.buffers.push_back(std::move(b));
    // init may refer to files relative to the manifest; parsed after the name is known.
    if (auto* init = o.opt("init")) m.buffers.back().init = parse_init(m, *init, o.ptr("init"), m.buffers.back().type);
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

}  // namespace manifest_parse

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
    case Kind::Fill:
      if (fill_imag != 0) return json{{"fill", {static_cast<double>(fill), static_cast<double>(fill_imag)}}};
      return json{{"fill", static_cast<double>(fill)}};
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

}  // namespace lrrt::bundle

// A kernel's arguments (buffers and scalars) and its launch.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>

#include "lrrt/bundle/json_input.hpp"
#include "lrrt/bundle/text.hpp"
#include "manifest_parse.hpp"

namespace lrrt::bundle {

using nlohmann::json;
namespace fs = std::filesystem;

namespace manifest_parse {

// The one reading of an "access" field (a buffer's, or a step argument's).
Access parse_access(const json& v, const std::string& ptr) {
  std::string s = get_string(v, ptr);
  if (s == "read") return Access::Read;
  if (s == "write") return Access::Write;
  if (s == "read_write") return Access::ReadWrite;
  throw ManifestError(ptr, fmt::format("unknown access \"{}\" (expected read, write or read_write)", printable(s, 40)));
}

namespace {

void encode_scalar(ArgSpec& a) {
  a.bytes.fill(std::byte{0});
  store_element(a.type, a.bytes.data(), 0, a.value);
  if (dtype_is_complex(a.type)) store_element(dtype_part(a.type), a.bytes.data(), 1, a.value_imag);
}

}  // namespace

// A scalar's "type", "value" (complex: [re, im]) and "bounds"; `what` names
// it in messages (its name or index).
void parse_scalar(const Manifest& m, const Obj& o, ArgSpec& a, const std::string& what) {
  a.kind = ArgSpec::Kind::Scalar;
  a.type = get_dtype(o.req("type", "a scalar needs a type: " + dtype_list()), o.ptr("type"));
  const json& val = o.req("value");
  if (dtype_is_complex(a.type)) {
    std::tie(a.value, a.value_imag) = get_complex(val, o.ptr("value"), a.type);
  } else {
    if (auto ref = size_reference(m, val, o.ptr("value"))) a.value = static_cast<long double>(*ref);
    else a.value = get_number(val, o.ptr("value"));
    check_value_fits(a.type, a.value, o.ptr("value"));
  }
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
                                            buf.name, what, static_cast<double>(a.value), buf.count));
    }
  }
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
// buffer arguments may declare their access (without, Access::None: the tool
// derives it from the code object, docs/access.md).
void parse_args(const Manifest& m, const json& v, const std::string& ptr, std::vector<ArgSpec>& out,
                const std::string* step) {
  if (!v.is_array()) throw ManifestError(ptr, "expected an array of arguments, got " + describe(v));
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string ap = fmt::format("{}/{}", ptr, i);
    if (is_tensor_map_arg(v[i])) {  // manifest_tensor_map.cpp
      out.push_back(parse_tensor_map_arg(m, v[i], ap, step));
      continue;
    }
    std::vector<std::string> known = {"buffer", "type", "value", "offset", "name", "bounds",
                                      "struct", "bytes", "bytes_file", "align", "size"};
    if (step) known.insert(known.end(), {"access", "range"});
    Obj o(v[i], ap, known);
    o.finish();
    ArgSpec a;
    a.pointer = ap;
    if (auto* n = o.opt("name")) a.name = get_string(*n, o.ptr("name"));
    if (auto* off = o.opt("offset")) a.offset = static_cast<uint32_t>(get_uint(*off, o.ptr("offset"), 0, 1u << 20));
    if (o.has("struct") || o.has("bytes") || o.has("bytes_file")) {
      // By-value aggregates: manifest_struct_args.cpp.
      parse_aggregate_arg(m, o, a, fmt::format("args[{}]", i), step != nullptr);
    } else if (o.has("align") || o.has("size")) {
      throw ManifestError(o.ptr(o.has("align") ? "align" : "size"), "only struct and bytes arguments take \"align\" or \"size\"");
    } else if (o.has("buffer")) {
      if (o.has("type") || o.has("value"))
        throw ManifestError(ap, "a buffer argument takes no \"type\" or \"value\" (give either {\"buffer\": ...} or {\"type\": ..., \"value\": ...})");
      if (o.has("bounds")) throw ManifestError(o.ptr("bounds"), "only integer scalar arguments take bounds");
      a.kind = ArgSpec::Kind::Buffer;
      a.buffer = find_buffer_index(m, o.req("buffer"), o.ptr("buffer"));
      if (step) {
        const auto& b = m.buffers[a.buffer];
        if (auto* acc = o.opt("access")) a.access = parse_access(*acc, o.ptr("access"));
        if (auto* r = o.opt("range")) parse_range(b, *r, o.ptr("range"), a.range_offset, a.range_bytes);
      }
    } else {
      if (step && (o.has("access") || o.has("range")))
        throw ManifestError(o.ptr(o.has("access") ? "access" : "range"), "only buffer arguments declare access");
      if (!o.has("type") && !o.has("value"))
        throw ManifestError(ap, "missing required field \"buffer\" (a buffer argument) or \"type\" and \"value\" (a scalar)");
      parse_scalar(m, o, a, a.name.empty() ? std::to_string(i) : a.name);
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

}  // namespace manifest_parse

uint64_t LaunchSpec::total_workitems() const { return requested[0] * requested[1] * requested[2]; }
uint64_t LaunchSpec::total_workgroups() const {
  return uint64_t(workgroup_count[0]) * workgroup_count[1] * workgroup_count[2];
}

}  // namespace lrrt::bundle

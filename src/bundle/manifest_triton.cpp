// A Triton cache entry as a manifest's code_object: its parameters, launch and
// hidden scratch pointers desugared into plain arguments and buffers.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "lrrt/bundle/json_input.hpp"
#include "lrrt/bundle/text.hpp"
#include "lrrt/lrrt.hpp"
#include "manifest_parse.hpp"

namespace lrrt::bundle {

using nlohmann::json;
namespace fs = std::filesystem;

namespace manifest_parse {

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

namespace {

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

}  // namespace

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
      // Programs x factor x bytes, checked: a grid of 2^20 programs of a
      // 2^50-byte scratch must not wrap to a small buffer.
      const uint64_t factor = h["per_program_factor"].get<uint64_t>();
      if (__builtin_mul_overflow(programs, factor, &b.count) || __builtin_mul_overflow(b.count, size, &b.count))
        throw ManifestError("/launch/grid", fmt::format("the Triton scratch buffer {} of {} bytes a program for {} programs "
                                                        "(x {}) does not fit in 64 bits",
                                                        a.name, size, programs, factor));
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

}  // namespace manifest_parse

}  // namespace lrrt::bundle

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
// null when code_object names something else. `ptr` is where code_object is
// written.
json triton_entry_for(const std::map<std::string, std::string>& code_object, const fs::path& base_dir,
                      const std::string& ptr) {
  if (code_object.size() != 1 || !code_object.count("*")) {
    for (const auto& [backend, written] : code_object)
      if (written.size() > 5 && written.compare(written.size() - 5, 5, ".json") == 0)
        throw ManifestError(ptr + "/" + pointer_token(backend),
                            "a Triton cache entry is one code_object for its own backend: write \"code_object\": \"" +
                                written + "\"");
    return nullptr;
  }
  const std::string& written = code_object.at("*");
  fs::path p = written;
  if (p.is_relative()) p = base_dir / p;
  std::error_code ec;
  const bool is_json = p.extension() == ".json";
  if (!is_json && !fs::is_directory(p, ec)) return nullptr;
  if (!fs::exists(p, ec)) throw ManifestError(ptr, fmt::format("Triton entry {} not found", p.string()));
  try {
    return json::parse(lrrt::triton_describe(p.string()));
  } catch (const lrrt::Error& e) {
    throw ManifestError(ptr, e.what());
  }
}

std::string not_a_triton_entry(const std::map<std::string, std::string>& code_object, const fs::path& base_dir) {
  const std::string named = "arguments by parameter name are for a Triton cache entry (its folder or <name>.json)";
  if (code_object.size() != 1 || !code_object.count("*"))
    return named + ", and code_object names a file per backend";
  fs::path p = code_object.at("*");
  if (p.is_relative()) p = base_dir / p;
  std::error_code ec;
  if (!fs::exists(p, ec)) return fmt::format("{}: code_object {} does not exist", named, p.string());
  return fmt::format("{}: code_object {} is not one", named, p.string());
}

namespace {

// A descriptor parameter's argument: {"tensor_map": {"buffer", "dims",
// "strides", "oob_fill", "access"}}; the box, swizzle and L2 promotion are
// the entry's (tensordesc_meta), as Triton's launcher encodes them.
json triton_tensordesc_arg(const json& p, const json& a, const std::string& ptr, const std::string& kname) {
  const std::string n = p["name"].get<std::string>();
  const json& td = p["tensordesc"];
  if (!a.contains("tensor_map"))
    throw ManifestError(ptr, fmt::format("parameter \"{}\" of Triton kernel {} is a tensor descriptor ({}): give {{\"tensor_map\": "
                                         "{{\"buffer\": NAME, \"dims\": [...]}}}}",
                                         n, kname, p["aot"].get<std::string>()));
  const json& tm = a["tensor_map"];
  const std::string tp = ptr + "/tensor_map";
  if (!tm.is_object()) throw ManifestError(tp, "expected an object, got " + describe(tm));
  for (auto it = tm.begin(); it != tm.end(); ++it)
    if (it.key() != "buffer" && it.key() != "dims" && it.key() != "strides" && it.key() != "oob_fill" && it.key() != "access")
      throw ManifestError(tp + "/" + pointer_token(it.key()),
                          fmt::format("a Triton tensor descriptor takes buffer, dims, strides, oob_fill and access; its box ({}), "
                                      "swizzle and L2 promotion are the entry's (tensordesc_meta)",
                                      td["box"].dump()));
  json out = a;
  json& t = out["tensor_map"];
  t["box"] = td["box"];
  static const char* swizzles[] = {"none", "32B", "64B", "128B"};
  t["swizzle"] = swizzles[td["swizzle"].get<uint32_t>()];
  t["l2_promotion"] = "128B";
  // Unless the manifest says: the access the IR analysis derives for the
  // descriptor (tt.descriptor_load: read, tt.descriptor_store: write, ...;
  // docs/access.md), read-write when it could not.
  if (!t.contains("access")) t["access"] = p.value("access", std::string("read_write"));
  return out;
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
  const json& all_params = entry["params"];
  // A descriptor's shape and stride parameters are lrrt's to pass (from the
  // descriptor's tensor map), like Triton's launcher does: not the user's.
  json params = json::array();
  for (const auto& p : all_params)
    if (!p.contains("part_of")) params.push_back(p);
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
    if (p.contains("tensordesc")) {
      a = triton_tensordesc_arg(p, a, written_ptrs[i], kname);
    } else if (p["pointer"].get<bool>()) {
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
  // Back in the kernel's parameter order, with placeholders for the parts
  // (filled in by triton_fill_tensordesc_parts once the tensor maps are parsed).
  json full = json::array();
  std::vector<std::string> full_ptrs;
  std::vector<size_t> user_index;  // per kernel parameter: its index among the user's
  size_t user = 0;
  for (const auto& p : all_params) {
    user_index.push_back(user);
    if (p.contains("part_of")) {
      full.push_back({{"name", p["name"]}, {"type", p["type"]}, {"value", 0}});
      full_ptrs.push_back(written_ptrs.at(user_index.at(p["part_of"].get<size_t>())));
    } else {
      full.push_back(out[user]);
      full_ptrs.push_back(written_ptrs[user++]);
    }
  }
  written_ptrs = full_ptrs;
  return full;
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

// The shape (i32) and stride (i64, elements) parameters after each
// descriptor, from its parsed tensor map; a dtype the buffer's does not
// match is refused (the kernel reads the bytes as its own type).
void triton_fill_tensordesc_parts(const json& entry, const Manifest& m, std::vector<ArgSpec>& args) {
  const json& params = entry["params"];
  for (size_t i = 0; i < params.size(); ++i) {
    const json& p = params[i];
    if (p.contains("tensordesc")) {
      const ArgSpec& d = args[i];
      const BufferSpec& b = m.buffers[d.buffer];
      if (dtype_size(b.type) != p["tensordesc"]["elem_size"].get<uint64_t>() || dtype_name(b.type) != triton_scalar_dtype(p["type"].get<std::string>()))
        throw ManifestError(d.pointer + "/tensor_map/buffer",
                            fmt::format("buffer \"{}\" holds {}, the tensor descriptor {} is of {}", b.name, dtype_name(b.type),
                                        p["name"].get<std::string>(), p["type"].get<std::string>()));
      // Triton's element type for the map (its TMA dtype may differ from the
      // buffer's: tf32 for f32 dots).
      args[i].tensor_map->desc.dtype = p["tensordesc"]["elem_type"].get<uint32_t>();
      continue;
    }
    if (!p.contains("part_of")) continue;
    const size_t di = p["part_of"].get<size_t>();
    const lr_tensor_map_desc_t& desc = args[di].tensor_map->desc;
    const uint32_t rank = desc.rank;
    const size_t k = i - di - 1;  // 0..rank-1 shape, rank..2rank-1 strides; outermost first
    ArgSpec& a = args[i];
    const uint64_t esize = dtype_size(m.buffers[args[di].buffer].type);
    if (k < rank) {
      const uint64_t dim = desc.global_dims[rank - 1 - k];
      if (dim > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))
        throw ManifestError(args[di].pointer + "/tensor_map/dims",
                            fmt::format("{} does not fit the kernel's i32 shape parameter", dim));
      a.value = static_cast<long double>(dim);
    } else {
      const uint32_t r = static_cast<uint32_t>(k - rank);
      a.value = r + 1 == rank ? 1.0L : static_cast<long double>(desc.global_strides[rank - 2 - r] / esize);
    }
    a.bytes.fill(std::byte{0});
    store_element(a.type, a.bytes.data(), 0, a.value);
  }
}

}  // namespace

// The user's parameters, their launch and the hidden scratch pointers, into
// `out_args` and `out_launch` (see manifest_parse.hpp).
void parse_triton_call(Manifest& m, const json& entry, const TritonCall& c, std::vector<ArgSpec>& out_args,
                       LaunchSpec& out_launch, json* desugared) {
  std::vector<std::string> written_ptrs;
  // A step's messages name the step (its pointer names it by position only).
  const std::string who = c.step ? fmt::format("step \"{}\": ", *c.step) : "";
  auto in_step = [&](const ManifestError& e, const std::string& where) {
    const std::string what = std::string(e.what()).substr(e.pointer().size() + 2);
    return ManifestError(where, who + what);
  };
  json args;
  try {
    args = triton_args_array(entry, *c.args, c.args_ptr, written_ptrs);
  } catch (const ManifestError& e) {
    throw in_step(e, e.pointer());
  }
  try {
    parse_args(m, args, c.args_ptr, out_args, c.step);
  } catch (const ManifestError& e) {
    throw in_step(e, triton_rewrite_pointer(e.pointer(), written_ptrs, c.args_ptr));
  }
  for (size_t i = 0; i < out_args.size(); ++i) out_args[i].pointer = written_ptrs[i];
  try {
    triton_fill_tensordesc_parts(entry, m, out_args);
    parse_launch(m, triton_launch_object(entry, *c.launch, c.launch_ptr), c.launch_ptr, out_launch);
  } catch (const ManifestError& e) {
    throw in_step(e, e.pointer());
  }
  if (desugared) *desugared = args;
  // The hidden scratch pointers, after the user's parameters.
  const uint64_t programs = out_launch.total_workgroups();
  for (const auto& h : entry["hidden"]) {
    ArgSpec a;
    a.name = h["name"].get<std::string>();
    a.pointer = c.launch_ptr;
    const uint64_t size = h["size"].get<uint64_t>();
    if (size == 0) {
      a.kind = ArgSpec::Kind::Scalar;
      a.type = DType::u64;
      a.null_pointer = true;
    } else {
      BufferSpec b;
      b.name = c.scratch_prefix + a.name;
      b.type = DType::u8;
      // Programs x factor x bytes, checked: a grid of 2^20 programs of a
      // 2^50-byte scratch must not wrap to a small buffer.
      const uint64_t factor = h["per_program_factor"].get<uint64_t>();
      if (__builtin_mul_overflow(programs, factor, &b.count) || __builtin_mul_overflow(b.count, size, &b.count))
        throw ManifestError(c.launch_ptr + "/grid", fmt::format("{}the Triton scratch buffer {} of {} bytes a program for {} "
                                                                "programs (x {}) does not fit in 64 bits",
                                                                who, a.name, size, programs, factor));
      b.bytes = b.count;
      b.shape = {b.count};
      b.init.kind = BufferInit::Kind::Zeros;
      b.pointer = fmt::format("/buffers/{}", m.buffers.size());
      if (m.find_buffer(b.name))
        throw ManifestError("/buffers", fmt::format("buffer name \"{}\" is lrrt's (Triton scratch{})", b.name,
                                                    c.step ? fmt::format(" of step \"{}\"", *c.step) : ""));
      m.buffers.push_back(b);
      a.kind = ArgSpec::Kind::Buffer;
      a.buffer = m.buffers.size() - 1;
    }
    out_args.push_back(a);
  }
}

void parse_triton_kernel(Manifest& m, const Obj& o, const json& entry) {
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
  if (auto* b = o.opt("buffers")) parse_buffers(m, *b, "/buffers");
  TritonCall c;
  c.args = &o.req("args", "the Triton kernel's arguments by parameter name");
  c.args_ptr = "/args";
  c.launch = &o.req("launch", "Triton's grid: {\"grid\": [programs]}");
  c.launch_ptr = "/launch";
  c.scratch_prefix = "triton_";
  parse_triton_call(m, entry, c, m.args, m.launch, nullptr);
}

}  // namespace manifest_parse

}  // namespace lrrt::bundle

// Triton cache entries (include/lrrt/formats/triton.hpp, docs/triton.md).
//
// This file reads an entry's metadata JSON and files, checks them against
// the IR's signature (triton_signature.cpp) and writes an entry as JSON.
#include "lrrt/formats/triton.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>
#include <unordered_map>

#include "triton_text.hpp"

namespace lrrt::formats {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace triton_detail {

// Text from a file for a message: printable ASCII as is, every other byte
// as \xNN, cut to max_bytes (a hostile name can be anything).
std::string triton_printable(std::string_view s, size_t max_bytes) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < max_bytes; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) out += char(c);
    else out += fmt::format("\\x{:02x}", c);
  }
  if (s.size() > max_bytes) out += fmt::format("... ({} more bytes)", s.size() - max_bytes);
  return out;
}

}  // namespace triton_detail

using triton_detail::triton_name_problem;
using triton_detail::triton_printable;

namespace {

// Files larger than this are no Triton metadata or IR lrrt reads.
constexpr uintmax_t kTritonMaxTextBytes = uintmax_t(64) << 20;

std::string triton_read_text(const fs::path& p) {
  std::error_code ec;
  const auto size = fs::file_size(p, ec);
  if (ec) throw FormatError(fmt::format("Triton entry: cannot read {}: {}", p.string(), ec.message()));
  if (size > kTritonMaxTextBytes)
    throw FormatError(fmt::format("Triton entry: {} is {} bytes, too large for Triton metadata or IR", p.string(), size));
  std::ifstream in(p, std::ios::binary);
  if (!in) throw FormatError(fmt::format("Triton entry: cannot open {}", p.string()));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool triton_looks_like_metadata(const json& j) {
  return j.is_object() && j.contains("name") && j.contains("num_warps") && j.contains("target") && j["target"].is_object();
}

// A JSON value for a message, by its type and size: never dumped, so a
// value nested 10^5 levels deep or 60 MB long costs nothing to describe.
std::string triton_describe_value(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return v.get<bool>() ? "true" : "false";
    case json::value_t::number_integer: return fmt::to_string(v.get<int64_t>());
    case json::value_t::number_unsigned: return fmt::to_string(v.get<uint64_t>());
    case json::value_t::number_float: return fmt::format("the number {}", v.get<double>());
    case json::value_t::string: {
      const auto& s = v.get_ref<const std::string&>();
      return s.size() <= 40 ? "the string \"" + triton_printable(s) + "\"" : fmt::format("a string of {} bytes", s.size());
    }
    case json::value_t::array: return fmt::format("an array of {} element(s)", v.size());
    case json::value_t::object: return fmt::format("an object of {} key(s)", v.size());
    default: return "a value lrrt does not read";
  }
}

// nlohmann's messages start "[json.exception.parse_error.101] ": the rest is the user's.
std::string triton_json_message(const std::exception& e) {
  std::string msg = e.what();
  if (const auto p = msg.find("] "); p != std::string::npos) msg = msg.substr(p + 2);
  return triton_printable(msg, 200);
}

// Triton metadata nests a few levels (extern_libs: 3); deeper is no Triton
// metadata, and bounding it keeps every later walk over the value shallow.
constexpr int kTritonMaxJsonDepth = 64;

// Strictly: one document, valid UTF-8, no key twice in one object (JSON
// readers keep the last one silently), nesting bounded while parsing (the
// parser is iterative, the bound is checked before a level is opened).
json triton_parse_metadata(std::string_view text, const std::string& where) {
  std::vector<std::vector<std::string>> keys;  // per open object (few keys: a linear search is enough)
  json::parser_callback_t check = [&](int depth, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (depth >= kTritonMaxJsonDepth)
          throw FormatError(fmt::format("{}: not Triton metadata: nested more than {} levels deep", where, kTritonMaxJsonDepth));
        if (event == json::parse_event_t::object_start) keys.emplace_back();
        break;
      case json::parse_event_t::key: {
        const auto& key = parsed.get_ref<const std::string&>();
        if (keys.back().size() < 4096 && std::find(keys.back().begin(), keys.back().end(), key) != keys.back().end())
          throw FormatError(fmt::format("Triton metadata {}: key \"{}\" appears twice in one object", where, triton_printable(key)));
        keys.back().push_back(key);
        break;
      }
      case json::parse_event_t::object_end: keys.pop_back(); break;
      default: break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), check, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const json::exception& e) {
    throw FormatError(fmt::format("{}: not Triton metadata: malformed JSON: {}", where, triton_json_message(e)));
  }
}

// A non-negative integer field of at most `max` (the width lrrt keeps it
// in, or the range the field can take): a FormatError naming `shown` (the
// field as a path: "target/warp_size") otherwise.
uint64_t triton_uint_value(const json& v, const std::string& shown, const std::string& where, uint64_t max,
                           const char* range) {
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
    throw FormatError(fmt::format("Triton metadata {}: field \"{}\" is {}, expected a non-negative integer", where, shown,
                                  triton_describe_value(v)));
  const uint64_t n = v.get<uint64_t>();
  if (n > max)
    throw FormatError(fmt::format("Triton metadata {}: field \"{}\" is {}, {}", where, shown, n,
                                  range ? std::string(range) : fmt::format("more than {}", max)));
  return n;
}

uint64_t triton_uint(const json& j, const char* field, const std::string& shown, const std::string& where, uint64_t fallback,
                     bool required, uint64_t max, const char* range = nullptr) {
  auto it = j.find(field);
  if (it == j.end() || it->is_null()) {
    if (required) throw FormatError(fmt::format("Triton metadata {}: missing field \"{}\"", where, shown));
    return fallback;
  }
  return triton_uint_value(*it, shown, where, max, range);
}

constexpr const char* kTriton32Bits = "more than 4294967295 (lrrt keeps it in 32 bits, as the launch does)";

uint32_t triton_uint32(const json& j, const char* field, const std::string& shown, const std::string& where, uint32_t fallback,
                       bool required) {
  return static_cast<uint32_t>(triton_uint(j, field, shown, where, fallback, required, UINT32_MAX, kTriton32Bits));
}

bool triton_bool(const json& j, const char* field, const std::string& where) {
  auto it = j.find(field);
  if (it == j.end() || it->is_null()) return false;
  if (!it->is_boolean())
    throw FormatError(fmt::format("Triton metadata {}: field \"{}\" is {}, expected true or false", where, field,
                                  triton_describe_value(*it)));
  return it->get<bool>();
}

// Each descriptor parameter takes its entry of tensordesc_meta, in order: what
// Triton's launcher encodes the CUtensorMap from (swizzle, element type and
// size, box). No entry (a kernel whose descriptors were not lowered to TMA:
// the launcher then passes a pointer, shapes and strides) and fp4 padding
// are refused: lrrt does not pass those faithfully.
void triton_attach_tensordesc_meta(std::vector<TritonParam>& params, const json* meta, const std::string& where) {
  size_t count = 0;
  for (const auto& p : params) count += p.tensordesc;
  const size_t given = meta ? meta->size() : 0;
  if (count != given)
    throw FormatError(fmt::format("Triton metadata {}: field \"tensordesc_meta\" lists {} tensor descriptor(s), the signature has "
                                  "{}{}",
                                  where, given, count,
                                  given == 0 ? " (descriptors not lowered to TMA: lrrt passes only TMA descriptors)" : ""));
  size_t k = 0;
  for (auto& p : params) {
    if (!p.tensordesc) continue;
    const std::string f = fmt::format("tensordesc_meta/{}", k);
    const json& m = (*meta)[k++];
    if (!m.is_object()) throw FormatError(fmt::format("Triton metadata {}: field \"{}\" is not an object", where, f));
    auto uint_field = [&](const char* name, uint64_t max) {
      auto it = m.find(name);
      if (it == m.end() || !it->is_number_unsigned() || it->get<uint64_t>() > max)
        throw FormatError(fmt::format("Triton metadata {}: field \"{}/{}\" is missing or not an integer 0 to {}", where, f, name, max));
      return static_cast<uint32_t>(it->get<uint64_t>());
    };
    p.tma_swizzle = uint_field("swizzle", 3);
    p.tma_elem_size = uint_field("elem_size", 8);
    // The device numbering of the element type differs from the host's
    // (CUtensorMapDataType) in three places, as Triton's launcher maps them.
    const uint32_t device_type = uint_field("elem_type", 15);
    p.tma_elem_type = device_type == 8 ? 10 : device_type == 9 ? 8 : device_type == 10 ? 9 : device_type;
    if (auto fp4 = m.find("fp4_padded"); fp4 != m.end() && !(fp4->is_boolean() && !fp4->get<bool>()))
      throw FormatError(fmt::format("Triton metadata {}: field \"{}/fp4_padded\" is set: lrrt has no fp4 tensor maps", where, f));
    auto box = m.find("block_size");
    if (box == m.end() || !box->is_array() || box->size() != p.block_shape.size())
      throw FormatError(fmt::format("Triton metadata {}: field \"{}/block_size\" is not an array of {} sizes", where, f,
                                    p.block_shape.size()));
    for (size_t d = 0; d < box->size(); ++d) {
      const json& b = (*box)[d];
      if (!b.is_number_unsigned() || b.get<uint64_t>() == 0 || b.get<uint64_t>() > 256)
        throw FormatError(fmt::format("Triton metadata {}: field \"{}/block_size/{}\" is not 1 to 256", where, f, d));
      p.tma_box.push_back(static_cast<uint32_t>(b.get<uint64_t>()));
    }
  }
}

}  // namespace

uint64_t TritonEntry::scratch_bytes(const TritonScratch& s, uint64_t programs) const {
  if (s.size == 0) return 0;
  const uint64_t factor = version_minor <= 3 ? 1 : num_ctas;
  if (programs > UINT64_MAX / factor || programs * factor > UINT64_MAX / s.size)
    throw FormatError(fmt::format("Triton entry {}: {} programs x {} bytes of {} per program do not fit 64 bits", name, programs,
                                  factor * s.size, s.name));
  return programs * factor * s.size;
}

std::string TritonEntry::signature() const {
  std::string s;
  for (const auto& p : params) s += (s.empty() ? "" : ", ") + p.aot();
  return s;
}

TritonEntry parse_triton_entry(std::string_view metadata_json, std::string_view ir_text, const std::string& where) {
  const json j = triton_parse_metadata(metadata_json, where);
  if (!triton_looks_like_metadata(j))
    throw FormatError(fmt::format("{}: not Triton metadata (a JSON object with \"name\", \"num_warps\", \"target\")", where));
  TritonEntry e;
  const json& name = j["name"];
  if (!name.is_string())
    throw FormatError(fmt::format("Triton metadata {}: field \"name\" is {}, expected a string", where, triton_describe_value(name)));
  e.name = name.get<std::string>();
  // The name is the binary's file name (<name>.cubin) and the IR's function.
  if (const std::string why = triton_name_problem(e.name); !why.empty())
    throw FormatError(fmt::format("Triton metadata {}: field \"name\" (\"{}\") {}: not a kernel name", where,
                                  triton_printable(e.name), why));
  auto v = j.find("triton_version");
  if (v == j.end() || !v->is_string())
    throw FormatError(fmt::format("Triton metadata {}: no \"triton_version\" (Triton before 3.3?): unknown metadata version; "
                                  "lrrt reads the metadata of Triton 3.3 to 3.6",
                                  where));
  e.triton_version = v->get<std::string>();
  unsigned major = 0, minor = 0;
  if (std::sscanf(e.triton_version.c_str(), "%u.%u", &major, &minor) != 2 || major != 3 || minor < 3 || minor > 6)
    throw FormatError(fmt::format("Triton metadata {}: field \"triton_version\" is \"{}\": unknown metadata version; lrrt reads "
                                  "the metadata of Triton 3.3 to 3.6 (docs/triton.md)",
                                  where, triton_printable(e.triton_version)));
  e.version_minor = minor;
  const json& t = j["target"];
  if (!t.contains("backend") || !t["backend"].is_string())
    throw FormatError(fmt::format("Triton metadata {}: field \"target\" has no \"backend\"", where));
  e.backend = t["backend"].get<std::string>();
  if (e.backend == "cuda") {
    e.lrrt_backend = "cuda";
    const uint64_t sm = triton_uint(t, "arch", "target/arch", where, 0, true, 9999, "not an SM number (such as 90)");
    if (sm == 0) throw FormatError(fmt::format("Triton metadata {}: field \"target/arch\" is 0, not an SM number (such as 90)", where));
    e.arch = fmt::format("sm_{}", sm);
  } else if (e.backend == "hip") {
    e.lrrt_backend = "hsa";
    const auto arch = t.find("arch");
    const bool gfx = arch != t.end() && arch->is_string() && arch->get_ref<const std::string&>().rfind("gfx", 0) == 0 &&
                     arch->get_ref<const std::string&>().size() <= 64 &&
                     std::all_of(arch->get_ref<const std::string&>().begin(), arch->get_ref<const std::string&>().end(),
                                 [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == ':' || c == '+' || c == '-' || c == '_'; });
    if (!gfx)
      throw FormatError(fmt::format("Triton metadata {}: field \"target/arch\" is {}, not a gfx name", where,
                                    arch == t.end() ? std::string("missing") : triton_describe_value(*arch)));
    e.arch = arch->get<std::string>();
  } else {
    throw FormatError(fmt::format("Triton metadata {}: field \"target/backend\" is \"{}\": lrrt runs Triton's \"cuda\" and \"hip\" "
                                  "targets",
                                  where, triton_printable(e.backend)));
  }
  // Every launch number is range-checked before it is narrowed: 2^32 + 4
  // warps must not read as 4.
  const uint64_t top_warp_size = triton_uint(j, "warp_size", "warp_size", where, 32, false, UINT64_MAX);
  const uint64_t warp_size = triton_uint(t, "warp_size", "target/warp_size", where, top_warp_size, false, UINT64_MAX);
  if (warp_size != 32 && warp_size != 64)
    throw FormatError(fmt::format("Triton metadata {}: field \"target/warp_size\" is {}, expected 32 or 64", where, warp_size));
  e.warp_size = static_cast<uint32_t>(warp_size);
  e.num_warps = static_cast<uint32_t>(triton_uint(j, "num_warps", "num_warps", where, 4, true, 32, "expected 1 to 32"));
  if (e.num_warps == 0)
    throw FormatError(fmt::format("Triton metadata {}: field \"num_warps\" is 0, expected 1 to 32", where));
  e.num_ctas = triton_uint32(j, "num_ctas", "num_ctas", where, 1, false);
  e.shared = triton_uint32(j, "shared", "shared", where, 0, true);
  if (auto c = j.find("cluster_dims"); c != j.end() && !c->is_null()) {
    if (!c->is_array() || c->size() > 3)
      throw FormatError(fmt::format("Triton metadata {}: field \"cluster_dims\" is {}, expected 1 to 3 integers", where,
                                    triton_describe_value(*c)));
    for (size_t d = 0; d < c->size(); ++d) {
      const std::string shown = fmt::format("cluster_dims/{}", d);
      e.cluster_dims[d] = static_cast<uint32_t>(triton_uint_value((*c)[d], shown, where, UINT32_MAX, kTriton32Bits));
    }
  }
  e.launch_pdl = triton_bool(j, "launch_pdl", where);
  e.launch_cooperative_grid = triton_bool(j, "launch_cooperative_grid", where);
  if (e.launch_cooperative_grid)
    throw FormatError(fmt::format("Triton metadata {}: field \"launch_cooperative_grid\" is true: lrrt has no cooperative "
                                  "launch, so it cannot launch this kernel faithfully",
                                  where));
  if (e.num_ctas != 1 || e.cluster_dims != std::array<uint32_t, 3>{1, 1, 1})
    throw FormatError(fmt::format("Triton metadata {}: field \"{}\" asks for thread-block clusters (num_ctas {}, cluster_dims "
                                  "[{}, {}, {}]): lrrt has no cluster launch",
                                  where, e.num_ctas != 1 ? "num_ctas" : "cluster_dims", e.num_ctas, e.cluster_dims[0],
                                  e.cluster_dims[1], e.cluster_dims[2]));
  const json* tensordesc_meta = nullptr;
  if (auto td = j.find("tensordesc_meta"); td != j.end() && !td->is_null()) {
    if (!td->is_array())
      throw FormatError(fmt::format("Triton metadata {}: field \"tensordesc_meta\" is {}, expected an array", where,
                                    triton_describe_value(*td)));
    tensordesc_meta = &*td;
  }
  // Hidden parameters, in the launcher's order (docs/triton.md): the global
  // scratch pointer (3.3+; the AMD launcher passes null), then the profile
  // scratch pointer (3.5+). A size is per program (per CTA) and at most
  // 2^32 - 1 bytes; an alignment a power of two lrrt's buffers meet (256).
  auto scratch = [&](const char* name, const char* size_field, const char* align_field, bool required) {
    TritonScratch s{name, triton_uint(j, size_field, size_field, where, 0, required, UINT32_MAX,
                                      "more than 4294967295 bytes per program"),
                    triton_uint(j, align_field, align_field, where, 1, false, 256,
                                "more than 256 (lrrt's buffers are 256-byte aligned)")};
    if (s.align == 0 || (s.align & (s.align - 1)) != 0)
      throw FormatError(fmt::format("Triton metadata {}: field \"{}\" is {}, expected a power of two", where, align_field, s.align));
    return s;
  };
  const TritonScratch g = scratch("global_scratch", "global_scratch_size", "global_scratch_align", false);
  if (e.backend == "hip" && g.size)
    throw FormatError(fmt::format("Triton metadata {}: field \"global_scratch_size\" is {} on an AMD target, whose launcher "
                                  "passes a null global scratch: lrrt will not guess",
                                  where, g.size));
  e.hidden.push_back(g);
  if (minor >= 5) {
    if (!j.contains("profile_scratch_size"))
      throw FormatError(fmt::format("Triton metadata {}: missing field \"profile_scratch_size\" (Triton {} writes it)", where,
                                    e.triton_version));
    e.hidden.push_back(scratch("profile_scratch", "profile_scratch_size", "profile_scratch_align", true));
  }
  e.params = parse_triton_signature(ir_text, e.name, where);
  triton_attach_tensordesc_meta(e.params, tensordesc_meta, where);
  e.access = analyze_triton_access(ir_text, e.name);
  return e;
}

bool is_triton_entry(const fs::path& path) {
  std::error_code ec;
  fs::path json_path = path;
  if (fs::is_directory(path, ec)) {
    bool found = false;
    for (const auto& f : fs::directory_iterator(path, ec)) {
      const std::string n = f.path().filename().string();
      if (f.path().extension() == ".json" && n.rfind("__grp__", 0) != 0) {
        json_path = f.path();
        found = true;
        break;
      }
    }
    if (!found) return false;
  } else if (path.extension() != ".json") {
    return false;
  }
  if (!fs::is_regular_file(json_path, ec) || fs::file_size(json_path, ec) > kTritonMaxTextBytes) return false;
  // Only the top level and "target" are kept (the parser is iterative), so
  // a hostile file nested 10^6 levels deep is read in constant memory; one
  // nested deeper than Triton's metadata is taken as an entry, and
  // read_triton_entry refuses it naming the file.
  std::ifstream in(json_path, std::ios::binary);
  bool too_deep = false;
  json::parser_callback_t shallow = [&](int depth, json::parse_event_t event, json&) {
    if (event != json::parse_event_t::object_start && event != json::parse_event_t::array_start) return true;
    if (depth >= kTritonMaxJsonDepth) {
      too_deep = true;
      throw std::length_error("nested too deep");
    }
    return depth <= 1;
  };
  try {
    const json j = json::parse(in, shallow, /*allow_exceptions=*/false);
    return !j.is_discarded() && triton_looks_like_metadata(j);
  } catch (const std::length_error&) {
    return too_deep;
  }
}

TritonEntry read_triton_entry(const fs::path& path) {
  std::error_code ec;
  fs::path json_path;
  if (fs::is_directory(path, ec)) {
    std::vector<fs::path> candidates;
    for (const auto& f : fs::directory_iterator(path, ec))
      if (f.path().extension() == ".json" && f.path().filename().string().rfind("__grp__", 0) != 0) candidates.push_back(f.path());
    if (candidates.empty())
      throw FormatError(fmt::format("Triton entry {}: no <name>.json metadata in the folder", path.string()));
    if (candidates.size() > 1)
      throw FormatError(fmt::format("Triton entry {}: {} metadata files in the folder; name the <name>.json", path.string(),
                                    candidates.size()));
    json_path = candidates.front();
  } else {
    json_path = path;
  }
  const std::string text = triton_read_text(json_path);
  const fs::path folder = json_path.parent_path();
  const std::string stem = json_path.stem().string();
  // The IR after Triton's passes (.ttir) is the kernel's real signature; the
  // .source (3.4+) is the IR before them.
  fs::path ir_path;
  for (const char* ext : {".ttir", ".source"})
    if (fs::is_regular_file(folder / (stem + ext), ec)) {
      ir_path = folder / (stem + ext);
      break;
    }
  if (ir_path.empty())
    throw FormatError(fmt::format("Triton entry {}: no {}.ttir or {}.source next to it, so no signature (was it cached with "
                                  "TRITON_STORE_BINARY_ONLY=1?)",
                                  json_path.string(), stem, stem));
  TritonEntry e = parse_triton_entry(text, triton_read_text(ir_path), json_path.string());
  e.metadata_path = json_path;
  e.ir_path = ir_path;
  const fs::path binary = folder / (e.name + (e.backend == "cuda" ? ".cubin" : ".hsaco"));
  if (!fs::is_regular_file(binary, ec))
    throw FormatError(fmt::format("Triton entry {}: missing binary {} (the {} target's code object)", json_path.string(),
                                  binary.string(), e.arch));
  e.binary_path = binary;
  return e;
}

namespace {
// A pointer or descriptor parameter's access: the IR analysis, else
// read-write by default (also when the analysis did not track it).
void triton_access_json(const TritonAccess& a, size_t index, json& param) {
  const bool known = a.analysed && index < a.params.size() && a.params[index].pointer;
  param["access"] = access_mode_name(known ? a.params[index].mode() : AccessMode::ReadWrite);
  param["access_source"] = known ? "ttir" : "default";
  if (known && !a.params[index].reason.empty()) param["access_reason"] = a.params[index].reason;
  if (!a.analysed) param["access_failure"] = a.failure;
}
}  // namespace

std::string triton_entry_json(const TritonEntry& e) {
  json j;
  j["name"] = e.name;
  j["triton_version"] = e.triton_version;
  j["backend"] = e.lrrt_backend;
  j["triton_backend"] = e.backend;
  j["arch"] = e.arch;
  j["warp_size"] = e.warp_size;
  j["num_warps"] = e.num_warps;
  j["num_ctas"] = e.num_ctas;
  j["block"] = e.block();
  j["shared"] = e.shared;
  j["launch_pdl"] = e.launch_pdl;
  j["binary"] = e.binary_path.string();
  j["metadata"] = e.metadata_path.string();
  j["signature"] = e.signature();
  j["params"] = json::array();
  for (size_t i = 0; i < e.params.size(); ++i) {
    const auto& p = e.params[i];
    json param{{"name", p.name}, {"type", p.type}, {"pointer", p.pointer}, {"divisibility", p.divisibility},
               {"size", p.size()}, {"aot", p.aot()}};
    // A descriptor parameter's access is of the tensor it describes.
    if (p.pointer || p.tensordesc) triton_access_json(e.access, i, param);
    if (p.tensordesc)
      param["tensordesc"] = {{"block_shape", p.block_shape}, {"swizzle", p.tma_swizzle}, {"elem_size", p.tma_elem_size},
                             {"elem_type", p.tma_elem_type}, {"box", p.tma_box}};
    if (p.desc_of >= 0) param["part_of"] = p.desc_of;
    j["params"].push_back(std::move(param));
  }
  j["hidden"] = json::array();
  for (const auto& h : e.hidden)
    j["hidden"].push_back({{"name", h.name}, {"size", h.size}, {"align", h.align},
                           {"per_program_factor", e.version_minor <= 3 ? 1 : e.num_ctas}});
  return j.dump();
}

}  // namespace lrrt::formats

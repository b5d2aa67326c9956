// Triton cache entries (include/lrrt/formats/triton.hpp, docs/triton.md).
#include "lrrt/formats/triton.hpp"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>

namespace lrrt::formats {

namespace fs = std::filesystem;
using json = nlohmann::json;

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

uint64_t triton_uint(const json& j, const char* field, const std::string& where, uint64_t fallback, bool required) {
  auto it = j.find(field);
  if (it == j.end() || it->is_null()) {
    if (required) throw FormatError(fmt::format("Triton metadata {}: missing field \"{}\"", where, field));
    return fallback;
  }
  if (!it->is_number_unsigned() && !(it->is_number_integer() && it->get<int64_t>() >= 0))
    throw FormatError(fmt::format("Triton metadata {}: field \"{}\" is {}, expected a non-negative integer", where, field,
                                  it->dump()));
  return it->get<uint64_t>();
}

bool triton_bool(const json& j, const char* field, const std::string& where) {
  auto it = j.find(field);
  if (it == j.end() || it->is_null()) return false;
  if (!it->is_boolean())
    throw FormatError(fmt::format("Triton metadata {}: field \"{}\" is {}, expected true or false", where, field, it->dump()));
  return it->get<bool>();
}

// Splits at depth-0 commas; (), <>, {}, [] and quoted text nest.
std::vector<std::string_view> triton_split_params(std::string_view s) {
  std::vector<std::string_view> out;
  int depth = 0;
  bool quoted = false;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quoted) {
      if (c == '\\') ++i;
      else if (c == '"') quoted = false;
      continue;
    }
    if (c == '"') quoted = true;
    else if (c == '(' || c == '<' || c == '{' || c == '[') ++depth;
    else if (c == ')' || c == '>' || c == '}' || c == ']') --depth;
    else if (c == ',' && depth == 0) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  if (start < s.size()) out.push_back(s.substr(start));
  return out;
}

std::string_view triton_trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool triton_known_scalar(std::string_view t) {
  for (std::string_view k : {"i1", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"})
    if (t == k) return true;
  return false;
}

TritonParam triton_parse_param(std::string_view text, size_t index, const std::string& kernel, const std::string& where) {
  text = triton_trim(text);
  TritonParam p;
  const std::string what = fmt::format("{}: parameter {} of @{}", where, index, kernel);
  if (text.empty() || text.front() != '%') throw FormatError(fmt::format("{}: cannot read \"{}\"", what, std::string(text.substr(0, 80))));
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) throw FormatError(fmt::format("{}: no type in \"{}\"", what, std::string(text.substr(0, 80))));
  p.name = std::string(triton_trim(text.substr(1, colon - 1)));
  std::string_view rest = triton_trim(text.substr(colon + 1));
  // The type runs to the first depth-0 space or '{' (attributes) or "loc(".
  size_t end = 0;
  int depth = 0;
  for (; end < rest.size(); ++end) {
    const char c = rest[end];
    if (c == '<' || c == '(') ++depth;
    else if (c == '>' || c == ')') --depth;
    else if (depth == 0 && (c == ' ' || c == '{')) break;
  }
  p.ir_type = std::string(rest.substr(0, end));
  std::string_view tail = rest.substr(end);
  if (p.ir_type.rfind("!tt.tensordesc", 0) == 0)
    throw FormatError(fmt::format("{} ({}) is a tensor descriptor ({}): TMA arguments are not supported by lrrt", what, p.name,
                                  p.ir_type));
  if (p.ir_type.rfind("!tt.ptr<", 0) == 0) {
    p.pointer = true;
    std::string_view inner = std::string_view(p.ir_type).substr(8);
    if (!inner.empty() && inner.back() == '>') inner.remove_suffix(1);
    p.type = std::string(triton_trim(inner.substr(0, inner.find(','))));
    if (p.type.rfind("tensor<", 0) == 0 || p.type.rfind("!tt.ptr", 0) == 0)
      throw FormatError(fmt::format("{} ({}): pointer type {} is not a pointer to scalars", what, p.name, p.ir_type));
  } else if (triton_known_scalar(p.ir_type)) {
    p.type = p.ir_type;
  } else {
    throw FormatError(fmt::format("{} ({}): type {} is not one lrrt passes (pointers, i1-i64, f16, bf16, f32, f64)", what,
                                  p.name, p.ir_type));
  }
  if (const size_t d = tail.find("tt.divisibility"); d != std::string_view::npos) {
    std::string_view v = tail.substr(d + 15);
    const size_t eq = v.find('=');
    if (eq != std::string_view::npos) {
      v = triton_trim(v.substr(eq + 1));
      uint32_t n = 0;
      size_t k = 0;
      for (; k < v.size() && std::isdigit(static_cast<unsigned char>(v[k])); ++k) n = n * 10 + uint32_t(v[k] - '0');
      if (k == 0) throw FormatError(fmt::format("{} ({}): unreadable tt.divisibility", what, p.name));
      p.divisibility = n;
    }
  }
  if (const size_t l = tail.find("loc(\""); l != std::string_view::npos) {
    const std::string_view v = tail.substr(l + 5);
    const size_t q = v.find('"');
    if (q != std::string_view::npos && q > 0) p.name = std::string(v.substr(0, q));
  }
  return p;
}

std::string triton_aot_type(std::string_view t) {
  if (t == "f16") return "fp16";
  if (t == "bf16") return "bf16";
  if (t == "f32") return "fp32";
  if (t == "f64") return "fp64";
  return std::string(t);
}

}  // namespace

uint32_t TritonParam::size() const {
  if (pointer) return 8;
  if (type == "i1" || type == "i8") return type == "i1" ? 1 : 1;
  if (type == "i16" || type == "f16" || type == "bf16") return 2;
  if (type == "i32" || type == "f32") return 4;
  return 8;
}

std::string TritonParam::aot() const {
  std::string s = (pointer ? "*" : "") + triton_aot_type(type);
  if (divisibility) s += fmt::format(":{}", divisibility);
  return s;
}

uint64_t TritonEntry::scratch_bytes(const TritonScratch& s, uint64_t programs) const {
  if (s.size == 0) return 0;
  return programs * (version_minor <= 3 ? 1 : num_ctas) * s.size;
}

std::string TritonEntry::signature() const {
  std::string s;
  for (const auto& p : params) s += (s.empty() ? "" : ", ") + p.aot();
  return s;
}

std::vector<TritonParam> parse_triton_signature(std::string_view ir, const std::string& kernel, const std::string& where) {
  const std::string head = "tt.func public @" + kernel + "(";
  size_t at = ir.find(head);
  if (at == std::string_view::npos) {
    const std::string quoted = "tt.func public @\"" + kernel + "\"(";
    at = ir.find(quoted);
    if (at == std::string_view::npos)
      throw FormatError(fmt::format("{}: no \"tt.func public @{}(...)\": not the IR of Triton kernel {}", where, kernel, kernel));
    at += quoted.size();
  } else {
    at += head.size();
  }
  int depth = 1;
  bool quoted = false;
  size_t i = at;
  for (; i < ir.size() && depth > 0; ++i) {
    const char c = ir[i];
    if (quoted) {
      if (c == '\\') ++i;
      else if (c == '"') quoted = false;
    } else if (c == '"') quoted = true;
    else if (c == '(') ++depth;
    else if (c == ')') --depth;
  }
  if (depth != 0) throw FormatError(fmt::format("{}: the signature of @{} is not closed", where, kernel));
  const std::string_view params = ir.substr(at, i - 1 - at);
  std::vector<TritonParam> out;
  if (triton_trim(params).empty()) return out;
  for (auto p : triton_split_params(params)) out.push_back(triton_parse_param(p, out.size(), kernel, where));
  return out;
}

TritonEntry parse_triton_entry(std::string_view metadata_json, std::string_view ir_text, const std::string& where) {
  json j = json::parse(metadata_json.begin(), metadata_json.end(), nullptr, false);
  if (j.is_discarded() || !triton_looks_like_metadata(j))
    throw FormatError(fmt::format("{}: not Triton metadata (a JSON object with \"name\", \"num_warps\", \"target\")", where));
  TritonEntry e;
  if (!j["name"].is_string()) throw FormatError(fmt::format("Triton metadata {}: field \"name\" is not a string", where));
  e.name = j["name"].get<std::string>();
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
                                  where, e.triton_version));
  e.version_minor = minor;
  const json& t = j["target"];
  if (!t.contains("backend") || !t["backend"].is_string())
    throw FormatError(fmt::format("Triton metadata {}: field \"target\" has no \"backend\"", where));
  e.backend = t["backend"].get<std::string>();
  if (e.backend == "cuda") {
    e.lrrt_backend = "cuda";
    if (!t.contains("arch") || !t["arch"].is_number_unsigned())
      throw FormatError(fmt::format("Triton metadata {}: field \"target/arch\" is not an SM number", where));
    e.arch = fmt::format("sm_{}", t["arch"].get<uint32_t>());
  } else if (e.backend == "hip") {
    e.lrrt_backend = "hsa";
    if (!t.contains("arch") || !t["arch"].is_string())
      throw FormatError(fmt::format("Triton metadata {}: field \"target/arch\" is not a gfx name", where));
    e.arch = t["arch"].get<std::string>();
  } else {
    throw FormatError(fmt::format("Triton metadata {}: field \"target/backend\" is \"{}\": lrrt runs Triton's \"cuda\" and \"hip\" "
                                  "targets",
                                  where, e.backend));
  }
  e.warp_size = static_cast<uint32_t>(triton_uint(t, "warp_size", where + " target", j.value("warp_size", 32u), false));
  if (e.warp_size != 32 && e.warp_size != 64)
    throw FormatError(fmt::format("Triton metadata {}: field \"target/warp_size\" is {}, expected 32 or 64", where, e.warp_size));
  e.num_warps = static_cast<uint32_t>(triton_uint(j, "num_warps", where, 4, true));
  if (e.num_warps == 0 || e.num_warps > 32)
    throw FormatError(fmt::format("Triton metadata {}: field \"num_warps\" is {}, expected 1 to 32", where, e.num_warps));
  e.num_ctas = static_cast<uint32_t>(triton_uint(j, "num_ctas", where, 1, false));
  e.shared = static_cast<uint32_t>(triton_uint(j, "shared", where, 0, true));
  if (auto c = j.find("cluster_dims"); c != j.end() && c->is_array()) {
    for (size_t d = 0; d < 3 && d < c->size(); ++d) {
      if (!(*c)[d].is_number_unsigned())
        throw FormatError(fmt::format("Triton metadata {}: field \"cluster_dims\" is {}, expected 3 integers", where, c->dump()));
      e.cluster_dims[d] = (*c)[d].get<uint32_t>();
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
  if (auto td = j.find("tensordesc_meta"); td != j.end() && td->is_array() && !td->empty())
    throw FormatError(fmt::format("Triton metadata {}: field \"tensordesc_meta\" lists {} tensor descriptor(s): TMA arguments "
                                  "are not supported by lrrt",
                                  where, td->size()));
  // Hidden parameters, in the launcher's order (docs/triton.md): the global
  // scratch pointer (3.3+; the AMD launcher passes null), then the profile
  // scratch pointer (3.5+).
  TritonScratch g{"global_scratch", triton_uint(j, "global_scratch_size", where, 0, false),
                  triton_uint(j, "global_scratch_align", where, 1, false)};
  if (e.backend == "hip" && g.size)
    throw FormatError(fmt::format("Triton metadata {}: field \"global_scratch_size\" is {} on an AMD target, whose launcher "
                                  "passes a null global scratch: lrrt will not guess",
                                  where, g.size));
  e.hidden.push_back(g);
  if (minor >= 5) {
    if (!j.contains("profile_scratch_size"))
      throw FormatError(fmt::format("Triton metadata {}: missing field \"profile_scratch_size\" (Triton {} writes it)", where,
                                    e.triton_version));
    e.hidden.push_back(TritonScratch{"profile_scratch", triton_uint(j, "profile_scratch_size", where, 0, true),
                                     triton_uint(j, "profile_scratch_align", where, 1, false)});
  }
  e.params = parse_triton_signature(ir_text, e.name, where);
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
  std::ifstream in(json_path, std::ios::binary);
  const json j = json::parse(in, nullptr, false);
  return !j.is_discarded() && triton_looks_like_metadata(j);
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
// A pointer parameter's access: the IR analysis, else read-write by default.
void triton_access_json(const TritonAccess& a, size_t index, json& param) {
  const bool known = a.analysed && index < a.params.size();
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
    if (p.pointer) triton_access_json(e.access, i, param);
    j["params"].push_back(std::move(param));
  }
  j["hidden"] = json::array();
  for (const auto& h : e.hidden)
    j["hidden"].push_back({{"name", h.name}, {"size", h.size}, {"align", h.align},
                           {"per_program_factor", e.version_minor <= 3 ? 1 : e.num_ctas}});
  return j.dump();
}

}  // namespace lrrt::formats

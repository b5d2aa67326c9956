// The manifest's top level: parse (dispatching to the section parsers in
// manifest_*.cpp), load from a file, and resolve the code object's path.
#include "lrrt/bundle/manifest.hpp"

#include <fmt/format.h>

#include "lrrt/bundle/json_input.hpp"
#include "lrrt/bundle/text.hpp"
#include "manifest_parse.hpp"

namespace lrrt::bundle {

using nlohmann::json;
namespace fs = std::filesystem;

namespace manifest_parse {

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

}  // namespace manifest_parse

Manifest parse_manifest(const json& doc, const fs::path& base_dir) {
  using namespace manifest_parse;
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
    if (json entry = triton_entry_for(m.code_object, m.base_dir, "/code_object"); !entry.is_null()) {
      parse_triton_kernel(m, o, entry);
    } else {
    if (auto* a = o.opt("args"); a && a->is_object()) throw ManifestError("/args", not_a_triton_entry(m.code_object, m.base_dir));
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

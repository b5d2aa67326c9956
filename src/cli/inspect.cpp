// lrrt inspect FILE: what a code object holds, for every format lrrt loads.
//   hsaco               target, code object version, kernels with every
//                       argument (hidden ones included) from the metadata note
//   clang offload bundle  one such object per AMDGPU target
//   host .so            kernels and argument layout through the host ABI
//   cubin/fatbin/PTX    through the cuda backend's parser when it is built
#include <dlfcn.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "code_object_format.hpp"
#include "lrrt/host_kernel_abi.h"
#include "tool/atomic_file.hpp"
#include "tool/errors.hpp"
#if defined(LRRT_HAVE_AMDGPU_CODE_OBJECTS)
#include "hsa/code_object.hpp"
#include "hsa/offload_bundle.hpp"
#endif
#if defined(LRRT_HAVE_CUDA_INSPECT)
#include "cuda/cuda_inspect.hpp"
#endif

namespace lrrt::cli {
namespace {

using json = nlohmann::json;

#if defined(LRRT_HAVE_AMDGPU_CODE_OBJECTS)
json kernel_json(const rt::KernelInfo& k) {
  json args = json::array();
  for (const auto& a : k.args) {
    json j{{"offset", a.offset}, {"size", a.size}, {"kind", a.value_kind}};
    if (!a.name.empty()) j["name"] = a.name;
    if (!a.type_name.empty()) j["type_name"] = a.type_name;
    if (!a.address_space.empty()) j["address_space"] = a.address_space;
    args.push_back(std::move(j));
  }
  return json{{"name", k.name},
              {"symbol", k.symbol},
              {"kernarg_size", k.kernarg_size},
              {"kernarg_align", k.kernarg_align},
              {"explicit_kernarg_size", k.explicit_kernarg_size()},
              {"group_segment_size", k.group_segment_size},
              {"private_segment_size", k.private_segment_size},
              {"wavefront_size", k.wavefront_size},
              {"sgpr_count", k.sgpr_count},
              {"vgpr_count", k.vgpr_count},
              {"max_flat_workgroup_size", k.max_workgroup_size},
              {"args", std::move(args)}};
}

json hsaco_json(std::span<const std::byte> image) {
  auto co = rt::amdgpu::parse_code_object(image);
  json kernels = json::array();
  for (const auto& k : co.kernels) kernels.push_back(kernel_json(k));
  return json{{"format", "hsaco"},
              {"targets", json::array({co.target})},
              {"code_object_version", co.code_object_version},
              {"kernels", std::move(kernels)}};
}

json bundle_json(std::span<const std::byte> image) {
  auto entries = rt::amdgpu::parse_offload_bundle(image);
  json targets = json::array(), objects = json::array(), ids = json::array();
  for (const auto& e : entries) {
    ids.push_back(e.id);
    if (!e.is_amdgpu()) continue;
    targets.push_back(e.triple + "--" + e.target);
    json o = hsaco_json(e.image);
    o["bundle_entry_id"] = e.id;
    objects.push_back(std::move(o));
  }
  return json{{"format", "clang-offload-bundle"},
              {"targets", std::move(targets)},
              {"entries", std::move(ids)},
              {"objects", std::move(objects)}};
}
#endif

json host_json(const std::string& path) {
  // Loading runs the library's constructors: fine for our own kernels.
  void* h = dlopen(std::filesystem::absolute(path).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) throw tool::InputError(fmt::format("{}: cannot load the host code object: {}", path, dlerror()));
  auto query = reinterpret_cast<lrrt_host_library_query_fn_t>(dlsym(h, LRRT_HOST_LIBRARY_QUERY_SYMBOL));
  const lrrt_host_library_t* lib = query ? query(LRRT_HOST_ABI_VERSION) : nullptr;
  if (!lib)
    throw tool::InputError(fmt::format("{}: a shared object without {} (ABI version {}): not an lrrt host kernel library",
                                       path, LRRT_HOST_LIBRARY_QUERY_SYMBOL, LRRT_HOST_ABI_VERSION));
  json kernels = json::array();
  for (uint32_t i = 0; i < lib->kernel_count; ++i) {
    const auto& k = lib->kernels[i];
    json args = json::array();
    for (uint32_t a = 0; a < k.arg_count; ++a) {
      const auto& arg = k.args[a];
      json j{{"offset", arg.offset},
             {"size", arg.size},
             {"kind", arg.kind == LRRT_HOST_ARG_POINTER ? "global_buffer" : "by_value"}};
      if (arg.name) j["name"] = arg.name;
      if (arg.type_name) j["type_name"] = arg.type_name;
      args.push_back(std::move(j));
    }
    kernels.push_back(json{{"name", k.name},
                           {"symbol", k.name},
                           {"kernarg_size", k.kernarg_size},
                           {"kernarg_align", k.kernarg_align},
                           {"group_segment_size", k.static_shared_bytes},
                           {"private_segment_size", 0},
                           {"args", std::move(args)}});
  }
#if defined(__x86_64__)
  const char* arch = "x86_64";
#elif defined(__aarch64__)
  const char* arch = "aarch64";
#else
  const char* arch = "host";
#endif
  return json{{"format", "host-shared-object"},
              {"targets", json::array({arch})},
              {"host_abi_version", lib->abi_version},
              {"kernels", std::move(kernels)}};
}

json inspect_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw tool::InputError(fmt::format("{}: cannot open", path));
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), {});
  auto image = std::as_bytes(std::span(bytes));
  auto format = rt::detect_code_object_format(image);
  json doc;
  try {
    switch (format) {
      case rt::CodeObjectFormat::AmdgpuElf:
      case rt::CodeObjectFormat::ClangOffloadBundle:
#if defined(LRRT_HAVE_AMDGPU_CODE_OBJECTS)
        doc = format == rt::CodeObjectFormat::AmdgpuElf ? hsaco_json(image) : bundle_json(image);
        break;
#else
        throw tool::InputError(fmt::format("{}: {}; this lrrt was built without msgpack, so it cannot read AMDGPU metadata",
                                           path, rt::describe_code_object(image)));
#endif
      case rt::CodeObjectFormat::CudaCubin:
      case rt::CodeObjectFormat::CudaFatbin:
      case rt::CodeObjectFormat::CudaPtx:
#if defined(LRRT_HAVE_CUDA_INSPECT)
        doc = rt::inspect_cuda_image(image);
        break;
#else
        throw tool::InputError(fmt::format("{}: {}; cuda images: inspect needs the cuda backend build", path,
                                           rt::describe_code_object(image)));
#endif
      case rt::CodeObjectFormat::HostSharedObject:
        doc = host_json(path);
        break;
      default:
        throw tool::InputError(fmt::format("{}: {}; lrrt loads HSACO, clang offload bundles, cubin, fatbin, PTX and host "
                                           "kernel libraries",
                                           path, rt::describe_code_object(image)));
    }
  } catch (const tool::ToolError&) {
    throw;
  } catch (const std::exception& e) {
    throw tool::InputError(fmt::format("{}: {}", path, e.what()));
  }
  json out{{"lrrt_results", 1}, {"kind", "inspect"}, {"file", path}, {"size", bytes.size()}};
  out.update(doc);
  return out;
}

void table_kernels(const json& o, std::ostringstream& os, const std::string& indent) {
  for (const auto& k : o.value("kernels", json::array())) {
    os << fmt::format("{}kernel {} (symbol {}): kernarg {} bytes, align {}; group segment {} B, private {} B", indent,
                      k.value("name", ""), k.value("symbol", ""), k.value("kernarg_size", 0), k.value("kernarg_align", 0),
                      k.value("group_segment_size", 0), k.value("private_segment_size", 0));
    if (k.contains("wavefront_size"))
      os << fmt::format("; wave{} sgpr {} vgpr {}", k.value("wavefront_size", 0), k.value("sgpr_count", 0),
                        k.value("vgpr_count", 0));
    os << "\n" << fmt::format("{}  {:>6} {:>4}  {:<28} {}\n", indent, "offset", "size", "kind", "name");
    for (const auto& a : k.value("args", json::array()))
      os << fmt::format("{}  {:>6} {:>4}  {:<28} {}\n", indent, a.value("offset", 0), a.value("size", 0),
                        a.value("kind", ""), a.value("name", ""));
  }
}

std::string table(const json& doc) {
  std::ostringstream os;
  std::string targets;
  for (const auto& t : doc.value("targets", json::array()))
    targets += (targets.empty() ? "" : ", ") + (t.is_string() ? t.get<std::string>() : t.dump());
  if (doc.contains("targets") && doc["targets"].is_string()) targets = doc["targets"].get<std::string>();
  os << fmt::format("{}: {} ({} bytes), targets: {}\n", doc.value("file", ""), doc.value("format", ""),
                    doc.value("size", 0), targets.empty() ? "-" : targets);
  if (doc.contains("code_object_version")) os << fmt::format("code object v{}\n", doc.value("code_object_version", 0));
  if (doc.contains("objects")) {
    for (const auto& o : doc["objects"]) {
      os << fmt::format("[{}] code object v{}\n", o.value("bundle_entry_id", ""), o.value("code_object_version", 0));
      table_kernels(o, os, "  ");
    }
  } else if (doc.value("format", "") == "hsaco" || doc.value("format", "") == "host-shared-object") {
    table_kernels(doc, os, "");
  } else {
    os << doc.dump(2) << "\n";  // cuda formats: their own structure
  }
  return os.str();
}

void inspect_command(const std::string& file, const CommonOptions& o) {
  json doc = inspect_file(file);
  if (effective_format(o) != "table") return emit_document(doc, o);
  std::string text = table(doc);
  if (o.output.empty()) std::cout << text << std::flush;
  else tool::write_file_atomic(o.output, text);
}

}  // namespace

void register_inspect(CLI::App& app) {
  auto o = std::make_shared<CommonOptions>();
  auto file = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand("inspect", "Show what a code object holds: targets, kernels, argument layout");
  sub->add_option("file", *file, "HSACO, clang offload bundle, cubin, fatbin, PTX or host kernel library (.so)")
      ->required();
  add_common_options(*sub, *o, kOptFormat | kOptOutput | kOptQuiet);
  sub->footer(R"(Examples:
  lrrt inspect build/kernels/saxpy.gfx1100.hsaco
  lrrt inspect build/kernels/saxpy.bundle.hsaco --format json | jq '.objects[].targets'
  lrrt inspect build/kernels/saxpy.host.so)");
  sub->callback([o, file] { inspect_command(*file, *o); });
}

}  // namespace lrrt::cli

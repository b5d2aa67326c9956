// lrrt inspect FILE...: what code objects hold, for every format lrrt loads,
// in one document shape (docs/code-objects.md "What lrrt inspect prints"):
// per file its format, per target (one for a plain code object, one per
// container entry) the target's facts and its kernels with their argument
// layout. Everything is read by lrrt_formats from the bytes alone: no device,
// no GPU library, and no host library is loaded.
#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <variant>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "lrrt/formats/error.hpp"
#include "lrrt/formats/format.hpp"
#include "lrrt/formats/inspect.hpp"
#include "tool/atomic_file.hpp"
#include "tool/bundle.hpp"
#include "tool/meta.hpp"

namespace lrrt::cli {
namespace {

using json = nlohmann::json;
namespace formats = lrrt::formats;

json arg_json(const formats::KernelArgInfo& a, size_t index) {
  json j{{"index", index}, {"offset", a.offset}, {"size", a.size}, {"kind", formats::arg_kind_name(a.kind)}};
  if (!a.value_kind.empty()) j["value_kind"] = a.value_kind;
  if (!a.name.empty()) j["name"] = a.name;
  if (!a.type_name.empty()) j["type_name"] = a.type_name;
  if (!a.address_space.empty()) j["address_space"] = a.address_space;
  return j;
}

json kernel_json(const formats::InspectedKernel& k) {
  json j{{"name", k.name}, {"symbol", k.symbol}};
  auto put = [&](const char* key, const std::optional<uint32_t>& v) {
    if (v) j[key] = *v;
  };
  put("kernarg_size", k.kernarg_size);
  put("explicit_kernarg_size", k.explicit_kernarg_size);
  put("kernarg_align", k.kernarg_align);
  put("group_segment_size", k.group_segment_size);
  put("private_segment_size", k.private_segment_size);
  put("max_workgroup_size", k.max_workgroup_size);
  put("wavefront_size", k.wavefront_size);
  put("sgpr_count", k.sgpr_count);
  put("vgpr_count", k.vgpr_count);
  put("registers", k.registers);
  j["has_arg_layout"] = k.has_arg_layout;
  json args = json::array();
  for (size_t i = 0; i < k.args.size(); ++i) args.push_back(arg_json(k.args[i], i));
  j["args"] = std::move(args);
  return j;
}

json target_json(const formats::InspectedTarget& t) {
  json j{{"target", t.target}, {"format", formats::format_name(t.format)}};
  if (!t.entry.empty()) j["entry"] = t.entry;
  j["offset"] = t.offset;
  j["size"] = t.size;
  for (const auto& [key, value] : t.facts) std::visit([&, &key = key](const auto& v) { j[key] = v; }, value);
  if (!t.note.empty()) j["note"] = t.note;
  json kernels = json::array();
  for (const auto& k : t.kernels) kernels.push_back(kernel_json(k));
  j["kernels"] = std::move(kernels);
  return j;
}

json inspect_file(const std::string& path) {
  // The format from the first bytes; the rest is read only for a code object.
  std::vector<std::byte> bytes = tool::read_code_object_file(path, [](std::span<const std::byte> head) {
    return formats::detect_format(head) == formats::Format::Unknown ? formats::describe_format(head) : std::string();
  });
  formats::Inspection inspection;
  try {
    inspection = formats::inspect_code_object(bytes);
  } catch (const formats::FormatError& e) {
    throw tool::InputError(fmt::format("{}: {}", path, e.what()));
  }
  json targets = json::array();
  for (const auto& t : inspection.targets) targets.push_back(target_json(t));
  return json{{"file", path},
              {"format", formats::format_name(inspection.format)},
              {"size", inspection.size},
              {"targets", std::move(targets)}};
}

void inspect_command(const std::vector<std::string>& files, const CommonOptions& o) {
  json objects = json::array();
  for (const auto& file : files) objects.push_back(inspect_file(file));
  json doc{{"kind", "inspect"}, {"lrrt_results", 1}, {"objects", std::move(objects)}};
  doc["meta"] = tool::make_meta("inspect", argv());
  emit_document(doc, o);  // the printers render inspect documents in every format
}

}  // namespace

void register_inspect(CLI::App& app) {
  auto o = std::make_shared<CommonOptions>();
  auto files = std::make_shared<std::vector<std::string>>();
  CLI::App* sub = app.add_subcommand(
      "inspect", "Show what code objects hold: targets, kernels, argument layout (reads files only)");
  sub->add_option("files", *files,
                  "HSACO, clang offload bundle, cubin, fatbin, PTX or host kernel library (.so); several allowed")
      ->required();
  add_common_options(*sub, *o, kOptFormat | kOptOutput | kOptQuiet);
  sub->footer(R"(Examples:
  lrrt inspect build/kernels/saxpy.gfx1100.hsaco
  lrrt inspect build/kernels/saxpy.bundle.hsaco --format json | jq '.objects[].targets[].target'
  lrrt inspect build/kernels/saxpy.sm_90.cubin build/kernels/saxpy.host.so)");
  sub->callback([o, files] { inspect_command(*files, *o); });
}

}  // namespace lrrt::cli

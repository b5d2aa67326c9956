#include "tool/inspect_doc.hpp"

#include <optional>
#include <variant>

namespace lrrt::tool {
namespace {

using json = nlohmann::json;

json arg_json(const formats::KernelArgInfo& a, size_t index) {
  json j{{"index", index}, {"offset", a.offset}, {"size", a.size}, {"kind", formats::arg_kind_name(a.kind)}};
  if (!a.value_kind.empty()) j["value_kind"] = a.value_kind;
  if (!a.name.empty()) j["name"] = a.name;
  if (!a.type_name.empty()) j["type_name"] = a.type_name;
  if (!a.address_space.empty()) j["address_space"] = a.address_space;
  if (!a.access.empty()) j["access"] = a.access;
  if (!a.actual_access.empty()) j["actual_access"] = a.actual_access;
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
  if (k.uses_dynamic_stack) j["uses_dynamic_stack"] = *k.uses_dynamic_stack;
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

}  // namespace

json inspect_target_json(const formats::InspectedTarget& t) {
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

}  // namespace lrrt::tool

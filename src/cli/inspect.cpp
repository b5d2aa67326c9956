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
#include "tool/errors.hpp"
#include "tool/input_file.hpp"

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
  std::vector<std::byte> bytes = tool::read_input_file(path, tool::kMaxCodeObjectBytes);
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

// The table form of an inspect document, for every format alike: per file a
// line, per target a line with its facts, a kernel table (one row per
// kernel) and an argument table per kernel. Columns no row fills are left
// out, so each format shows what it records.
std::string render_inspect_table(const json& doc) {
  std::ostringstream os;
  auto cell = [](const json& v) -> std::string {
    if (v.is_null()) return "";
    if (v.is_string()) return v.get<std::string>();
    if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
    return v.dump();
  };
  // rows[i][c] under headers[c]; empty columns dropped; first column left-aligned.
  auto table = [&](const std::vector<std::string>& headers, const std::vector<std::vector<std::string>>& rows,
                   const std::string& indent) {
    std::vector<size_t> width(headers.size(), 0);
    std::vector<bool> used(headers.size(), false);
    for (const auto& r : rows)
      for (size_t c = 0; c < headers.size(); ++c)
        if (!r[c].empty()) {
          used[c] = true;
          width[c] = std::max(width[c], r[c].size());
        }
    auto line = [&](const std::vector<std::string>& r) {
      std::string out = indent;
      for (size_t c = 0; c < headers.size(); ++c)
        if (used[c]) out += fmt::format("{:<{}}  ", r[c], std::max(width[c], headers[c].size()));
      while (!out.empty() && out.back() == ' ') out.pop_back();
      os << out << "\n";
    };
    line(headers);
    for (const auto& r : rows) line(r);
  };
  static const std::vector<std::pair<std::string, std::string>> kKernelColumns = {
      {"kernel", "name"},           {"symbol", "symbol"},           {"kernarg", "kernarg_size"},
      {"explicit", "explicit_kernarg_size"}, {"align", "kernarg_align"}, {"group", "group_segment_size"},
      {"private", "private_segment_size"},   {"max wg", "max_workgroup_size"}, {"wave", "wavefront_size"},
      {"sgpr", "sgpr_count"},       {"vgpr", "vgpr_count"},         {"regs", "registers"}};
  static const std::vector<std::string> kArgColumns = {"index", "offset",    "size",     "kind",
                                                       "value_kind", "name", "type_name", "address_space"};
  static const std::set<std::string> kTargetKeys = {"target", "format", "entry", "offset", "size", "note", "kernels"};
  for (const auto& o : doc.value("objects", json::array())) {
    const json targets = o.value("targets", json::array());
    os << fmt::format("{}: {}, {} bytes, {} target(s)\n", o.value("file", ""), o.value("format", ""),
                      o.value("size", 0), targets.size());
    for (const auto& t : targets) {
      os << fmt::format("\ntarget {} ({}", t.value("target", ""), t.value("format", ""));
      if (t.contains("entry"))
        os << fmt::format("; entry {}, {} bytes at offset {}", t.value("entry", ""), t.value("size", 0),
                          t.value("offset", 0));
      os << ")\n";
      std::string facts;
      for (const auto& [key, value] : t.items())
        if (!kTargetKeys.count(key)) facts += (facts.empty() ? "" : ", ") + key + " " + cell(value);
      if (!facts.empty()) os << "  " << facts << "\n";
      if (t.contains("note")) os << "  note: " << t.value("note", "") << "\n";
      const json kernels = t.value("kernels", json::array());
      if (kernels.empty()) {
        os << "  no kernels listed\n";
        continue;
      }
      std::vector<std::string> headers;
      for (const auto& c : kKernelColumns) headers.push_back(c.first);
      std::vector<std::vector<std::string>> rows;
      for (const auto& k : kernels) {
        std::vector<std::string> r;
        for (const auto& c : kKernelColumns) r.push_back(cell(k.value(c.second, json())));
        rows.push_back(std::move(r));
      }
      table(headers, rows, "  ");
      for (const auto& k : kernels) {
        os << fmt::format("  {} arguments:", k.value("name", ""));
        if (!k.value("has_arg_layout", false)) {
          os << " not recorded in the code object\n";
          continue;
        }
        const json args = k.value("args", json::array());
        if (args.empty()) {
          os << " none\n";
          continue;
        }
        os << "\n";
        std::vector<std::vector<std::string>> arg_rows;
        for (const auto& a : args) {
          std::vector<std::string> r;
          for (const auto& c : kArgColumns) r.push_back(cell(a.value(c, json())));
          arg_rows.push_back(std::move(r));
        }
        table(kArgColumns, arg_rows, "    ");
      }
    }
  }
  return os.str();
}

void inspect_command(const std::vector<std::string>& files, const CommonOptions& o) {
  json objects = json::array();
  for (const auto& file : files) objects.push_back(inspect_file(file));
  json doc{{"kind", "inspect"}, {"lrrt_results", 1}, {"objects", std::move(objects)}};
  if (effective_format(o) != "table") return emit_document(doc, o);
  std::string text = render_inspect_table(doc);
  if (o.output.empty()) std::cout << text << std::flush;
  else tool::write_file_atomic(o.output, text);
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

// `lrrt inspect` documents, one shape for every code-object format
// (docs/code-objects.md): {"kind": "inspect", "objects": [{"file", "format",
// "size", "targets": [{"target", "format", ["entry"], "offset", "size",
// facts..., ["note"], "kernels": [{"name", "symbol", sizes...,
// "has_arg_layout", "args": [{"index", "offset", "size", "kind",
// ["value_kind", "name", "type_name", "address_space", "access",
// "actual_access"]}]}]}]}]}. A kernel
// or argument field a format does not record is absent; its column is left
// out when no row fills it.
#include <fmt/format.h>

#include <set>

#include "tool/printers/views.hpp"

namespace lrrt::tool::printers {

using nlohmann::json;

namespace {

// Header and document key of the kernel table's columns.
const std::vector<std::pair<std::string, std::string>> kKernelColumns = {
    {"kernel", "name"},          {"symbol", "symbol"},
    {"kernarg", "kernarg_size"}, {"explicit", "explicit_kernarg_size"},
    {"align", "kernarg_align"},  {"group", "group_segment_size"},
    {"private", "private_segment_size"}, {"dyn stack", "uses_dynamic_stack"},
    {"max wg", "max_workgroup_size"},
    {"wave", "wavefront_size"},  {"sgpr", "sgpr_count"},
    {"vgpr", "vgpr_count"},      {"regs", "registers"}};
const std::vector<std::string> kArgColumns = {"index", "offset", "size", "kind",
                                              "value_kind", "name", "type_name", "address_space",
                                              "access", "actual_access"};
// Target fields that are not facts.
const std::set<std::string> kTargetKeys = {"target", "format", "entry", "offset", "size", "note", "kernels"};

std::string cell(const json& v) {
  if (v.is_null()) return "";
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  return v.is_string() ? v.get<std::string>() : v.dump();
}

const json& list(const json& j, const char* key) {
  static const json kEmpty = json::array();
  const json& v = member(j, key);
  return v.is_array() ? v : kEmpty;
}

// Leaves out the columns (after the first) that no row fills.
Table without_empty_columns(const Table& t) {
  std::vector<size_t> keep;
  for (size_t c = 0; c < t.columns.size(); ++c) {
    bool used = c == 0;
    for (const auto& row : t.rows) used |= c < row.size() && !row[c].empty();
    if (used) keep.push_back(c);
  }
  Table out;
  for (size_t c : keep) {
    out.columns.push_back(t.columns[c]);
    out.align.push_back(t.column_align(c));
  }
  for (const auto& row : t.rows) {
    std::vector<std::string> r;
    for (size_t c : keep) r.push_back(c < row.size() ? row[c] : "");
    out.rows.push_back(std::move(r));
  }
  return out;
}

std::string target_heading(const json& t) {
  std::string out = fmt::format("target {} ({}", text_of(t, "target"), text_of(t, "format"));
  if (t.contains("entry"))
    out += fmt::format("; entry {}, {} bytes at offset {}", text_of(t, "entry"), text_of(t, "size", "0"),
                       text_of(t, "offset", "0"));
  return out + ")";
}

}  // namespace

Table inspect_records(const json& doc) {
  Table t;
  t.columns = {"file", "file_format", "target", "target_format", "entry", "kernel", "symbol"};
  t.columns.insert(t.columns.end(), kArgColumns.begin(), kArgColumns.end());
  for (const auto& o : list(doc, "objects"))
    for (const auto& target : list(o, "targets"))
      for (const auto& k : list(target, "kernels")) {
        const std::vector<std::string> kernel = {text_of(o, "file"),         text_of(o, "format"),
                                                 text_of(target, "target"), text_of(target, "format"),
                                                 text_of(target, "entry"),  text_of(k, "name"),
                                                 text_of(k, "symbol")};
        const json& args = list(k, "args");
        if (args.empty()) {  // the kernel still gets its row
          auto row = kernel;
          row.resize(t.columns.size());
          t.rows.push_back(std::move(row));
        }
        for (const auto& a : args) {
          auto row = kernel;
          for (const auto& c : kArgColumns) row.push_back(cell(member(a, c.c_str())));
          t.rows.push_back(std::move(row));
        }
      }
  return t;
}

Layout inspect_layout(const json& doc) {
  Layout out;
  for (const auto& o : list(doc, "objects")) {
    const json& targets = list(o, "targets");
    // Streamed output (lrrt inspect to a terminal) comes a target at a
    // time: the file's heading once, without a count it does not know yet.
    if (member(o, "streamed") == true) {
      if (member(o, "continued") != true)
        out.heading(fmt::format("{}: {}, {} bytes", text_of(o, "file"), text_of(o, "format"), text_of(o, "size", "0")));
    } else {
      out.heading(fmt::format("{}: {}, {} bytes, {} target(s)", text_of(o, "file"), text_of(o, "format"),
                              text_of(o, "size", "0"), targets.size()));
    }
    for (const auto& t : targets) {
      out.heading(target_heading(t), 1);
      std::string facts;
      for (const auto& [key, value] : t.items())
        if (!kTargetKeys.count(key)) facts += (facts.empty() ? "" : ", ") + key + " " + cell(value);
      if (!facts.empty()) out.text(facts);
      if (t.contains("note")) out.text("note: " + text_of(t, "note"));
      const json& kernels = list(t, "kernels");
      if (kernels.empty()) {
        out.text("no kernels listed");
        continue;
      }
      Table kt;
      for (const auto& [header, key] : kKernelColumns) {
        kt.columns.push_back(header);
        kt.align.push_back(key == "name" || key == "symbol" ? Align::Left : Align::Right);
      }
      for (const auto& k : kernels) {
        std::vector<std::string> row;
        for (const auto& [header, key] : kKernelColumns) row.push_back(cell(member(k, key.c_str())));
        kt.rows.push_back(std::move(row));
      }
      out.table(without_empty_columns(kt));
      for (const auto& k : kernels) {
        const json& args = list(k, "args");
        if (member(k, "has_arg_layout") == false) {
          out.text(text_of(k, "name") + " arguments: not recorded in the code object");
          continue;
        }
        if (args.empty()) {
          out.text(text_of(k, "name") + " arguments: none");
          continue;
        }
        out.text(text_of(k, "name") + " arguments:");
        Table at;
        at.columns = kArgColumns;
        at.align = {Align::Right, Align::Right, Align::Right};
        for (const auto& a : args) {
          std::vector<std::string> row;
          for (const auto& c : kArgColumns) row.push_back(cell(member(a, c.c_str())));
          at.rows.push_back(std::move(row));
        }
        out.table(without_empty_columns(at), 1);
      }
    }
  }
  return out;
}

}  // namespace lrrt::tool::printers

// How each result kind is printed, written once per kind: its records (the
// CSV rows) and its layout (what the table and markdown printers render).
// Reading a document, a view takes missing fields as empty: printers never
// throw on a document a reader can load.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "tool/printers/layout.hpp"

namespace lrrt::tool::printers {

struct View {
  const char* kind;
  const char* list;  // the member a document of this shape has: "runs", "objects", ...
  Table (*records)(const nlohmann::json& doc);
  Layout (*layout)(const nlohmann::json& doc);
};

// The view of the document's kind; nullptr when no view knows it, or the
// document lacks the view's list (another shape of that kind, e.g. an
// inspect document from before the one-shape `objects`).
const View* find_view(const nlohmann::json& doc);

// One pair per kind, in <kind>_view.cpp.
Table run_records(const nlohmann::json& doc);
Layout run_layout(const nlohmann::json& doc);
Table info_records(const nlohmann::json& doc);
Layout info_layout(const nlohmann::json& doc);
Table bench_records(const nlohmann::json& doc);
Layout bench_layout(const nlohmann::json& doc);
Table compare_records(const nlohmann::json& doc);
Layout compare_layout(const nlohmann::json& doc);
Table inspect_records(const nlohmann::json& doc);
Layout inspect_layout(const nlohmann::json& doc);
Table plan_records(const nlohmann::json& doc);
Layout plan_layout(const nlohmann::json& doc);

// Sweeps inside run documents (sweep_view.cpp): the axis names of every
// sweep of the document (the extra CSV columns), one CSV row per state, and
// the sweep's section.
std::vector<std::string> sweep_columns(const nlohmann::json& doc);
void sweep_rows(Table& t, const nlohmann::json& doc, const nlohmann::json& run, const std::vector<std::string>& axes,
                size_t fixed_columns);
void sweep_layout(Layout& out, const nlohmann::json& device, const nlohmann::json& run);

// A plan entry ({"steps", "buffers", "plan"}) as fields and tables, for the
// plan view and `lrrt run --explain`.
void plan_blocks(Layout& out, const nlohmann::json& entry, int depth);
// A plan document as Graphviz DOT: one cluster per manifest, edges labelled
// with their hazards (explicit-only edges dashed).
std::string plan_dot(const nlohmann::json& doc);

// Reading documents without throwing: a member (null when missing or not an
// object), a field of any type as text, a number.
const nlohmann::json& member(const nlohmann::json& j, const char* key);
std::string text_of(const nlohmann::json& j, const char* key, const std::string& missing = "");
double number_of(const nlohmann::json& j, const char* key, double missing = 0);

}  // namespace lrrt::tool::printers

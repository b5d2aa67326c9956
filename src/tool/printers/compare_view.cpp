// `lrrt compare` reports (tool/compare_core.hpp): the rows that changed or
// are uncertain first, the unchanged ones after (folded in markdown), and
// the verdict line.
#include <fmt/format.h>

#include "tool/printers/views.hpp"
#include "tool/units.hpp"

namespace lrrt::tool::printers {

using nlohmann::json;

namespace {

// A time ratio as a change people read at once: +10% = 10% slower.
std::string change_text(double ratio) { return fmt::format("{:+.1f}%", (ratio - 1) * 100); }

std::string verdict_mark(const std::string& verdict) {
  if (verdict == "faster") return "FASTER";
  if (verdict == "slower") return "SLOWER";
  return verdict;
}

std::string verdict_line(const json& doc) {
  const json& s = member(doc, "summary");
  return fmt::format("{} compared: {} same, {} faster, {} slower, {} unsure (threshold {:.1f}%, alpha {}){}",
                     text_of(s, "rows", "0"), text_of(s, "same", "0"), text_of(s, "faster", "0"),
                     text_of(s, "slower", "0"), text_of(s, "unsure", "0"), number_of(doc, "threshold") * 100,
                     text_of(doc, "alpha"), member(s, "regression") == true ? " -- REGRESSION" : "");
}

}  // namespace

Table compare_records(const json& doc) {
  Table t;
  t.columns = {"name", "benchmark", "backend", "impl", "base_median_ns", "new_median_ns", "ratio", "p_value", "verdict"};
  const json& rows = member(doc, "rows");
  if (rows.is_array())
    for (const auto& r : rows)
      t.rows.push_back({text_of(r, "name"), text_of(r, "benchmark"), text_of(r, "backend"), text_of(r, "impl"),
                        fmt::format("{:.1f}", number_of(r, "base_median_ns")),
                        fmt::format("{:.1f}", number_of(r, "new_median_ns")), fmt::format("{:.4f}", number_of(r, "ratio")),
                        fmt::format("{:.4g}", number_of(r, "p_value", 1)), text_of(r, "verdict")});
  return t;
}

Layout compare_layout(const json& doc) {
  Layout out;
  const json& rows = member(doc, "rows");
  for (bool changed : {true, false}) {
    Table t;
    t.columns = {"benchmark", "backend", "case", "base", "new", "time", "verdict", "why"};
    t.align = {Align::Left, Align::Left, Align::Left, Align::Right, Align::Right, Align::Right, Align::Left, Align::Left};
    if (rows.is_array())
      for (const auto& r : rows) {
        if ((text_of(r, "verdict") != "same") != changed) continue;
        t.rows.push_back({text_of(r, "benchmark"), text_of(r, "backend"), text_of(r, "case", text_of(r, "name")),
                          format_time_ns(number_of(r, "base_median_ns")), format_time_ns(number_of(r, "new_median_ns")),
                          change_text(number_of(r, "ratio", 1)), verdict_mark(text_of(r, "verdict")),
                          text_of(r, "reason")});
      }
    if (t.rows.empty()) continue;
    out.heading(changed ? "changed or uncertain" : "unchanged", 0, !changed);
    out.table(std::move(t));
  }
  out.heading("summary");
  const size_t only_base = member(doc, "only_in_base").size(), only_new = member(doc, "only_in_new").size();
  if (only_base || only_new)
    out.text(fmt::format("{} measurement(s) only in base, {} only in new (not compared)", only_base, only_new));
  out.text(verdict_line(doc), true);
  return out;
}

}  // namespace lrrt::tool::printers

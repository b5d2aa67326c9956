#include "tool/compare_core.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace lrrt::tool::bench {
namespace {

std::string change_text(double ratio) {
  // Time ratio as a change in speed people read easily: +10% = 10% slower.
  return fmt::format("{:+.1f}%", (ratio - 1) * 100);
}

const char* verdict_mark(Verdict v) {
  switch (v) {
    case Verdict::Same: return "same";
    case Verdict::Faster: return "FASTER";
    case Verdict::Slower: return "SLOWER";
    case Verdict::Unsure: return "unsure";
  }
  return "?";
}

}  // namespace

CompareReport compare_results(const ResultSet& base, const ResultSet& next, const CompareOptions& options) {
  CompareReport report;
  std::map<std::string, const Measurement*> base_index;
  for (const auto& m : base.measurements)
    if (options.include_native || m.impl != "native") base_index[m.key()] = &m;
  std::map<std::string, bool> matched;
  for (const auto& m : next.measurements) {
    if (!options.include_native && m.impl == "native") continue;
    auto it = base_index.find(m.key());
    if (it == base_index.end()) {
      report.only_in_new.push_back(m.key());
      continue;
    }
    matched[m.key()] = true;
    const Measurement& b = *it->second;
    CompareRow row;
    row.key = m.key();
    row.benchmark = m.benchmark;
    row.backend = m.backend;
    row.impl = m.impl;
    row.label = m.case_label();
    row.base_median = b.stats.median;
    row.new_median = m.stats.median;
    row.base_samples = b.samples.size();
    row.new_samples = m.samples.size();
    row.bandwidth = m.bytes > 0;
    if (!b.samples.empty() && !m.samples.empty()) {
      row.comparison = compare_samples(b.samples, m.samples, options.verdict);
    } else {
      // Files without samples: medians only, never a confident verdict
      // beyond the threshold.
      row.comparison.ratio = b.stats.median > 0 ? m.stats.median / b.stats.median : 1;
      bool within = std::abs(row.comparison.ratio - 1) <= options.verdict.threshold;
      row.comparison.verdict = within ? Verdict::Same : Verdict::Unsure;
      row.comparison.reason = "no samples recorded";
    }
    // A benchmark that now measures another API path is not comparable:
    // shown, never counted as a regression (refresh the baseline).
    if (!b.api.empty() && !m.api.empty() && b.api != m.api && row.comparison.verdict != Verdict::Same) {
      row.comparison.verdict = Verdict::Unsure;
      row.comparison.reason = fmt::format("measured another way (base: {}; new: {})", b.api, m.api);
    }
    switch (row.comparison.verdict) {
      case Verdict::Same: report.same++; break;
      case Verdict::Faster: report.faster++; break;
      case Verdict::Slower: report.slower++; break;
      case Verdict::Unsure: report.unsure++; break;
    }
    report.rows.push_back(std::move(row));
  }
  for (const auto& [key, m] : base_index)
    if (!matched.count(key)) report.only_in_base.push_back(key);
  return report;
}

nlohmann::json report_json(const CompareReport& r, const CompareOptions& o) {
  nlohmann::json doc;
  doc["threshold"] = o.verdict.threshold;
  doc["alpha"] = o.verdict.alpha;
  doc["summary"] = {{"rows", r.rows.size()}, {"same", r.same},     {"faster", r.faster},
                    {"slower", r.slower},    {"unsure", r.unsure}, {"regression", r.regression()}};
  auto& rows = doc["rows"] = nlohmann::json::array();
  for (const auto& row : r.rows)
    rows.push_back({{"name", row.key},
                    {"benchmark", row.benchmark},
                    {"backend", row.backend},
                    {"impl", row.impl},
                    {"base_median_ns", row.base_median},
                    {"new_median_ns", row.new_median},
                    {"ratio", row.comparison.ratio},
                    {"p_value", row.comparison.p_value},
                    {"tested", row.comparison.tested},
                    {"verdict", verdict_name(row.comparison.verdict)},
                    {"reason", row.comparison.reason}});
  doc["only_in_base"] = r.only_in_base;
  doc["only_in_new"] = r.only_in_new;
  return doc;
}

namespace {

std::string summary_line(const CompareReport& r, const CompareOptions& o) {
  return fmt::format("{} compared: {} same, {} faster, {} slower, {} unsure (threshold {:.1f}%, alpha {}){}",
                     r.rows.size(), r.same, r.faster, r.slower, r.unsure, o.verdict.threshold * 100,
                     o.verdict.alpha, r.regression() ? " -- REGRESSION" : "");
}

}  // namespace

std::string report_table(const CompareReport& r, const CompareOptions& o) {
  size_t w = 4;
  for (const auto& row : r.rows) w = std::max(w, row.benchmark.size() + row.backend.size() + row.label.size() + 4);
  std::string out = fmt::format("{:<{}}  {:>13}  {:>13}  {:>8}  {:>7}  {}\n", "case", w, "base", "new", "time",
                                "verdict", "why");
  for (const auto& row : r.rows) {
    std::string name = fmt::format("{} {}: {}", row.benchmark, row.backend, row.label);
    out += fmt::format("{:<{}}  {:>13}  {:>13}  {:>8}  {:>7}  {}\n", name, w, format_time_ns(row.base_median),
                       format_time_ns(row.new_median), change_text(row.comparison.ratio),
                       verdict_mark(row.comparison.verdict), row.comparison.reason);
  }
  if (!r.only_in_base.empty()) out += fmt::format("{} only in base (not compared)\n", r.only_in_base.size());
  if (!r.only_in_new.empty()) out += fmt::format("{} only in new (not compared)\n", r.only_in_new.size());
  out += summary_line(r, o) + "\n";
  return out;
}

std::string report_markdown(const CompareReport& r, const CompareOptions& o) {
  std::string out = "### lrrt bench comparison\n\n";
  out += (r.regression() ? ":x: " : ":white_check_mark: ") + summary_line(r, o) + "\n\n";
  auto table = [&](bool changed_only) {
    std::string t = "| benchmark | backend | case | base | new | time change | verdict |\n"
                    "| --- | --- | --- | ---: | ---: | ---: | --- |\n";
    size_t n = 0;
    for (const auto& row : r.rows) {
      bool changed = row.comparison.verdict != Verdict::Same;
      if (changed_only != changed) continue;
      ++n;
      t += fmt::format("| {} | {} | {} | {} | {} | {} | {} ({}) |\n", row.benchmark, row.backend, row.label,
                       format_time_ns(row.base_median), format_time_ns(row.new_median),
                       change_text(row.comparison.ratio), verdict_name(row.comparison.verdict),
                       row.comparison.reason);
    }
    return n ? t : std::string();
  };
  std::string changed = table(true);
  if (!changed.empty()) out += "#### Changed or uncertain\n\n" + changed + "\n";
  std::string same = table(false);
  if (!same.empty()) out += "<details><summary>Unchanged</summary>\n\n" + same + "\n</details>\n";
  if (!r.only_in_base.empty() || !r.only_in_new.empty())
    out += fmt::format("\n{} measurement(s) only in base, {} only in new.\n", r.only_in_base.size(),
                       r.only_in_new.size());
  return out;
}

std::string report_csv(const CompareReport& r) {
  std::string out = "name,benchmark,backend,impl,base_median_ns,new_median_ns,ratio,p_value,verdict\n";
  for (const auto& row : r.rows)
    out += fmt::format("\"{}\",{},{},{},{:.1f},{:.1f},{:.4f},{:.4g},{}\n", row.key, row.benchmark, row.backend,
                       row.impl, row.base_median, row.new_median, row.comparison.ratio, row.comparison.p_value,
                       verdict_name(row.comparison.verdict));
  return out;
}

}  // namespace lrrt::tool::bench

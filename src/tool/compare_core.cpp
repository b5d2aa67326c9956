#include "tool/compare_core.hpp"

#include <cmath>
#include <map>

#include <fmt/format.h>

namespace lrrt::tool::bench {

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
  doc["kind"] = "compare";
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
                    {"case", row.label},
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

}  // namespace lrrt::tool::bench

// `lrrt compare BASE.json NEW.json`: matches measurements by name and
// parameters, gives each pair a ratio and a noise-aware verdict
// (bench_stats.hpp), and summarises; the printers print the report's
// document (printers/compare_view.cpp).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tool/bench_result.hpp"
#include "tool/bench_stats.hpp"

namespace lrrt::tool::bench {

struct CompareRow {
  std::string key;  // Measurement::key()
  std::string benchmark, backend, impl, label;
  double base_median = 0, new_median = 0;
  size_t base_samples = 0, new_samples = 0;
  Comparison comparison;
  bool bandwidth = false;  // the case moves bytes (GB/s shown)
};

struct CompareReport {
  std::vector<CompareRow> rows;
  std::vector<std::string> only_in_base, only_in_new;
  size_t same = 0, faster = 0, slower = 0, unsure = 0;
  bool regression() const { return slower > 0; }
};

struct CompareOptions {
  VerdictOptions verdict;
  bool include_native = false;  // native rows measure the machine, not lrrt
};

CompareReport compare_results(const ResultSet& base, const ResultSet& next, const CompareOptions& options = {});

// The document the printers print: {"kind": "compare", "threshold",
// "alpha", "summary": {"rows", "same", "faster", "slower", "unsure",
// "regression"}, "rows": [{"name", "benchmark", "backend", "impl", "case",
// "base_median_ns", "new_median_ns", "ratio", "p_value", "tested",
// "verdict", "reason"}], "only_in_base", "only_in_new"}.
nlohmann::json report_json(const CompareReport& report, const CompareOptions& options);

}  // namespace lrrt::tool::bench

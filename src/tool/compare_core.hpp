// `lrrt compare BASE.json NEW.json`: matches measurements by name and
// parameters, gives each pair a ratio and a noise-aware verdict
// (bench_stats.hpp), and summarises.
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

nlohmann::json report_json(const CompareReport& report, const CompareOptions& options);
std::string report_table(const CompareReport& report, const CompareOptions& options);
std::string report_markdown(const CompareReport& report, const CompareOptions& options);
std::string report_csv(const CompareReport& report);

}  // namespace lrrt::tool::bench

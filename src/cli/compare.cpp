// `lrrt compare BASE.json NEW.json`: per-measurement ratio and a verdict
// (same, faster, slower, unsure) from the recorded samples; exits 1 when any
// measurement is slower beyond the threshold (tool/compare_core.*).
#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "tool/atomic_file.hpp"
#include "tool/compare_core.hpp"
#include "tool/errors.hpp"
#include "tool/json_input.hpp"

namespace lrrt::cli {
namespace {

struct CompareCli {
  std::string base, next;
  std::string format;
  std::string output;
  double threshold_percent = 5;
  double alpha = 0.01;
  bool include_native = false;
  bool no_fail = false;
  bool quiet = false;
};

tool::bench::ResultSet load(const std::string& path) {
  // Strict: one document, nothing after it, valid UTF-8, no duplicate keys.
  nlohmann::json doc = tool::read_json_file(path);
  try {
    return tool::bench::from_json(doc);
  } catch (const tool::InputError& e) {
    throw tool::InputError(fmt::format("{}: {}", path, e.what()));
  } catch (const nlohmann::json::exception& e) {
    // A field of the wrong type: an input error naming the file, not a crash.
    throw tool::InputError(fmt::format("{}: not an lrrt bench result file: {}", path, e.what()));
  }
}

void run(const CompareCli& o) {
  using namespace tool::bench;
  if (o.threshold_percent < 0) throw tool::InputError("--threshold must not be negative");
  if (o.alpha <= 0 || o.alpha >= 1) throw tool::InputError("--alpha must lie between 0 and 1");
  ResultSet base = load(o.base), next = load(o.next);
  CompareOptions options;
  options.verdict.threshold = o.threshold_percent / 100.0;
  options.verdict.alpha = o.alpha;
  options.include_native = o.include_native;
  CompareReport report = compare_results(base, next, options);
  if (report.rows.empty())
    throw tool::InputError(fmt::format("{} and {} have no measurement in common", o.base, o.next));

  std::string format = o.format;
  if (format.empty()) {
    std::string ext = o.output.empty() ? "" : std::filesystem::path(o.output).extension().string();
    format = ext == ".json" ? "json" : ext == ".md" ? "markdown" : ext == ".csv" ? "csv" : "table";
  }
  std::string text = format == "json"       ? report_json(report, options).dump(1) + "\n"
                     : format == "markdown" ? report_markdown(report, options)
                     : format == "csv"      ? report_csv(report)
                                            : report_table(report, options);
  if (o.output.empty()) {
    std::cout << text << std::flush;
  } else {
    tool::write_file_atomic(o.output, text);
    if (!o.quiet) std::cout << report_table(report, options) << std::flush;
  }
  if (report.regression() && !o.no_fail) set_exit_code(1);
}

}  // namespace

void register_compare(CLI::App& app) {
  auto o = std::make_shared<CompareCli>();
  CLI::App* sub = app.add_subcommand("compare", "Compare two lrrt bench result files: ratio and verdict per measurement");
  sub->add_option("base", o->base, "Baseline result (lrrt bench JSON)")->required();
  sub->add_option("new", o->next, "New result (lrrt bench JSON)")->required();
  sub->add_option("--threshold", o->threshold_percent,
                  "Changes of the median smaller than this many percent count as the same (default 5)");
  sub->add_option("--alpha", o->alpha, "Significance level of the Mann-Whitney U test (default 0.01)");
  sub->add_flag("--include-native", o->include_native,
                "Also compare the native baselines (they measure the machine, not lrrt)");
  sub->add_option("--format", o->format, "table, json, csv or markdown (for pull-request comments)")
      ->check(CLI::IsMember({"table", "json", "csv", "markdown"}));
  sub->add_option("-o,--output", o->output, "Write the report to FILE (atomically)");
  sub->add_flag("--no-fail", o->no_fail, "Exit 0 even when something is slower");
  sub->add_flag("-q,--quiet", o->quiet, "With -o, print nothing");
  sub->footer(R"(Measurements are matched by benchmark, metric, backend, parameters and implementation.
Verdict per row, from the recorded samples (lower time is better):
  same     the median moved by less than --threshold
  slower   beyond the threshold and significant (Mann-Whitney U, p < --alpha; with fewer than
           5 samples: the sample ranges do not overlap)
  faster   the same, the other way
  unsure   beyond the threshold but not significant (noise)
Exit codes: 0 no regression; 1 a measurement is slower; 2 usage or input error.)");
  sub->callback([o] { run(*o); });
}

}  // namespace lrrt::cli

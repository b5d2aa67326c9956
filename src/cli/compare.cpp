// `lrrt compare BASE.json NEW.json`: per-measurement ratio and a verdict
// (same, faster, slower, unsure) from the recorded samples; exits 1 when any
// measurement is slower beyond the threshold (tool/compare_core.*).
#include <CLI/CLI.hpp>
#include <cmath>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "tool/compare_core.hpp"
#include "tool/sweep_compare.hpp"
#include "tool/bundle.hpp"
#include "tool/meta.hpp"

namespace lrrt::cli {
namespace {

struct CompareCli {
  CommonOptions common;
  std::string base, next;
  double threshold_percent = 5;
  double alpha = 0.01;
  bool include_native = false;
  bool allow_missing = false;
  bool no_fail = false;
  bool threshold_given = false;
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

// Sweeps are judged by their noise; --threshold adds a floor only when given.
double sweep_threshold(const CompareCli& o) { return o.threshold_given ? o.threshold_percent / 100.0 : 0.0; }

void run(const CompareCli& o) {
  using namespace tool::bench;
  // The validators refuse these already; kept for callers that bypass CLI11.
  if (!std::isfinite(o.threshold_percent) || o.threshold_percent < 0)
    throw tool::InputError("--threshold must be a finite, non-negative percentage");
  if (!std::isfinite(o.alpha) || o.alpha <= 0 || o.alpha >= 1) throw tool::InputError("--alpha must lie between 0 and 1");
  {
    // `lrrt run` results with sweeps: states paired by their axis values.
    const nlohmann::json bd = tool::read_json_file(o.base), nd = tool::read_json_file(o.next);
    if (tool::holds_sweeps(bd) || tool::holds_sweeps(nd)) {
      if (!tool::holds_sweeps(bd) || !tool::holds_sweeps(nd))
        throw tool::InputError(fmt::format("{} and {}: only one of them holds sweeps (lrrt run results); compare sweeps with sweeps",
                                           o.base, o.next));
      for (const auto& [file, d] : {std::pair{&o.base, &bd}, std::pair{&o.next, &nd}})
        if (d->value("complete", true) == false && !o.allow_missing)
          throw tool::InputError(fmt::format("{}: the sweep that wrote it did not finish ({}); rerun it, or pass --allow-missing",
                                             *file, d->value("interrupted", false) ? "it was interrupted" : "it is marked incomplete"));
      nlohmann::json doc = tool::compare_sweeps(bd, nd, sweep_threshold(o));
      if (doc["rows"].empty()) throw tool::InputError(fmt::format("{} and {} have no sweep state in common", o.base, o.next));
      if (!doc["only_in_base"].empty() && !o.allow_missing)
        throw tool::InputError(fmt::format("{} lacks {} state(s) of {} (first: {}); pass --allow-missing to compare the rest", o.next,
                                           doc["only_in_base"].size(), o.base,
                                           tool::printable(doc["only_in_base"][0].get<std::string>(), 120)));
      doc["meta"] = tool::make_meta("compare", argv());
      doc["meta"]["options"] = {{"threshold", doc["threshold"]}, {"allow_missing", o.allow_missing}};
      doc["base"] = o.base;
      doc["new"] = o.next;
      emit_document(doc, o.common);
      if (doc["summary"]["regression"].get<bool>() && !o.no_fail) set_exit_code(1);
      return;
    }
  }
  ResultSet base = load(o.base), next = load(o.next);
  // A file cut short (Ctrl-C, a crash, a bench still running) would compare
  // only what it holds and look like "no regression".
  for (const auto& [file, set] : {std::pair{&o.base, &base}, std::pair{&o.next, &next}})
    if (!set->complete && !o.allow_missing)
      throw tool::InputError(fmt::format(
          "{}: the benchmark run that wrote it did not finish ({}); rerun it, or pass --allow-missing to "
          "compare what it holds",
          *file, set->interrupted ? "it was interrupted" : "it is marked incomplete"));
  CompareOptions options;
  options.verdict.threshold = o.threshold_percent / 100.0;
  options.verdict.alpha = o.alpha;
  options.include_native = o.include_native;
  CompareReport report = compare_results(base, next, options);
  if (report.rows.empty())
    throw tool::InputError(fmt::format("{} and {} have no measurement in common", o.base, o.next));
  if (!report.only_in_base.empty() && !o.allow_missing) {
    std::string names;
    for (size_t i = 0; i < report.only_in_base.size() && i < 5; ++i)
      names += (i ? ", " : "") + tool::printable(report.only_in_base[i], 120);
    if (report.only_in_base.size() > 5) names += fmt::format(", ... ({} more)", report.only_in_base.size() - 5);
    throw tool::InputError(fmt::format(
        "{} lacks {} measurement(s) of {}: {}; a regression check must not lose coverage silently (pass "
        "--allow-missing to compare the rest)",
        o.next, report.only_in_base.size(), o.base, names));
  }

  nlohmann::json doc = report_json(report, options);
  doc["meta"] = tool::make_meta("compare", argv());
  doc["meta"]["options"] = {{"threshold", options.verdict.threshold},
                            {"alpha", options.verdict.alpha},
                            {"include_native", options.include_native},
                            {"allow_missing", o.allow_missing}};
  doc["base"] = o.base;
  doc["new"] = o.next;
  emit_document(doc, o.common);
  if (report.regression() && !o.no_fail) set_exit_code(1);
}

}  // namespace

void register_compare(CLI::App& app) {
  auto o = std::make_shared<CompareCli>();
  CLI::App* sub = app.add_subcommand("compare", "Compare two lrrt bench result files (or two lrrt run files with sweeps): ratio and verdict per measurement or state");
  sub->add_option("base", o->base, "Baseline result (lrrt bench JSON)")->required();
  sub->add_option("new", o->next, "New result (lrrt bench JSON)")->required();
  sub->add_option("--threshold", o->threshold_percent,
                  "Changes of the median smaller than this many percent count as the same (default 5)")
      ->check(finite_number(0, 1e6, "percent"))
      ->each([o](const std::string&) { o->threshold_given = true; });
  sub->add_option("--alpha", o->alpha, "Significance level of the Mann-Whitney U test (default 0.01)")
      ->check(finite_number(1e-12, 0.5, "probability"));
  sub->add_flag("--include-native", o->include_native,
                "Also compare the native baselines (they measure the machine, not lrrt)");
  add_common_options(*sub, o->common, kOptFormat | kOptOutput | kOptQuiet);
  sub->add_flag("--no-fail", o->no_fail, "Exit 0 even when something is slower");
  sub->add_flag("--allow-missing", o->allow_missing,
                "Compare what both files hold even when NEW lacks measurements of BASE or either file is "
                "marked incomplete (an interrupted lrrt bench); without it those are input errors (exit 2)");
  sub->footer(R"(Measurements are matched by benchmark, metric, backend, parameters and implementation.
Verdict per row, from the recorded samples (lower time is better):
  same     the median moved by less than --threshold
  slower   beyond the threshold and significant (Mann-Whitney U, p < --alpha; with fewer than
           5 samples: the sample ranges do not overlap)
  faster   the same, the other way
  unsure   beyond the threshold but not significant (noise)
--format markdown (or -o FILE.md) writes a pull-request comment.

`lrrt run` results holding sweeps are compared state by state, paired by sweep name
and axis values: same when the median moved by no more than the larger of the two
states' noise (1.4826 x MAD / median; --threshold adds a floor when given),
else faster or slower; a state skipped in either file is unsure.

Examples:
  lrrt compare base.json new.json
  lrrt compare base.json new.json --threshold 10 -o compare.md -q
  lrrt compare sweep-main.json sweep-branch.json

A measurement of BASE missing from NEW, or a file that lrrt bench did not finish (marked
"complete": false), is an input error unless --allow-missing.

Exit codes: 0 no regression; 1 a measurement is slower; 2 usage or input error.)");
  sub->callback([o] { run(*o); });
}

}  // namespace lrrt::cli

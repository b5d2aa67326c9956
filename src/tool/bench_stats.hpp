// The noise-aware comparison behind `lrrt compare`: the Mann-Whitney U test
// (normal approximation with tie correction) and the verdict rule.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tool/stats.hpp"

namespace lrrt::tool::bench {

// The summary statistics live in tool/stats.hpp (shared with `lrrt run`).
using tool::compute_stats;
using tool::quantile_sorted;
using tool::Stats;

struct MannWhitney {
  double u = 0;        // U of the first sample
  double z = 0;        // standardised U (continuity corrected); > 0: a tends larger
  double p_value = 1;  // two-sided, normal approximation
};

// Two-sided Mann-Whitney U test. Ties get mid ranks and the variance their
// correction. With no variation at all (every value equal) p is 1.
MannWhitney mann_whitney(const std::vector<double>& a, const std::vector<double>& b);

// Standard normal upper-tail probability P(Z > z).
double normal_sf(double z);

enum class Verdict { Same, Faster, Slower, Unsure };
const char* verdict_name(Verdict v);

struct VerdictOptions {
  // A change smaller than this fraction of the base median is "same" even
  // when the test finds it significant (5% = 0.05).
  double threshold = 0.05;
  // Significance level of the Mann-Whitney test.
  double alpha = 0.01;
  // Fewer samples than this on either side: decide on medians and the
  // sample ranges (interval overlap) instead of the test.
  size_t min_samples_for_test = 5;
};

struct Comparison {
  double ratio = 1;    // new median / base median (time: > 1 is slower)
  double p_value = 1;  // of the test, or 1 when not run
  bool tested = false;
  Verdict verdict = Verdict::Same;
  std::string reason;  // one phrase explaining the verdict
};

// Compares two sets of time samples (lower is better).
//  - |ratio - 1| <= threshold                      -> same
//  - beyond the threshold and significant          -> faster / slower
//  - beyond the threshold but not significant      -> unsure
// With few samples, "significant" means the ranges [min, max] do not overlap.
Comparison compare_samples(const std::vector<double>& base, const std::vector<double>& next,
                           const VerdictOptions& options = {});

}  // namespace lrrt::tool::bench

#include "tool/bench_stats.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace lrrt::tool::bench {

double normal_sf(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }

MannWhitney mann_whitney(const std::vector<double>& a, const std::vector<double>& b) {
  MannWhitney r;
  const size_t n1 = a.size(), n2 = b.size();
  if (n1 == 0 || n2 == 0) return r;
  struct Item {
    double value;
    bool first;
  };
  std::vector<Item> all;
  all.reserve(n1 + n2);
  for (double v : a) all.push_back({v, true});
  for (double v : b) all.push_back({v, false});
  std::sort(all.begin(), all.end(), [](const Item& x, const Item& y) { return x.value < y.value; });

  // Mid ranks for ties, and the tie term sum(t^3 - t) for the variance.
  const double n = double(n1 + n2);
  double rank_sum_a = 0, tie_term = 0;
  for (size_t i = 0; i < all.size();) {
    size_t j = i;
    while (j < all.size() && all[j].value == all[i].value) ++j;
    double t = double(j - i);
    double mid_rank = (double(i + 1) + double(j)) / 2.0;  // ranks i+1 .. j
    for (size_t k = i; k < j; ++k)
      if (all[k].first) rank_sum_a += mid_rank;
    tie_term += t * t * t - t;
    i = j;
  }
  r.u = rank_sum_a - double(n1) * double(n1 + 1) / 2.0;
  const double mean_u = double(n1) * double(n2) / 2.0;
  const double var_u = double(n1) * double(n2) / 12.0 * ((n + 1) - tie_term / (n * (n - 1)));
  if (var_u <= 0) {
    r.z = 0;
    r.p_value = 1;
    return r;
  }
  double diff = r.u - mean_u;
  // Continuity correction towards the mean.
  double corrected = diff > 0 ? std::max(0.0, diff - 0.5) : std::min(0.0, diff + 0.5);
  r.z = corrected / std::sqrt(var_u);
  r.p_value = std::min(1.0, 2.0 * normal_sf(std::fabs(r.z)));
  return r;
}

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::Same: return "same";
    case Verdict::Faster: return "faster";
    case Verdict::Slower: return "slower";
    case Verdict::Unsure: return "unsure";
  }
  return "?";
}

Comparison compare_samples(const std::vector<double>& base, const std::vector<double>& next,
                           const VerdictOptions& options) {
  Comparison c;
  if (base.empty() || next.empty()) {
    c.verdict = Verdict::Unsure;
    c.reason = "no samples";
    return c;
  }
  Stats sb = compute_stats(base), sn = compute_stats(next);
  c.ratio = sb.median > 0 ? sn.median / sb.median : (sn.median > 0 ? INFINITY : 1.0);
  const bool slower = c.ratio > 1;
  const double change = std::fabs(c.ratio - 1);

  bool significant;
  if (base.size() >= options.min_samples_for_test && next.size() >= options.min_samples_for_test) {
    MannWhitney mw = mann_whitney(next, base);
    c.tested = true;
    c.p_value = mw.p_value;
    // The direction of the test must agree with the medians.
    significant = mw.p_value < options.alpha && ((mw.z > 0) == slower);
  } else {
    // Too few samples for the test: the sample ranges must not overlap.
    significant = slower ? sn.min > sb.max : sn.max < sb.min;
  }

  if (change <= options.threshold) {
    c.verdict = Verdict::Same;
    c.reason = fmt::format("within {:.1f}%", options.threshold * 100);
  } else if (significant) {
    c.verdict = slower ? Verdict::Slower : Verdict::Faster;
    c.reason = c.tested ? fmt::format("p={:.2g}", c.p_value) : "ranges do not overlap";
  } else {
    c.verdict = Verdict::Unsure;
    c.reason = c.tested ? fmt::format("not significant (p={:.2g})", c.p_value) : "ranges overlap";
  }
  return c;
}

}  // namespace lrrt::tool::bench

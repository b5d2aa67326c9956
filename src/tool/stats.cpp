#include "tool/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace lrrt::tool {

double quantile_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  if (q <= 0) return sorted.front();
  if (q >= 1) return sorted.back();
  double pos = q * double(sorted.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  double frac = pos - double(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Stats compute_stats(std::vector<double> samples) {
  Stats s;
  s.samples = samples.size();
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.min = samples.front();
  s.max = samples.back();
  s.median = quantile_sorted(samples, 0.5);
  s.p90 = quantile_sorted(samples, 0.9);
  double sum = std::accumulate(samples.begin(), samples.end(), 0.0);
  s.mean = sum / double(samples.size());
  if (samples.size() > 1) {
    double acc = 0;
    for (double v : samples) acc += (v - s.mean) * (v - s.mean);
    s.stddev = std::sqrt(acc / double(samples.size() - 1));
  }
  return s;
}

}  // namespace lrrt::tool

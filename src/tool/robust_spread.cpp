#include "tool/robust_spread.hpp"

#include <algorithm>
#include <cmath>

namespace lrrt::tool {

namespace {

// The median of v (reordered): the mean of the two middle values for an even count.
double median_of(std::vector<uint64_t>& v) {
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + long(mid), v.end());
  const double upper = double(v[mid]);
  if (v.size() % 2) return upper;
  const double lower = double(*std::max_element(v.begin(), v.begin() + long(mid)));
  return (lower + upper) / 2;
}

}  // namespace

Spread robust_spread(const std::vector<uint64_t>& samples, std::vector<uint64_t>& scratch) {
  Spread s;
  if (samples.empty()) return s;
  s.slowest = *std::max_element(samples.begin(), samples.end());
  scratch.assign(samples.begin(), samples.end());
  s.median = median_of(scratch);
  if (samples.size() < 2 || s.median <= 0) return s;
  // Deviations doubled, so that a median halfway between integers stays exact.
  const uint64_t twice_median = static_cast<uint64_t>(std::llround(2 * s.median));
  for (size_t i = 0; i < samples.size(); ++i) {
    const uint64_t twice = 2 * samples[i];
    scratch[i] = twice > twice_median ? twice - twice_median : twice_median - twice;
  }
  const double mad = median_of(scratch) / 2;
  const double sigma = 1.4826 * mad;
  s.noise = sigma / s.median;
  const double limit = kOutlierSigmas * sigma;
  for (uint64_t v : samples)
    if (std::fabs(double(v) - s.median) > limit && (sigma > 0 || double(v) != s.median)) ++s.outliers;
  return s;
}

bool noise_converged(const std::vector<Spread>& history) {
  if (history.size() < kConvergenceWindow) return false;
  const Spread& now = history.back();
  if (now.noise <= 0 || now.median <= 0) return false;
  double sq = 0;
  double lo = now.median, hi = now.median;
  for (size_t i = history.size() - kConvergenceWindow; i < history.size(); ++i) {
    const double d = history[i].noise - now.noise;
    sq += d * d;
    lo = std::min(lo, history[i].median);
    hi = std::max(hi, history[i].median);
  }
  const double spread = std::sqrt(sq / double(kConvergenceWindow)) / now.noise;
  return spread < kConvergedSpread && (hi - lo) / now.median <= now.noise;
}

}  // namespace lrrt::tool

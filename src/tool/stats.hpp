// Summary statistics of timing samples, for `lrrt run` and `lrrt bench`
// alike: min, median, mean, sample standard deviation, p90, max.
#pragma once

#include <cstddef>
#include <vector>

namespace lrrt::tool {

struct Stats {
  size_t samples = 0;
  double min = 0, median = 0, mean = 0, stddev = 0, p90 = 0, max = 0;
};

// Linear interpolation between closest ranks (numpy's default); `sorted`
// must be sorted ascending; q in [0, 1]; 0 when empty.
double quantile_sorted(const std::vector<double>& sorted, double q);

// Sample standard deviation (n - 1); 0 for fewer than two samples.
Stats compute_stats(std::vector<double> samples);

}  // namespace lrrt::tool

// How every benchmark samples: warm-up, then repeat until a minimum time and
// a minimum number of samples are both reached (or a cap), one sample being
// nanoseconds per operation.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

namespace lrrt::tool::bench {

struct SamplingOptions {
  double min_time_s = 0.2;   // keep sampling until this much time passed ...
  size_t min_samples = 10;   // ... and at least this many samples
  size_t max_samples = 1000;
  double max_time_s = 3.0;   // stop after this (once 3 samples exist)
  size_t warmup = 2;
};

// Default sampling for normal and --quick runs.
SamplingOptions default_sampling(bool quick);

// Warm-up, then op() until min time and min samples (or the caps). op
// returns nanoseconds per operation of one sample.
std::vector<double> sample(const SamplingOptions& options, const std::function<double()>& op);
// The same for ops that time several things at once: op fills `count` values.
std::vector<std::vector<double>> sample_multi(const SamplingOptions& options, size_t count,
                                              const std::function<void(double*)>& op);

// Nanoseconds from a steady clock.
double now_ns();
// CPU time of the calling thread, in ns: beside a wall time it tells a thread
// that was descheduled (wall > CPU) from one that ran slower or spun.
double thread_cpu_ns();

}  // namespace lrrt::tool::bench

#include "tool/bench/sampler.hpp"

#include <time.h>

#include <chrono>

namespace lrrt::tool::bench {

double now_ns() {
  return double(std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::steady_clock::now().time_since_epoch())
                    .count());
}

double thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e9 + double(ts.tv_nsec);
}

SamplingOptions default_sampling(bool quick) {
  SamplingOptions o;
  if (quick) {
    o.min_time_s = 0.03;
    o.min_samples = 5;
    o.max_samples = 300;
    o.max_time_s = 0.5;
    o.warmup = 1;
  }
  return o;
}

std::vector<std::vector<double>> sample_multi(const SamplingOptions& o, size_t count,
                                              const std::function<void(double*)>& op) {
  std::vector<double> tmp(count);
  const double start = now_ns();
  for (size_t i = 0; i < o.warmup; ++i) {
    op(tmp.data());
    if (now_ns() - start > o.max_time_s * 0.25e9) break;  // slow ops: one warm-up is enough
  }
  std::vector<std::vector<double>> out(count);
  const double t0 = now_ns();
  for (;;) {
    op(tmp.data());
    for (size_t k = 0; k < count; ++k) out[k].push_back(tmp[k]);
    const size_t n = out[0].size();
    const double elapsed = (now_ns() - t0) / 1e9;
    if (n >= o.max_samples) break;
    if (n >= o.min_samples && elapsed >= o.min_time_s) break;
    if (n >= 3 && elapsed >= o.max_time_s) break;
  }
  return out;
}

std::vector<double> sample(const SamplingOptions& o, const std::function<double()>& op) {
  return std::move(sample_multi(o, 1, [&](double* v) { v[0] = op(); })[0]);
}

}  // namespace lrrt::tool::bench

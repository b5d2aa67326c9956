// The noise behind `lrrt run`'s stopping criterion: a robust spread with
// outliers counted apart, and the convergence check. Synthetic samples with
// known spread; fresh seeds each run. No timing is measured or asserted here.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "tool/robust_spread.hpp"

using namespace lrrt::tool;

namespace {

std::vector<uint64_t> normal_ns(double mean, double sd, size_t n, std::mt19937_64& gen) {
  std::normal_distribution<double> d(mean, sd);
  std::vector<uint64_t> v(n);
  for (auto& x : v) x = static_cast<uint64_t>(std::llround(std::max(1.0, d(gen))));
  return v;
}

}  // namespace

TEST_CASE("robust spread: the noise of normal samples is their relative standard deviation") {
  std::mt19937_64 gen(std::random_device{}());
  std::vector<uint64_t> scratch;
  for (double rel : {0.004, 0.02, 0.1}) {
    const auto s = normal_ns(5000, 5000 * rel, 200000, gen);
    const Spread sp = robust_spread(s, scratch);
    CHECK(sp.median == doctest::Approx(5000).epsilon(0.01));
    CHECK(sp.noise == doctest::Approx(rel).epsilon(0.05));  // 200,000 samples: within a few percent
  }
}

TEST_CASE("robust spread: rare outliers are counted, not folded into the noise") {
  std::mt19937_64 gen(std::random_device{}());
  std::vector<uint64_t> s = normal_ns(4600, 46, 100000, gen);  // 1% noise
  // 0.3% of the samples hit by a preemption: 20x to 100x the median, at random places.
  std::uniform_int_distribution<size_t> where(0, s.size() - 1);
  std::uniform_real_distribution<double> how(20, 100);
  std::vector<bool> hit(s.size(), false);
  size_t injected = 0;
  while (injected < 300) {
    const size_t i = where(gen);
    if (hit[i]) continue;
    hit[i] = true;
    s[i] = static_cast<uint64_t>(4600 * how(gen));
    ++injected;
  }
  std::vector<uint64_t> scratch;
  const Spread sp = robust_spread(s, scratch);
  CHECK(sp.noise == doctest::Approx(0.01).epsilon(0.1));
  // Every injected sample is an outlier; of the normal ones, beyond 5 sigma, essentially none.
  CHECK(sp.outliers >= injected);
  CHECK(sp.outliers <= injected + 2);
  uint64_t slowest = 0;
  for (uint64_t v : s) slowest = std::max(slowest, v);
  CHECK(sp.slowest == slowest);
  // The standard deviation the stopping criterion used before: dominated by the outliers.
  double mean = 0, sq = 0;
  for (uint64_t v : s) mean += double(v) / double(s.size());
  for (uint64_t v : s) sq += (double(v) - mean) * (double(v) - mean);
  CHECK(std::sqrt(sq / double(s.size() - 1)) / mean > 0.5);
}

TEST_CASE("robust spread: small and degenerate inputs") {
  std::vector<uint64_t> scratch;
  CHECK(robust_spread({}, scratch).noise == 0);
  const Spread one = robust_spread({7}, scratch);
  CHECK(one.median == 7);
  CHECK(one.noise == 0);
  // An even count: the median is the mean of the middle two, the MAD exact.
  const Spread four = robust_spread({10, 20, 30, 40}, scratch);
  CHECK(four.median == 25);
  CHECK(four.noise == doctest::Approx(1.4826 * 10 / 25));
  // More than half the samples equal: no spread, every other sample an outlier.
  const Spread flat = robust_spread({5, 5, 5, 5, 9, 1}, scratch);
  CHECK(flat.noise == 0);
  CHECK(flat.outliers == 2);
}

TEST_CASE("noise convergence: stable noise converges, a moving one does not") {
  std::mt19937_64 gen(std::random_device{}());
  std::uniform_real_distribution<double> jitter(-0.01, 0.01);
  std::vector<Spread> history;
  for (size_t i = 0; i + 1 < kConvergenceWindow; ++i) history.push_back({4600, 0.03 * (1 + jitter(gen)), 0, 0});
  CHECK_FALSE(noise_converged(history));  // one check short of the window
  history.push_back({4600, 0.03, 0, 0});
  CHECK(noise_converged(history));

  // Still falling by 3% a check: not converged.
  std::vector<Spread> falling;
  for (size_t i = 0; i < 2 * kConvergenceWindow; ++i) falling.push_back({4600, 0.2 * std::pow(0.97, double(i)), 0, 0});
  CHECK_FALSE(noise_converged(falling));

  // Stable noise, but the median drifting by more than the noise over the window.
  std::vector<Spread> drifting;
  for (size_t i = 0; i < kConvergenceWindow; ++i) drifting.push_back({4600 * (1 + 0.005 * double(i)), 0.03, 0, 0});
  CHECK_FALSE(noise_converged(drifting));

  // No noise at all is met by --max-noise, never by convergence.
  std::vector<Spread> zero(kConvergenceWindow, Spread{4600, 0, 0, 0});
  CHECK_FALSE(noise_converged(zero));
}

// Statistics behind lrrt bench and the verdicts of lrrt compare: synthetic
// samples with known answers. No timing is measured or asserted here.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "tool/bench_result.hpp"
#include "tool/bench_stats.hpp"
#include "tool/bundle.hpp"
#include "tool/units.hpp"

using namespace lrrt::tool;
using namespace lrrt::tool::bench;

namespace {

std::vector<double> normal_samples(double mean, double sd, size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> d(mean, sd);
  std::vector<double> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

}  // namespace

TEST_CASE("bench stats: summary statistics of known samples") {
  Stats s = compute_stats({5, 1, 4, 2, 3});
  CHECK(s.samples == 5);
  CHECK(s.min == 1);
  CHECK(s.max == 5);
  CHECK(s.median == 3);
  CHECK(s.mean == doctest::Approx(3));
  CHECK(s.stddev == doctest::Approx(std::sqrt(2.5)));
  CHECK(s.p90 == doctest::Approx(4.6));  // numpy: percentile([1..5], 90) = 4.6

  Stats even = compute_stats({1, 2, 3, 4});
  CHECK(even.median == doctest::Approx(2.5));

  Stats one = compute_stats({7});
  CHECK(one.median == 7);
  CHECK(one.stddev == 0);
  CHECK(compute_stats({}).samples == 0);
}

TEST_CASE("bench stats: quantiles interpolate between ranks") {
  std::vector<double> v{10, 20, 30, 40, 50, 60, 70, 80, 90, 100};
  CHECK(quantile_sorted(v, 0) == 10);
  CHECK(quantile_sorted(v, 1) == 100);
  CHECK(quantile_sorted(v, 0.5) == doctest::Approx(55));
  CHECK(quantile_sorted(v, 0.9) == doctest::Approx(91));
}

TEST_CASE("bench stats: Mann-Whitney U against hand-computed values") {
  // a entirely below b: U(a) = 0, the most extreme value.
  MannWhitney r = mann_whitney({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10});
  CHECK(r.u == 0);
  CHECK(r.z < 0);
  // n1 = n2 = 5: mean 12.5, sd sqrt(5*5*11/12) = 4.787; z = (0 - 12.5 + 0.5) / 4.787 = -2.507
  CHECK(r.z == doctest::Approx(-2.5067).epsilon(0.001));
  CHECK(r.p_value == doctest::Approx(0.01219).epsilon(0.01));

  // Interleaved: U = n1*n2/2, no evidence.
  MannWhitney even = mann_whitney({1, 4, 5, 8}, {2, 3, 6, 7});
  CHECK(even.u == doctest::Approx(8));
  CHECK(even.p_value > 0.5);

  // Ties everywhere: no variation, p = 1.
  MannWhitney ties = mann_whitney({3, 3, 3}, {3, 3, 3});
  CHECK(ties.p_value == 1);

  // Ties get mid ranks: {1, 2, 2} vs {2, 3}: ranks 1, 3, 3 | 3, 5 -> R1 = 7, U = 1.
  CHECK(mann_whitney({1, 2, 2}, {2, 3}).u == doctest::Approx(1));
  CHECK(normal_sf(0) == doctest::Approx(0.5));
  CHECK(normal_sf(1.959964) == doctest::Approx(0.025).epsilon(0.001));
}

TEST_CASE("bench verdict: identical distributions are the same") {
  auto a = normal_samples(1000, 30, 200, 1);
  auto b = normal_samples(1000, 30, 200, 2);
  Comparison c = compare_samples(a, b);
  CHECK(c.verdict == Verdict::Same);
  CHECK(c.ratio == doctest::Approx(1).epsilon(0.02));
  // The very same samples.
  CHECK(compare_samples(a, a).verdict == Verdict::Same);
}

TEST_CASE("bench verdict: a real regression is flagged, an improvement too") {
  auto base = normal_samples(1000, 20, 100, 3);
  auto slow = normal_samples(1200, 20, 100, 4);  // 20% slower
  Comparison c = compare_samples(base, slow);
  CHECK(c.verdict == Verdict::Slower);
  CHECK(c.ratio == doctest::Approx(1.2).epsilon(0.02));
  CHECK(c.tested);
  CHECK(c.p_value < 1e-6);

  Comparison f = compare_samples(slow, base);
  CHECK(f.verdict == Verdict::Faster);
}

TEST_CASE("bench verdict: a small significant change within the threshold is the same") {
  auto base = normal_samples(1000, 1, 200, 5);
  auto next = normal_samples(1020, 1, 200, 6);  // 2% slower, very significant
  CHECK(compare_samples(base, next).verdict == Verdict::Same);
  VerdictOptions tight;
  tight.threshold = 0.01;
  CHECK(compare_samples(base, next, tight).verdict == Verdict::Slower);
}

TEST_CASE("bench verdict: a large change drowned in noise is unsure") {
  // Medians differ by ~10% but the spread is huge and the samples few.
  std::vector<double> base{100, 300, 50, 400, 80, 250, 120};
  std::vector<double> next{110, 330, 60, 420, 90, 280, 135};
  Comparison c = compare_samples(base, next);
  CHECK(c.ratio > 1.05);
  CHECK(c.verdict == Verdict::Unsure);
}

TEST_CASE("bench verdict: few samples fall back to range overlap") {
  Comparison apart = compare_samples({100, 101, 102}, {150, 151, 152});
  CHECK_FALSE(apart.tested);
  CHECK(apart.verdict == Verdict::Slower);
  Comparison overlap = compare_samples({100, 140, 102}, {130, 151, 152});
  CHECK(overlap.verdict == Verdict::Unsure);
  CHECK(compare_samples({}, {1}).verdict == Verdict::Unsure);
}

TEST_CASE("bench sizes: lists, ranges and suffixes") {
  CHECK(parse_size("4096") == 4096);
  CHECK(parse_size("4K") == 4096);
  CHECK(parse_size("64KiB") == 65536);
  CHECK(parse_size("1M") == (1u << 20));
  CHECK(parse_size("1GiB") == (1ull << 30));
  CHECK(parse_sizes("4K,1M,4K") == std::vector<uint64_t>{4096, 1u << 20});
  auto range = parse_sizes("4KiB..1GiB");
  CHECK(range.size() == 10);
  CHECK(range.front() == 4096);
  CHECK(range.back() == (1ull << 30));
  CHECK(parse_sizes("1K..8K:2") == std::vector<uint64_t>{1024, 2048, 4096, 8192});
  CHECK_THROWS_AS(parse_size("12Q"), lrrt::tool::InputError);
  CHECK_THROWS_AS(parse_size("K"), lrrt::tool::InputError);
  CHECK_THROWS_AS(parse_sizes("8K..4K"), lrrt::tool::InputError);
  CHECK_THROWS_AS(parse_sizes("1K..8K:x"), lrrt::tool::InputError);
  CHECK_THROWS_AS(parse_size("99999999999999999999K"), lrrt::tool::InputError);
}

TEST_CASE("bench sizes: no size wraps and no range runs away") {
  // 2^34 G is 2^64 bytes: it used to wrap to 0.
  CHECK_THROWS_AS(parse_size("17179869184G"), lrrt::tool::InputError);
  CHECK_THROWS_AS(parse_size("1048577G"), lrrt::tool::InputError);  // just over 1 PiB
  CHECK(parse_size("1048576G") == (1ull << 50));
  // A range whose top is near 2^64 used to multiply past it, wrap and loop.
  CHECK_THROWS_AS(parse_sizes("1..17179869183G"), lrrt::tool::InputError);
  auto top = parse_sizes("1..1048576G:2");
  CHECK(top.size() == 51);
  CHECK(top.back() == (1ull << 50));
  for (size_t i = 1; i < top.size(); ++i) CHECK(top[i] == 2 * top[i - 1]);
  // A step that overshoots hi stops at the last size below it.
  CHECK(parse_sizes("3..100:7") == std::vector<uint64_t>{3, 21});
  CHECK_THROWS_AS(parse_sizes("1..1048576G:2,3..1048576G:2,5..1048576G:2,7..1048576G:2,9..1048576G:2,"
                              "11..1048576G:2"),
                  lrrt::tool::InputError);  // more than 256 sizes
}

// lrrt compare's matching, verdict counting and the JSON round trip of bench
// results, on synthetic result sets.
#include <doctest/doctest.h>

#include <random>

#include "tool/bench_result.hpp"
#include "tool/compare_core.hpp"
#include "tool/printers/printer.hpp"

using namespace lrrt::tool::bench;
using lrrt::tool::printers::render;

namespace {

Measurement make(const std::string& metric, const std::string& impl, double mean, unsigned seed,
                 uint64_t size = 0) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> d(mean, mean * 0.02);
  Measurement m;
  m.benchmark = "copy-bandwidth";
  m.metric = metric;
  m.backend = "host";
  m.impl = impl;
  m.params = {{"direction", "h2d"}, {"memory", "pinned"}};
  m.size = size;
  m.bytes = size;
  for (int i = 0; i < 50; ++i) m.samples.push_back(d(gen));
  m.stats = compute_stats(m.samples);
  return m;
}

}  // namespace

TEST_CASE("compare: matches by name and parameters and flags the regression") {
  ResultSet base, next;
  base.measurements = {make("copy", "lrrt", 1000, 1, 4096), make("copy", "lrrt", 5000, 2, 1 << 20),
                       make("copy", "native", 1000, 3, 4096), make("copy", "lrrt", 100, 4, 64)};
  next.measurements = {make("copy", "lrrt", 1000, 5, 4096), make("copy", "lrrt", 6000, 6, 1 << 20),
                       make("copy", "native", 2000, 7, 4096), make("copy", "lrrt", 100, 8, 128)};
  CompareReport r = compare_results(base, next);
  REQUIRE(r.rows.size() == 2);  // native skipped, the 64/128 sizes do not match
  CHECK(r.same == 1);
  CHECK(r.slower == 1);
  CHECK(r.regression());
  CHECK(r.only_in_base.size() == 1);
  CHECK(r.only_in_new.size() == 1);

  CompareOptions with_native;
  with_native.include_native = true;
  CompareReport rn = compare_results(base, next, with_native);
  CHECK(rn.rows.size() == 3);
  CHECK(rn.slower == 2);

  auto j = report_json(r, {});
  CHECK(render(j, "markdown").find("SLOWER") != std::string::npos);
  CHECK(j["summary"]["slower"] == 1);
  CHECK(j["summary"]["regression"] == true);
}

TEST_CASE("compare: a row measured through another API is unsure, not a regression") {
  ResultSet base, next;
  base.measurements = {make("copy", "lrrt", 1000, 1, 4096), make("copy", "lrrt", 1000, 2, 1 << 20)};
  next.measurements = {make("copy", "lrrt", 3000, 3, 4096), make("copy", "lrrt", 3000, 4, 1 << 20)};
  base.measurements[0].api = next.measurements[0].api = "lr_memcpy";  // same method: slower
  base.measurements[1].api = "lr_memcpy";
  next.measurements[1].api = "lr_memcpy_async + lr_synchronize";
  CompareReport r = compare_results(base, next);
  REQUIRE(r.rows.size() == 2);
  CHECK(r.slower == 1);
  CHECK(r.unsure == 1);
  const CompareRow& changed = r.rows[0].key == base.measurements[1].key() ? r.rows[0] : r.rows[1];
  CHECK(changed.comparison.verdict == Verdict::Unsure);
  CHECK(changed.comparison.reason.find("lr_memcpy_async") != std::string::npos);
  CHECK(changed.comparison.ratio > 2.5);
}

TEST_CASE("compare: a run against itself is all same") {
  ResultSet base;
  base.measurements = {make("copy", "lrrt", 1000, 1, 4096), make("copy", "lrrt", 5000, 2, 1 << 20)};
  CompareReport r = compare_results(base, base);
  CHECK(r.same == 2);
  CHECK_FALSE(r.regression());
}

TEST_CASE("bench summaries are data the printers phrase") {
  Summary s;
  s.label = "empty dispatch, launch + synchronize";
  s.value = 4064.5;
  s.unit = "ns";
  CHECK(phrase(s) == "empty dispatch, launch + synchronize: 4.06 us");
  s.baseline = 48;
  s.baseline_label = "native";
  CHECK(phrase(s) == "empty dispatch, launch + synchronize: 4.06 us vs native 48 ns (84.68x)");
  s.note = "lr_set_wait_spin_us(0)";
  CHECK(phrase(s).ends_with(" (84.68x); lr_set_wait_spin_us(0)"));
  s.baseline = 0;  // no ratio against nothing
  CHECK_FALSE(s.ratio());
  CHECK(format_value(0.477, "fraction") == "48%");
  CHECK(format_value(1.351, "x") == "1.35x");
  CHECK(format_value(9.52, "GB/s") == "9.52 GB/s");
  // Older files have a sentence and no label: it is kept and printed as is.
  auto old = from_json(nlohmann::json::parse(R"({"measurements": [], "summaries": [
      {"benchmark": "double-buffer", "backend": "host", "name": "speedup", "value": 1.26, "unit": "x",
       "text": "8 x 4 MiB: sequential 1.62 ms per iteration, double-buffered 1.28 ms -> speedup 1.26x"}]})"));
  REQUIRE(old.summaries.size() == 1);
  CHECK(phrase(old.summaries[0]).starts_with("8 x 4 MiB: sequential"));
  CHECK(lrrt::tool::printers::render(to_json(old), "table").find("speedup 1.26x") != std::string::npos);
}

TEST_CASE("compare: bench JSON round trip keeps keys and samples") {
  ResultSet r;
  r.meta = {{"version", "0.1.0"}};
  r.measurements = {make("copy", "lrrt", 1000, 1, 4096), make("copy", "native", 900, 2, 4096)};
  Summary s;
  s.benchmark = "copy-bandwidth";
  s.backend = "host";
  s.name = "h2d-pinned-4096";
  s.label = "h2d pinned 4 KiB";
  s.value = 9.5;
  s.unit = "GB/s";
  s.baseline = 10;
  s.baseline_label = "native";
  r.summaries.push_back(s);
  auto doc = to_json(r);
  ResultSet back = from_json(doc);
  REQUIRE(back.measurements.size() == 2);
  CHECK(back.measurements[0].key() == r.measurements[0].key());
  CHECK(back.measurements[0].samples == r.measurements[0].samples);
  CHECK(back.measurements[0].stats.median == doctest::Approx(r.measurements[0].stats.median));
  REQUIRE(back.summaries.size() == 1);
  CHECK(back.summaries[0].label == s.label);
  CHECK(back.summaries[0].value == 9.5);
  CHECK(back.summaries[0].baseline == 10);
  CHECK(back.summaries[0].ratio() == doctest::Approx(0.95));
  CHECK(doc["summaries"][0]["ratio"] == doctest::Approx(0.95));
  CHECK(compare_results(r, back).same == 1);

  auto google = to_google_benchmark(r);
  CHECK(google["benchmarks"].size() == 8);
  CHECK(google["benchmarks"][0]["time_unit"] == "ns");
  CHECK(render(doc, "csv").find("copy-bandwidth,copy,host,lrrt") != std::string::npos);
  bool has_ratio = render(doc, "table").find("x bw") != std::string::npos;
  CHECK(has_ratio);
}

#include "tool/verify.hpp"

#include <cmath>

namespace lrrt::tool {

bool isclose(long double got, long double expected, double rtol, double atol, bool equal_nan) {
  const bool gn = std::isnan(got), en = std::isnan(expected);
  if (gn || en) return gn && en && equal_nan;
  if (std::isinf(got) || std::isinf(expected)) return got == expected;
  return std::fabs(got - expected) <= static_cast<long double>(atol) + static_cast<long double>(rtol) * std::fabs(expected);
}

CompareResult compare_allclose(DType got_type, const std::byte* got, DType expected_type, const std::byte* expected,
                               uint64_t count, double rtol, double atol, bool equal_nan, size_t max_reported) {
  CompareResult r;
  r.compared = count;
  for (uint64_t i = 0; i < count; ++i) {
    const long double g = load_element(got_type, got, i);
    const long double e = load_element(expected_type, expected, i);
    if (std::isfinite(g) && std::isfinite(e)) {
      const long double abs_err = std::fabs(g - e);
      if (abs_err > r.max_abs_error) r.max_abs_error = abs_err;
      if (e != 0) {
        const long double rel = abs_err / std::fabs(e);
        if (rel > r.max_rel_error) r.max_rel_error = rel;
      }
    }
    if (!isclose(g, e, rtol, atol, equal_nan)) {
      ++r.mismatches;
      if (r.first.size() < max_reported) r.first.push_back({i, g, e});
    }
  }
  return r;
}

nlohmann::json number_json(long double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == std::floor(v) && std::fabs(v) < 9.2e18L) {
    if (v >= 0) return static_cast<uint64_t>(v);
    return static_cast<int64_t>(v);
  }
  return static_cast<double>(v);
}

nlohmann::json compare_result_json(const CompareResult& r, const std::vector<uint64_t>& shape) {
  nlohmann::json first = nlohmann::json::array();
  for (const auto& m : r.first) {
    nlohmann::json e{{"index", m.index}, {"got", number_json(m.got)}, {"expected", number_json(m.expected)}};
    if (shape.size() > 1) {
      std::vector<uint64_t> coords(shape.size());
      uint64_t rem = m.index;
      for (size_t d = shape.size(); d-- > 0;) {
        coords[d] = rem % shape[d];
        rem /= shape[d];
      }
      e["coords"] = coords;
    }
    first.push_back(std::move(e));
  }
  return {{"compared", r.compared},
          {"mismatches", r.mismatches},
          {"max_abs_error", static_cast<double>(r.max_abs_error)},
          {"max_rel_error", static_cast<double>(r.max_rel_error)},
          {"first_mismatches", first}};
}

}  // namespace lrrt::tool

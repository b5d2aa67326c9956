// Complex outputs (c64, c128): compared element by element, each part with
// numpy's isclose, so a tolerance applies to the real and the imaginary part
// alike (docs/manifest.md, "verify").
#include <cmath>
#include <cstring>

#include "tool/verify.hpp"

namespace lrrt::tool {

CompareResult compare_allclose_complex(DType got_type, const std::byte* got, DType expected_type, const std::byte* expected,
                                       uint64_t count, double rtol, double atol, bool equal_nan, size_t max_reported,
                                       const Origin* origin) {
  CompareResult r;
  r.compared = count;
  const DType gp = dtype_part(got_type), ep = dtype_part(expected_type);
  const size_t gparts = dtype_parts(got_type), eparts = dtype_parts(expected_type);
  const size_t size = dtype_size(got_type);
  for (uint64_t i = 0; i < count; ++i) {
    const long double g[2] = {load_element(gp, got, i * gparts), gparts == 2 ? load_element(gp, got, i * 2 + 1) : 0};
    const long double e[2] = {load_element(ep, expected, i * eparts), eparts == 2 ? load_element(ep, expected, i * 2 + 1) : 0};
    bool ok = true;
    if (origin && origin[i] == Origin::Untouched && expected_type == got_type) {
      // Left as it was by the reference: bit for bit, as for real types.
      ++r.untouched;
      ok = std::memcmp(got + i * size, expected + i * size, size) == 0;
    } else {
      if (origin && origin[i] == Origin::FromPoison) ++r.from_poison;
      for (int p = 0; p < 2; ++p) {
        if (std::isfinite(g[p]) && std::isfinite(e[p])) {
          const long double abs_err = std::fabs(g[p] - e[p]);
          if (abs_err > r.max_abs_error) r.max_abs_error = abs_err;
          if (e[p] != 0 && abs_err / std::fabs(e[p]) > r.max_rel_error) r.max_rel_error = abs_err / std::fabs(e[p]);
        }
        ok = ok && isclose(g[p], e[p], rtol, atol, equal_nan);
      }
    }
    if (!ok) {
      ++r.mismatches;
      if (r.first.size() < max_reported) r.first.push_back({i, g[0], e[0], true, g[1], e[1]});
    }
  }
  return r;
}

}  // namespace lrrt::tool

// libFuzzer target: the result-file reader of `lrrt compare` (strict JSON,
// then the lrrt-bench schema), and the comparison of a file with itself.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tool/bench_result.hpp"
#include "tool/compare_core.hpp"
#include "tool/bundle.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lrrt::tool;
  try {
    auto doc = parse_json_strict(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
    auto results = bench::from_json(doc);
    auto report = compare_results(results, results);
    (void)report_json(report, {});
  } catch (const InputError&) {
  }
  return 0;
}

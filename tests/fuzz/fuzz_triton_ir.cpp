// libFuzzer target: the Triton IR access analysis (docs/access.md). Any
// text: never a crash; when analysed, a mode for every parameter, and
// analysing the same text again gives the same answer.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "lrrt/formats/triton_access.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lrrt::formats;
  const std::string_view ir(reinterpret_cast<const char*>(data), size);
  // The kernel is the first public function the text names, else "k".
  std::string_view kernel = "k";
  if (const size_t at = ir.find("tt.func public @"); at != std::string_view::npos) {
    const std::string_view rest = ir.substr(at + 16);
    kernel = rest.substr(0, rest.find('('));
  }
  const TritonAccess a = analyze_triton_access(ir, kernel);
  if (!a.analysed) {
    if (a.failure.empty() || !a.params.empty()) std::abort();
    return 0;
  }
  const TritonAccess again = analyze_triton_access(ir, kernel);
  if (!again.analysed || again.params.size() != a.params.size()) std::abort();
  for (size_t i = 0; i < a.params.size(); ++i) {
    const auto& p = a.params[i];
    if (p.name.empty() || (!p.pointer && (p.read || p.write))) std::abort();
    if (p.mode() != again.params[i].mode()) std::abort();
  }
  return 0;
}

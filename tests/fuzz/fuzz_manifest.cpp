// libFuzzer target: the manifest reader and validator (strict JSON, then
// every field check, then the kernel-argument layout). Any input must end in
// a parsed manifest or an InputError; nothing else may escape or crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "lrrt/bundle.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lrrt::bundle;
  try {
    auto doc = parse_json_strict(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
    Manifest m = parse_manifest(doc, "/nonexistent-fuzz-dir");
    (void)layout_kernargs(m.args);
  } catch (const InputError&) {
  }
  return 0;
}

// Sequence manifests: repeat, after and patch, a step's access derived from
// the code object, and errors that name the step and the field.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "lrrt/bundle.hpp"
#include "manifest_test_support.hpp"

using nlohmann::json;
using namespace lrrt::bundle;
namespace fs = std::filesystem;
using namespace lrrt::test::manifest_test;

namespace {

std::string sequence_error(const json& j, std::string* message = nullptr) {
  try {
    parse(j);
  } catch (const ManifestError& e) {
    if (message) *message = e.what();
    return e.pointer();
  }
  return "";
}

}  // namespace

TEST_CASE("manifest: a sequence expands repeat, resolves after to the latest earlier repetition, and parses patch") {
  const Manifest m = parse(sequence_base());
  REQUIRE(m.sequence);
  const Sequence& s = *m.sequence;
  CHECK(m.name == "sequence");
  CHECK(m.kernel.empty());
  CHECK(m.args.empty());
  REQUIRE(s.kernels.size() == 2);
  CHECK(s.kernels[0].alias == "add");  // object keys in order
  CHECK(s.kernels[0].kernel == "vector_add_f32");
  CHECK(s.kernels[1].kernel == "saxpy");  // defaults to the alias
  CHECK(s.written_steps == 4);
  REQUIRE(s.steps.size() == 2 + 3 * 2);
  CHECK(s.dispatches() == 6);
  CHECK(s.steps[0].kind == SequenceStep::Kind::Copy);
  CHECK(s.steps[0].bytes == 40);
  CHECK(s.steps[0].to_offset == 8);
  CHECK(s.steps[1].kind == SequenceStep::Kind::Fill);
  CHECK(s.steps[1].pattern_size == 4);
  CHECK(s.steps[1].to_offset == 4);
  CHECK(s.steps[1].bytes == 8);
  float pattern = 0;
  std::memcpy(&pattern, s.steps[1].pattern.data(), 4);
  CHECK(pattern == 1.5f);
  for (size_t r = 0; r < 3; ++r) {
    const SequenceStep& k = s.steps[2 + 2 * r];
    const SequenceStep& sum = s.steps[3 + 2 * r];
    CHECK(k.label == "step[" + std::to_string(r) + "]");
    CHECK(k.repetition == r);
    CHECK(k.written == 2);
    CHECK(k.args[1].access == Access::Read);
    CHECK(k.args[1].range_offset == 16);
    CHECK(k.args[1].range_bytes == 64);
    CHECK(k.args[2].access == Access::ReadWrite);
    CHECK(k.args[2].range_bytes == 0);
    // after: the latest earlier instance of each named step.
    CHECK(sum.after == std::vector<size_t>{2 + 2 * r, 0});
    CHECK(sum.launch.workgroup_count[0] == 4);
  }
  REQUIRE(s.patch);
  CHECK(s.patch->written == 2);
  CHECK(s.patch->arg == 0);
  REQUIRE(s.patch->values.size() == 2);
  float v = 0;
  std::memcpy(&v, s.patch->encoded[1].data(), 4);
  CHECK(v == -2.5f);
  // The single-kernel view of a step.
  const Manifest k = kernel_step_manifest(m, s.steps[3]);
  CHECK(k.kernel == "vector_add_f32");
  CHECK(k.code_object.at("host") == "a.so");
  CHECK(k.args.size() == 4);
  CHECK(k.buffers.size() == m.buffers.size());
}

TEST_CASE("manifest: a step's buffer argument may omit its access (derived from the code object)") {
  json j = sequence_base();
  j["sequence"][2]["steps"][0]["args"][2].erase("access");
  const Manifest m = parse(j);
  REQUIRE(m.sequence);
  bool none = false, declared = false;
  for (const auto& step : m.sequence->steps)
    for (const auto& a : step.args)
      if (a.kind == ArgSpec::Kind::Buffer) (a.access == Access::None ? none : declared) = true;
  CHECK(none);      // the one without
  CHECK(declared);  // the others keep theirs
}

TEST_CASE("manifest: sequence errors name the step and the field") {
  struct Case {
    const char* what;
    std::function<void(json&)> edit;
    const char* pointer;
    const char* fragment;
  };
  const std::vector<Case> cases = {
      {"unknown access", [](json& j) { j["sequence"][2]["steps"][0]["args"][2]["access"] = "modify"; },
       "/sequence/2/steps/0/args/2/access", "unknown access"},
      {"access on a scalar", [](json& j) { j["sequence"][2]["steps"][0]["args"][0]["access"] = "read"; },
       "/sequence/2/steps/0/args/0/access", "only buffer arguments"},
      {"range past the end", [](json& j) { j["sequence"][2]["steps"][0]["args"][1]["range"]["bytes"] = 400; },
       "/sequence/2/steps/0/args/1/range/bytes", "past the end"},
      {"unknown buffer", [](json& j) { j["sequence"][2]["steps"][1]["args"][2]["buffer"] = "nope"; },
       "/sequence/2/steps/1/args/2/buffer", "no buffer named \"nope\""},
      {"unknown copy buffer", [](json& j) { j["sequence"][0]["copy"]["to"] = "nope"; }, "/sequence/0/copy/to", "no buffer named"},
      {"copy too large", [](json& j) { j["sequence"][0]["copy"]["to_offset"] = 396; }, "/sequence/0/copy/bytes", "do not fit"},
      {"unknown kernel", [](json& j) { j["sequence"][2]["steps"][0]["kernel"] = "gemm"; }, "/sequence/2/steps/0/kernel",
       "no kernel \"gemm\" in /kernels"},
      {"unknown after", [](json& j) { j["sequence"][2]["steps"][1]["after"] = {"nope"}; }, "/sequence/2/steps/1/after/0",
       "no earlier step named \"nope\""},
      {"after a later step (a cycle)", [](json& j) { j["sequence"][0]["after"] = {"sum"}; }, "/sequence/0/after/0",
       "comes later in the sequence"},
      {"after itself", [](json& j) { j["sequence"][1]["after"] = {"clear"}; }, "/sequence/1/after/0", "after itself"},
      {"repeat 0", [](json& j) { j["sequence"][2]["repeat"] = 0; }, "/sequence/2/repeat", "at least 1"},
      {"repeat not an integer", [](json& j) { j["sequence"][2]["repeat"] = 2.5; }, "/sequence/2/repeat", "non-negative integer"},
      {"repeat too large",
       [](json& j) {
         j["sequence"][2]["repeat"] = 1000;
         j["sequence"][2]["steps"] = json::array({{{"repeat", 1000}, {"steps", j["sequence"][2]["steps"]}}});
       },
       "/sequence/2/repeat", "exceed the limit"},
      {"empty repeat", [](json& j) { j["sequence"][2]["steps"] = json::array(); }, "/sequence/2/steps", "non-empty"},
      {"two kinds in one step", [](json& j) { j["sequence"][0]["fill"] = {{"buffer", "y"}, {"value", 0}}; }, "/sequence/0",
       "exactly one of"},
      {"duplicate name", [](json& j) { j["sequence"][1]["name"] = "load"; }, "/sequence/1/name", "duplicate step name"},
      {"fill value not a 4-byte pattern",
       [](json& j) { j["sequence"][1]["fill"] = {{"buffer", "w"}, {"value", 1}}; }, "/sequence/1/fill/value", "4-byte pattern"},
      {"patch of an unknown step", [](json& j) { j["patch"]["step"] = "nope"; }, "/patch/step", "no step named"},
      {"patch of a buffer argument", [](json& j) { j["patch"]["arg"] = 1; }, "/patch/arg", "only scalars can be patched"},
      {"patch of an unknown argument", [](json& j) { j["patch"]["arg"] = "b"; }, "/patch/arg", "no argument named \"b\""},
      {"patch of a copy", [](json& j) { j["patch"]["step"] = "load"; }, "/patch/step", "not a kernel step"},
      {"patch without values", [](json& j) { j["patch"]["values"] = json::array(); }, "/patch/values", "1 to 1000"},
      {"patch value out of range",
       [](json& j) {
         j["patch"]["arg"] = 3;
         j["patch"]["values"] = {-1};
       },
       "/patch/values/0", "does not fit in u32"},
      {"patch with a check that cannot follow it",
       [](json& j) { j["verify"][0]["expected"] = {{"values", std::vector<double>(100, 0.0)}}; }, "/patch", "/verify/0"},
      {"a single-kernel field in a sequence", [](json& j) { j["kernel"] = "saxpy"; }, "/kernel", "per step"},
      {"kernels without a sequence",
       [](json& j) {
         j.erase("sequence");
         j.erase("patch");
       },
       "/kernels", "only a sequence manifest"},
      {"an empty sequence", [](json& j) { j["sequence"] = json::array(); }, "/sequence", "non-empty"},
  };
  for (const auto& c : cases) {
    SUBCASE(c.what) {
      json j = sequence_base();
      c.edit(j);
      std::string message;
      CHECK(sequence_error(j, &message) == c.pointer);
      INFO(message);
      CHECK(message.find(c.fragment) != std::string::npos);
    }
  }
}

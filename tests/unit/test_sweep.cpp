// Sweep manifests without a device: axes, zip, the state order, overrides
// in nvbench's syntax, substitution and the hostile inputs (each an error
// naming the field).
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "lrrt/bundle/sweep.hpp"

using nlohmann::json;
using namespace lrrt::bundle;

namespace {

json sweep_test_manifest(const json& axes) {
  json m = json::parse(R"({
    "lrrt_manifest": 1,
    "code_object": "k.so",
    "kernel": "saxpy",
    "buffers": [{"name": "x", "type": "f32", "count": {"axis": "n"}},
                {"name": "y", "type": {"axis": "t"}, "count": {"axis": "n"}}],
    "args": [{"type": "f32", "value": {"axis": "a"}}, {"buffer": "x"}, {"buffer": "y"},
             {"type": "u32", "value": {"count_of": "y"}}],
    "launch": {"workgroup_size": [{"axis": "wg"}], "global_size": [{"count_of": "y"}]}
  })");
  m["axes"] = axes;
  return m;
}

json sweep_test_axes() { return {{"n", {1024, "64K", "16M"}}, {"wg", {{"pow2", {6, 8}}}}, {"t", {"f32"}}, {"a", {2.5}}}; }

std::string sweep_error(const json& doc, const std::vector<AxisOverride>& o = {}, uint64_t max_states = kDefaultMaxStates) {
  try {
    (void)parse_sweep(doc, ".", o, max_states);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("sweep: states are the product of the axes, the last axis (in name order) fastest") {
  const Sweep s = parse_sweep(sweep_test_manifest(sweep_test_axes()), ".");
  REQUIRE(s.axes.size() == 4);  // a, n, t, wg
  CHECK(s.axes[1].name == "n");
  CHECK(s.axes[1].values == std::vector<json>{1024, 65536, 16777216});
  CHECK(s.axes[3].values == std::vector<json>{64, 128, 256});
  CHECK(s.axes[3].pow2);
  CHECK(s.state_count == 9);
  std::set<std::pair<uint64_t, uint64_t>> seen;
  for (uint64_t k = 0; k < s.state_count; ++k) {
    const json v = s.state_values(k);
    seen.insert({v["n"].get<uint64_t>(), v["wg"].get<uint64_t>()});
    // Every {"axis"} node holds the state's value after substitution.
    const json d = s.state_document(k);
    CHECK(d["buffers"][0]["count"] == v["n"]);
    CHECK(d["buffers"][1]["type"] == "f32");
    CHECK(d["launch"]["workgroup_size"][0] == v["wg"]);
    CHECK(d["args"][0]["value"] == 2.5);
    CHECK_FALSE(d.contains("axes"));
    const Manifest m = s.state_manifest(k);
    CHECK(m.buffers[0].count == v["n"].get<uint64_t>());
    CHECK(m.launch.workgroup_size[0] == v["wg"].get<uint64_t>());
  }
  CHECK(seen.size() == 9);
  CHECK(s.state_values(0) == json{{"a", 2.5}, {"n", 1024}, {"t", "f32"}, {"wg", 64}});
  CHECK(s.state_values(1)["wg"] == 128);  // wg varies fastest
  CHECK(s.state_values(3)["n"] == 65536);
  CHECK(s.state_label(1) == "a=2.5 n=1024 t=f32 wg=2^7");
}

TEST_CASE("sweep: zipped axes vary together") {
  json axes = sweep_test_axes();
  axes["wg"] = {64, 128, 256};
  json doc = sweep_test_manifest(axes);
  doc["zip"] = json::array({json::array({"n", "wg"})});
  const Sweep s = parse_sweep(doc, ".");
  CHECK(s.state_count == 3);
  for (uint64_t k = 0; k < 3; ++k) {
    const json v = s.state_values(k);
    CHECK(v["n"] == s.axes[1].values[k]);
    CHECK(v["wg"] == s.axes[3].values[k]);
  }
  axes["wg"] = {64, 128};
  doc = sweep_test_manifest(axes);
  doc["zip"] = json::array({json::array({"n", "wg"})});
  CHECK(sweep_error(doc).find("/zip/0/1: axis \"wg\" has 2 values, \"n\" has 3") != std::string::npos);
  CHECK(sweep_error(doc).find("zipped axes vary together and need as many values each") != std::string::npos);
  doc["zip"] = json::array({json::array({"n", "q"})});
  CHECK(sweep_error(doc).find("/zip/0/1: unknown axis \"q\"") != std::string::npos);
}

TEST_CASE("sweep: --axis in nvbench's syntax replaces an axis's values") {
  CHECK(parse_axis_override("n=[1K,1M]").values == std::vector<json>{1024, 1048576});
  CHECK(parse_axis_override("wg[pow2]=[6,8]").values == std::vector<json>{64, 256});
  CHECK(parse_axis_override("wg[pow2]=[6:8]").values == std::vector<json>{64, 128, 256});
  CHECK(parse_axis_override("n=[0:10:5]").values == std::vector<json>{0, 5, 10});
  CHECK(parse_axis_override("t=[f32, f16]").values == std::vector<json>{"f32", "f16"});
  CHECK(parse_axis_override("a=0.5").values == std::vector<json>{0.5});
  for (const char* bad : {"n", "n=[]", "n=[1", "wg[pow2]=[64]", "wg[pow2]=[x]", "n=[5:1]", "n=[0:1:0]", "n[log]=[1]",
                          "=[1]", "n=[99999999999999999999K]", "n=[0:100000000]"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_axis_override(bad), InputError);
  }
  const Sweep s = parse_sweep(sweep_test_manifest(sweep_test_axes()), ".", {parse_axis_override("wg=[32]"), parse_axis_override("n=[7]")});
  CHECK(s.state_count == 1);
  CHECK(s.state_values(0)["wg"] == 32);
  CHECK(s.state_values(0)["n"] == 7);
  CHECK(sweep_error(sweep_test_manifest(sweep_test_axes()), {parse_axis_override("q=[1]")}).find("no axis \"q\"") != std::string::npos);
}

TEST_CASE("sweep: hostile axes are errors naming the field") {
  auto with = [](const std::string& name, const json& v) {
    json axes = sweep_test_axes();
    axes[name] = v;
    return sweep_test_manifest(axes);
  };
  CHECK(sweep_error(with("n", json::array())).find("/axes/n: an axis needs at least one value") != std::string::npos);
  CHECK(sweep_error(with("n", {{"pow2", {9, 3}}})).find("/axes/n/pow2: an axis needs at least one value") != std::string::npos);
  CHECK(sweep_error(with("n", {{"pow2", {0, 64}}})).find("/axes/n/pow2/1: a power-of-two exponent is from 0 to 63") != std::string::npos);
  CHECK(sweep_error(with("n", {"99999999999999999999K"})).find("/axes/n/0: ") != std::string::npos);
  CHECK(sweep_error(with("n", {true})).find("/axes/n/0: an axis value is") != std::string::npos);
  CHECK(sweep_error(with("n", 5)).find("/axes/n: an axis is a list") != std::string::npos);
  CHECK(sweep_error(with("9x", {1})).find("/axes/9x: axis name") != std::string::npos);
  json doc = sweep_test_manifest(sweep_test_axes());
  doc["buffers"][0]["count"] = {{"axis", "q"}};
  CHECK(sweep_error(doc).find("/buffers/0/count/axis: unknown axis \"q\"") != std::string::npos);
  doc = sweep_test_manifest(sweep_test_axes());
  doc["axes"]["unused"] = {1, 2};
  CHECK(sweep_error(doc).find("/axes/unused: axis \"unused\" is declared but no {\"axis\": \"unused\"} uses it") != std::string::npos);
  // The state count is bounded: 64 x 200 states.
  doc = with("n", {{"pow2", {0, 63}}});
  doc["axes"]["wg"] = json::array();
  for (int i = 1; i <= 200; ++i) doc["axes"]["wg"].push_back(i);
  CHECK(sweep_error(doc).find("/axes: the sweep has 12800 states (1 x 64 x 1 x 200), more than the 10000 allowed") !=
        std::string::npos);
  CHECK(sweep_error(sweep_test_manifest(sweep_test_axes()), {}, 8).find("more than the 8 allowed") != std::string::npos);
  // A state whose sizes overflow names the field and the state.
  doc = with("n", {"1K", std::to_string(uint64_t(1) << 62)});
  const Sweep s = parse_sweep(doc, ".");
  CHECK_NOTHROW(s.state_manifest(0));
  try {
    (void)s.state_manifest(s.state_count - 1);
    FAIL("no error");
  } catch (const ManifestError& e) {
    CHECK(e.pointer() == "/buffers/0/count");
    CHECK(std::string(e.what()).find("overflow a 64-bit byte size (state 6 of 6: a=2.5 n=4611686018427387904") != std::string::npos);
  }
  // load_manifest of a sweep says what it is.
  try {
    (void)parse_manifest(sweep_test_manifest(sweep_test_axes()), ".");
    FAIL("no error");
  } catch (const ManifestError& e) {
    CHECK(std::string(e.what()).find("/axes: a sweep manifest") != std::string::npos);
  }
}

TEST_CASE("sweep: sizes with suffixes") {
  uint64_t v = 0;
  CHECK(parse_size_text("64K", v));
  CHECK(v == 65536);
  CHECK(parse_size_text("16M", v));
  CHECK(v == (uint64_t(16) << 20));
  CHECK(parse_size_text("3", v));
  CHECK(v == 3);
  CHECK_FALSE(parse_size_text("f32", v));
  CHECK_FALSE(parse_size_text("1.5K", v));
  CHECK_THROWS_AS(parse_size_text("17179869184G", v), InputError);
}

TEST_CASE("sweep: an axis gives a backend's own values, checked and counted on every backend") {
  json axes = sweep_test_axes();
  axes["n"] = {{"pow2", {10, 28}}, {"host", {"1K", "4M"}}};
  axes["wg"] = {{"values", {64, 128, 256}}, {"cuda", {{"pow2", {5, 10}}}}};
  const json doc = sweep_test_manifest(axes);
  Sweep s = parse_sweep(doc, ".");
  CHECK(s.state_count == 19 * 3);  // the defaults until a backend is chosen
  Sweep host = s;
  host.select_backend("host");
  CHECK(host.state_count == 2 * 3);
  CHECK(host.axes[1].values == std::vector<json>{1024, 4194304});
  CHECK_FALSE(host.axes[1].pow2);
  CHECK(host.state_values(5) == json{{"a", 2.5}, {"n", 4194304}, {"t", "f32"}, {"wg", 256}});
  Sweep cuda = s;
  cuda.select_backend("cuda");
  CHECK(cuda.state_count == 19 * 6);
  CHECK(cuda.axes[3].values.back() == 1024);
  CHECK(cuda.axes[3].pow2);
  Sweep hsa = s;
  hsa.select_backend("hsa");  // no values of its own: the defaults
  CHECK(hsa.state_count == 19 * 3);
  CHECK(hsa.axes[1].values == s.axes[1].values);
  // --axis replaces the axis on every backend.
  Sweep over = parse_sweep(doc, ".", {parse_axis_override("n=[7,8,9]")});
  over.select_backend("host");
  CHECK(over.axes[1].values == std::vector<json>{7, 8, 9});

  // Each backend's count is bounded, and zipped axes agree on every backend.
  CHECK(sweep_error(doc, {}, 60).find("/axes: the sweep has 114 states (1 x 19 x 1 x 6) on cuda, more than the 60 allowed") !=
        std::string::npos);
  json zipped = sweep_test_manifest(axes);
  zipped["axes"]["n"] = {{"values", {1, 2, 3}}, {"host", {1, 2}}};
  zipped["zip"] = json::array({json::array({"n", "wg"})});
  CHECK(sweep_error(zipped).find("/zip/0/1: axis \"wg\" has 3 values on host, \"n\" has 2") != std::string::npos);
  // Hostile axis objects.
  json bad = sweep_test_manifest(axes);
  bad["axes"]["n"] = {{"host", {1}}};
  CHECK(sweep_error(bad).find("/axes/n: an axis object needs its default values") != std::string::npos);
  bad["axes"]["n"] = {{"values", {1}}, {"rocm", {1}}};
  CHECK(sweep_error(bad).find("/axes/n/rocm: unknown field \"rocm\": an axis object has") != std::string::npos);
  bad["axes"]["n"] = {{"values", {1}}, {"pow2", {1, 2}}};
  CHECK(sweep_error(bad).find("an axis has \"values\" or \"pow2\", not both") != std::string::npos);
  bad["axes"]["n"] = {{"values", {1}}, {"host", json::array()}};
  CHECK(sweep_error(bad).find("/axes/n/host: an axis needs at least one value") != std::string::npos);
  bad["axes"]["n"] = {{"values", 5}};
  CHECK(sweep_error(bad).find("/axes/n/values: expected a list of values") != std::string::npos);
}

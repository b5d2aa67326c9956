// End-to-end tests of sequence manifests: `lrrt run` (eager, replay, patched
// replay), `lrrt run --explain` and `lrrt plan` on the bundled sequences and
// on generated bad ones. The bundled sequences also run on the hsa stand-in
// (tests/hsa/CMakeLists.txt runs every manifest in manifests/ there).
#include <doctest/doctest.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "cli_support.hpp"

using namespace cli_test;

namespace {

const std::vector<std::string> kSequences = {"saxpy_chain.json", "diamond.json", "reduce_two_stage.json", "pipeline.json"};

json results(const TempDir& dir) { return json::parse(read_text(dir / "out.json")); }

// A small diamond (t = x + x; u = t + x; v = t + t; out = u + v) with
// @kernels resolved through --kernel-dir; tests break one thing at a time.
json small_sequence() {
  return json::parse(R"({
    "lrrt_manifest": 1,
    "name": "small",
    "kernels": {"add": {"code_object": "@kernels/vector_add.*", "kernel": "vector_add_f32"},
                "saxpy": {"code_object": "@kernels/saxpy.*"}},
    "buffers": [
      {"name": "x", "type": "f32", "count": 1000, "init": {"random": {"min": -1, "max": 1}}},
      {"name": "t", "type": "f32", "count": 1000},
      {"name": "u", "type": "f32", "count": 1000},
      {"name": "v", "type": "f32", "count": 1000},
      {"name": "out", "type": "f32", "count": 1000}
    ],
    "sequence": [
      {"name": "produce", "kernel": "add",
       "args": [{"buffer": "x", "access": "read"}, {"buffer": "x", "access": "read"}, {"buffer": "t", "access": "write"},
                {"type": "u32", "value": 1000}],
       "launch": {"workgroup_size": [64], "global_size": [1000]}},
      {"name": "left", "kernel": "add",
       "args": [{"buffer": "t", "access": "read"}, {"buffer": "x", "access": "read"}, {"buffer": "u", "access": "write"},
                {"type": "u32", "value": 1000}],
       "launch": {"workgroup_size": [64], "global_size": [1000]}},
      {"name": "right", "kernel": "add",
       "args": [{"buffer": "t", "access": "read"}, {"buffer": "t", "access": "read"}, {"buffer": "v", "access": "write"},
                {"type": "u32", "value": 1000}],
       "launch": {"workgroup_size": [64], "global_size": [1000]}},
      {"name": "join", "kernel": "add",
       "args": [{"buffer": "u", "access": "read"}, {"buffer": "v", "access": "read"}, {"buffer": "out", "access": "write"},
                {"type": "u32", "value": 1000}],
       "launch": {"workgroup_size": [64], "global_size": [1000]}}
    ],
    "verify": [{"buffer": "out", "expected": {"reference": "sequence"}, "rtol": 0, "atol": 0}]
  })");
}

Result plan(const TempDir& dir, const fs::path& manifest, const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"plan", "--kernel-dir", kKernels.string(), "-q"};
  args.insert(args.end(), extra.begin(), extra.end());
  args.push_back(manifest.string());
  return run_lrrt(dir, args);
}

// `lrrt run` on host without timing (0 iterations): verification only.
Result run_untimed(const TempDir& dir, const fs::path& manifest) {
  return run_lrrt(dir, {"run", "--backend", "host", "--kernel-dir", kKernels.string(), "--iterations", "0", "-q", "-o",
                        (dir / "out.json").string(), manifest.string()});
}

const json* find_way(const json& run, const std::string& way) {
  for (const auto& w : run["ways"])
    if (w["way"] == way) return &w;
  return nullptr;
}

}  // namespace

TEST_CASE("every bundled sequence runs and verifies three ways on host") {
  for (const auto& name : kSequences) {
    SUBCASE(name.c_str()) {
      TempDir dir;
      Result r = run_manifest(dir, kSource / "manifests" / name);
      INFO(name << " stderr: " << r.err);
      REQUIRE(r.rc == 0);
      const json doc = results(dir);
      CHECK(doc["kind"] == "run");
      const json& run = doc["runs"][0];
      CHECK(run["kind"] == "sequence");
      CHECK(run["verification"]["status"] == "passed");
      const bool patched = run["sequence"]["patch"].is_object();
      CHECK(run["ways"].size() == (patched ? 3u : 2u));
      std::set<std::string> verified_ways;
      for (const auto& c : run["verification"]["checks"]) {
        CHECK(c["status"] == "passed");
        CHECK(c["mismatches"] == 0);
        CHECK(c["compared"].get<uint64_t>() > 0);
        verified_ways.insert(c["way"].get<std::string>());
      }
      CHECK(verified_ways.count("eager") == 1);
      CHECK(verified_ways.count("replay") == 1);
      for (const auto& w : run["ways"]) {
        INFO(w["way"]);
        CHECK(w["verification"]["status"] == "passed");
        CHECK(w["timing"]["samples"].size() == 2);
        CHECK(w["timing"]["per_dispatch_ns"].get<double>() ==
              doctest::Approx(w["timing"]["median_ns"].get<double>() / run["sequence"]["steps"].get<double>()));
      }
      CHECK(run["eager_over_replay"].is_number());
      if (patched) {
        const json* p = find_way(run, "patched");
        REQUIRE(p);
        CHECK((*p)["variants"].size() == run["sequence"]["patch"]["values"].size());
        for (size_t k = 0; k < (*p)["variants"].size(); ++k) CHECK(verified_ways.count("patched[" + std::to_string(k) + "]") == 1);
      }
      for (const auto& k : run["sequence"]["kernels"]) CHECK(k["kernargs"]["layout_checked"] == true);
      // Fresh random inputs, recorded.
      for (const auto& b : run["buffers"])
        if (b["init"].is_object() && b["init"].contains("random")) CHECK(b["init"]["random"].contains("seed"));
    }
  }
}

TEST_CASE("sequence shapes: the chain has 1000 steps from one written step, the pipeline copies and fills") {
  TempDir dir;
  REQUIRE(run_untimed(dir, kSource / "manifests" / "saxpy_chain.json").rc == 0);
  json run = results(dir)["runs"][0];
  CHECK(run["sequence"]["steps"] == 1000);
  CHECK(run["sequence"]["written_steps"] == 1);
  CHECK(run["sequence"]["dispatches"] == 1000);
  CHECK(run["ways"][0]["timing"].is_null());  // 0 iterations: not timed, still verified
  CHECK(run["verification"]["status"] == "passed");
  fs::remove(dir / "out.json");
  REQUIRE(run_manifest(dir, kSource / "manifests" / "pipeline.json").rc == 0);
  run = results(dir)["runs"][0];
  CHECK(run["sequence"]["copies"] == 1);
  CHECK(run["sequence"]["fills"] == 1);
  CHECK(run["sequence"]["dispatches"] == 4);
}

TEST_CASE("a sequence's random inputs are fresh each run") {
  TempDir dir;
  const fs::path m = write_manifest(dir, "m.json", small_sequence());
  REQUIRE(run_untimed(dir, m).rc == 0);
  const auto seed1 = results(dir)["runs"][0]["buffers"][0]["init"]["random"]["seed"];
  fs::remove(dir / "out.json");
  REQUIRE(run_untimed(dir, m).rc == 0);
  CHECK(results(dir)["runs"][0]["buffers"][0]["init"]["random"]["seed"] != seed1);
}

TEST_CASE("a wrong expectation in a sequence exits 1, the results are still written and name the way") {
  TempDir dir;
  json m = small_sequence();
  // out = 7x, not 0: every element mismatches in every way.
  m["verify"] = json::array({{{"buffer", "out"}, {"expected", {{"values", std::vector<double>(1000, 0.0)}}}}});
  Result r = run_untimed(dir, write_manifest(dir, "m.json", m));
  INFO(r.err);
  CHECK(r.rc == 1);
  const json run = results(dir)["runs"][0];
  CHECK(run["verification"]["status"] == "failed");
  for (const auto& w : run["ways"]) CHECK(w["verification"]["status"] == "failed");
  for (const auto& c : run["verification"]["checks"]) CHECK(c["mismatches"].get<uint64_t>() > 900);  // x == 0 is rare
}

TEST_CASE("a step that leaves its output partly unwritten fails: outputs start poisoned") {
  TempDir dir;
  json m = small_sequence();
  // The join covers only half of out; the reference (whole buffers) expects
  // all of it, and the unwritten half is still NaN.
  m["sequence"][3]["launch"]["global_size"] = {500};
  m["sequence"][3]["args"][3]["value"] = 500;
  m["verify"] = json::array({{{"buffer", "out"}, {"expected", {{"values", std::vector<double>(1000, 0.0)}}}}});
  m["verify"][0]["atol"] = 1e30;  // anything finite passes: only the poison fails
  Result r = run_untimed(dir, write_manifest(dir, "m.json", m));
  CHECK(r.rc == 1);
  const json run = results(dir)["runs"][0];
  for (const auto& c : run["verification"]["checks"]) CHECK(c["mismatches"] == 500);
}

TEST_CASE("bad sequences exit 2 naming the field, with no result file") {
  struct Case {
    const char* what;
    std::function<void(json&)> edit;
    std::vector<std::string> fragments;
  };
  const std::vector<Case> cases = {
      // (A missing access is derived from the code object since issue 40:
      // tests/cli/test_cli_access.cpp.)
      {"unknown access", [](json& j) { j["sequence"][1]["args"][1]["access"] = "readwrite"; },
       {"/sequence/1/args/1/access", "unknown access \"readwrite\"", "expected read, write or read_write"}},
      {"unknown buffer", [](json& j) { j["sequence"][2]["args"][2]["buffer"] = "w"; }, {"/sequence/2/args/2/buffer", "no buffer named \"w\""}},
      {"bad after", [](json& j) { j["sequence"][3]["after"] = {"lfet"}; }, {"/sequence/3/after/0", "no earlier step named \"lfet\""}},
      {"a cycle through after", [](json& j) { j["sequence"][1]["after"] = {"join"}; },
       {"/sequence/1/after/0", "comes later", "cycle"}},
      {"bad repeat count",
       [](json& j) { j["sequence"] = json::array({{{"repeat", -3}, {"steps", j["sequence"]}}}); }, {"/sequence/0/repeat"}},
      {"bad patch: a buffer argument",
       [](json& j) { j["patch"] = {{"step", "join"}, {"arg", 0}, {"values", {1}}}; }, {"/patch/arg", "only scalars"}},
      {"bad patch: a value that does not fit",
       [](json& j) { j["patch"] = {{"step", "join"}, {"arg", 3}, {"values", {-1}}}; }, {"/patch/values/0", "u32"}},
      {"bad patch: an unknown step",
       [](json& j) { j["patch"] = {{"step", "jion"}, {"arg", 3}, {"values", {1}}}; }, {"/patch/step", "no step named \"jion\""}},
      {"a single-kernel reference", [](json& j) { j["verify"][0]["expected"]["reference"] = "vector_add_f32"; },
       {"/verify/0/expected/reference", "not \"vector_add_f32\""}},
      {"a kernel without a built-in reference", [](json& j) { j["kernels"]["saxpy"] = {{"code_object", "@kernels/empty.*"}, {"kernel", "empty"}}; },
       {"/verify/0/expected/reference", "kernel \"empty\" (/kernels/saxpy) has none"}},
      {"the kernel's argument layout", [](json& j) { j["sequence"][2]["args"].erase(3); },
       {"/sequence/2/args", "step \"right\"", "too few arguments"}},
      {"a kernel the code object lacks",
       [](json& j) {
         j["kernels"]["add"]["kernel"] = "vector_sub";
         j["verify"] = {{"skip", "the kernel is the error"}};
       },
       {"/kernels/add/kernel", "no kernel \"vector_sub\""}},
  };
  for (const auto& c : cases) {
    SUBCASE(c.what) {
      TempDir dir;
      json m = small_sequence();
      c.edit(m);
      Result r = run_manifest(dir, write_manifest(dir, "m.json", m));
      std::vector<std::string> fragments = c.fragments;
      fragments.push_back("m.json");
      expect_error(dir, r, 2, fragments);
    }
  }
}

TEST_CASE("lrrt plan: the diamond's graph as JSON, table and DOT") {
  TempDir dir;
  const fs::path diamond = kSource / "manifests" / "diamond.json";
  Result r = plan(dir, diamond, {"--format", "json", "-o", (dir / "plan.json").string()});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json doc = json::parse(read_text(dir / "plan.json"));
  CHECK(doc["kind"] == "plan");
  CHECK(doc["device"]["backend"] == "host");  // the default backend of plan
  const json& entry = doc["plans"][0];
  const json& p = entry["plan"];
  REQUIRE(p["nodes"].size() == 4);
  CHECK(entry["steps"][1]["step"] == "left");
  // produce -> left, produce -> right, left -> join, right -> join, all RAW;
  // nothing between the consumers.
  std::set<std::pair<int, int>> edges;
  for (const auto& e : p["edges"]) {
    edges.insert({e["from"].get<int>(), e["to"].get<int>()});
    CHECK(e["hazards"] == json::array({"RAW"}));
  }
  CHECK(edges == std::set<std::pair<int, int>>{{0, 1}, {0, 2}, {1, 3}, {2, 3}});
  CHECK(p["width"] == 2);
  CHECK(p.contains("sync"));
  CHECK(p.contains("lanes"));

  r = plan(dir, diamond, {"--format", "table"});
  REQUIRE(r.rc == 0);
  for (const char* s : {"produce", "left", "right", "join", "RAW", "lowering"}) CHECK_MESSAGE(r.out.find(s) != std::string::npos, s);

  r = plan(dir, diamond, {"-o", (dir / "plan.dot").string()});
  REQUIRE(r.rc == 0);
  const std::string dot = read_text(dir / "plan.dot");
  CHECK(dot.rfind("digraph", 0) == 0);
  for (const char* e : {"p0n0 -> p0n1", "p0n0 -> p0n2", "p0n1 -> p0n3", "p0n2 -> p0n3"}) CHECK_MESSAGE(dot.find(e) != std::string::npos, e);
  CHECK(dot.find("p0n1 -> p0n2") == std::string::npos);
}

TEST_CASE("lrrt plan: hazard kinds of a chain, a WAW fill and explicit edges") {
  TempDir dir;
  Result r = plan(dir, kSource / "manifests" / "saxpy_chain.json", {"--format", "json"});
  REQUIRE(r.rc == 0);
  json p = json::parse(r.out)["plans"][0]["plan"];
  CHECK(p["nodes"].size() == 1000);
  CHECK(p["edges"].size() == 999);  // a chain: each step after the one before only
  for (const auto& e : p["edges"]) CHECK(e["to"].get<int>() == e["from"].get<int>() + 1);

  r = plan(dir, kSource / "manifests" / "reduce_two_stage.json", {"--format", "json"});
  REQUIRE(r.rc == 0);
  p = json::parse(r.out)["plans"][0]["plan"];
  bool waw = false, raw = false;
  for (const auto& e : p["edges"]) {
    if (e["from"] == 0 && e["to"] == 1) waw = e["hazards"] == json::array({"WAW"});
    if (e["from"] == 1 && e["to"] == 2) raw = e["hazards"] == json::array({"RAW"});
  }
  CHECK(waw);
  CHECK(raw);

  // An explicit edge between the independent consumers.
  json m = small_sequence();
  m["sequence"][2]["after"] = {"left"};
  r = plan(dir, write_manifest(dir, "m.json", m), {"--format", "json"});
  REQUIRE(r.rc == 0);
  p = json::parse(r.out)["plans"][0]["plan"];
  bool explicit_edge = false;
  for (const auto& e : p["edges"])
    if (e["from"] == 1 && e["to"] == 2) explicit_edge = e["hazards"] == json::array({"explicit"});
  CHECK(explicit_edge);
}

TEST_CASE("lrrt plan refuses a single-kernel manifest, run --explain adds the plan, csv has a row per way") {
  TempDir dir;
  Result r = plan(dir, kSource / "manifests" / "saxpy.json", {"-o", (dir / "out.json").string()});
  expect_error(dir, r, 2, {"not a sequence manifest"});

  r = run_manifest(dir, kSource / "manifests" / "diamond.json", {"--explain"});
  REQUIRE(r.rc == 0);
  const json run = results(dir)["runs"][0];
  REQUIRE(run.contains("plan"));
  CHECK(run["plan"]["plan"]["nodes"].size() == 4);
  fs::remove(dir / "out.json");

  r = run_lrrt(dir, {"run", "--backend", "host", "--kernel-dir", kKernels.string(), "--iterations", "2", "--format", "csv", "-q",
                     (kSource / "manifests" / "pipeline.json").string()});
  REQUIRE(r.rc == 0);
  for (const char* row : {"pipeline/eager", "pipeline/replay", "pipeline/patched"}) CHECK_MESSAGE(r.out.find(row) != std::string::npos, row);

  r = run_lrrt(dir, {"plan", "--help"});
  CHECK(r.rc == 0);
  for (const char* s : {"Examples:", "--format", "dot", "host", "RAW", "WAR", "WAW", "explicit"}) CHECK_MESSAGE(r.out.find(s) != std::string::npos, s);
}

TEST_CASE("ranges: a step on half a buffer gets the address of its range, disjoint halves have no edge") {
  TempDir dir;
  // z[0, 500) = 3 by a fill of the first half; z[500, 1000) = x + x by a
  // kernel given the second halves of x and z. x = iota, so the expected
  // values are known without a reference.
  json m = json::parse(R"({
    "lrrt_manifest": 1,
    "kernels": {"add": {"code_object": "@kernels/vector_add.*", "kernel": "vector_add_f32"}},
    "buffers": [
      {"name": "x", "type": "f32", "count": 1000, "init": "iota"},
      {"name": "z", "type": "f32", "count": 1000}
    ],
    "sequence": [
      {"name": "low", "fill": {"buffer": "z", "value": 3, "range": {"offset": 0, "bytes": 2000}}},
      {"name": "high", "kernel": "add",
       "args": [{"buffer": "x", "access": "read", "range": {"offset": 2000}},
                {"buffer": "x", "access": "read", "range": {"offset": 2000}},
                {"buffer": "z", "access": "write", "range": {"offset": 2000, "bytes": 2000}},
                {"type": "u32", "value": 500}],
       "launch": {"workgroup_size": [64], "global_size": [500]}}
    ]
  })");
  std::vector<double> expected(1000);
  for (size_t i = 0; i < 1000; ++i) expected[i] = i < 500 ? 3.0 : 2.0 * double(i);
  m["verify"] = json::array({{{"buffer", "z"}, {"expected", {{"values", expected}}}, {"rtol", 0}, {"atol", 0}}});
  const fs::path path = write_manifest(dir, "m.json", m);
  Result r = run_untimed(dir, path);
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json run = results(dir)["runs"][0];
  for (const auto& c : run["verification"]["checks"]) {
    CHECK(c["status"] == "passed");
    CHECK(c["compared"] == 1000);
  }
  r = plan(dir, path, {"--format", "json"});
  REQUIRE(r.rc == 0);
  const json p = json::parse(r.out)["plans"][0]["plan"];
  CHECK(p["nodes"].size() == 2);
  CHECK(p["edges"].empty());  // disjoint ranges of one buffer
  // The sequence reference does not model ranges: it says so.
  m["verify"][0]["expected"] = {{"reference", "sequence"}};
  r = run_untimed(dir, write_manifest(dir, "m2.json", m));
  CHECK(r.rc == 2);
  CHECK(r.err.find("range") != std::string::npos);
}

TEST_CASE("save writes the sequence's final buffers") {
  TempDir dir;
  json m = small_sequence();
  m["save"] = json::array({{{"buffer", "x"}, {"npy", (dir / "x.npy").string()}}, {{"buffer", "out"}, {"npy", (dir / "out.npy").string()}}});
  Result r = run_untimed(dir, write_manifest(dir, "m.json", m));
  INFO(r.err);
  REQUIRE(r.rc == 0);
  CHECK(results(dir)["runs"][0]["saved"].size() == 2);
  auto floats = [](const fs::path& p) {
    const std::string bytes = read_text(p);
    REQUIRE(bytes.size() >= 4000);
    std::vector<float> v(1000);
    std::memcpy(v.data(), bytes.data() + bytes.size() - 4000, 4000);  // the data follow the header
    return v;
  };
  const auto x = floats(dir / "x.npy"), out = floats(dir / "out.npy");
  for (size_t i = 0; i < 1000; ++i) {
    // out = (t + x) + (t + t) with t = x + x: 7x up to float rounding.
    const float t = x[i] + x[i];
    CHECK(out[i] == (t + x[i]) + (t + t));
  }
}

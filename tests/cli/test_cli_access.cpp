// Derived access end to end (docs/access.md): `lrrt inspect` shows AMDGPU
// .access/.actual_access, `lrrt init` writes what they prove, and a sequence
// whose steps declare no access plans on the hsa stand-in with the edges of
// the declared diamond, each access named with its source.
#if defined(LRRT_CLI_AMD_KERNELS) && defined(LRRT_CLI_HSA_STANDIN)
#include <doctest/doctest.h>

#include <cstdlib>
#include <set>
#include <string>

#include "cli_support.hpp"

using namespace cli_test;

namespace {

const fs::path kAccessTestKernels = LRRT_CLI_TEST_KERNEL_DIR;

struct AccessStandinEnv {
  AccessStandinEnv() {
    setenv("LRRT_HSA_LIBRARY", LRRT_CLI_HSA_STANDIN, 1);
    setenv("LRRT_HSA_STANDIN_KERNEL_DIR", (kAccessTestKernels.string() + ":" + kKernels.string()).c_str(), 1);
    setenv("LRRT_WAIT_TIMEOUT_MS", "20000", 1);
  }
  ~AccessStandinEnv() {
    unsetenv("LRRT_HSA_LIBRARY");
    unsetenv("LRRT_HSA_STANDIN_KERNEL_DIR");
    unsetenv("LRRT_WAIT_TIMEOUT_MS");
  }
};

const json& access_kernel_named(const json& doc, const std::string& name) {
  for (const auto& t : doc["objects"][0]["targets"])
    for (const auto& k : t["kernels"])
      if (k["name"] == name) return k;
  FAIL("no kernel " << name);
  static const json none;
  return none;
}

// The diamond of tests/manifests' shape on access_kernels: b = 2 in;
// c1 = b + u; c2 = b + b; out = c1 + c2. `declare` adds the accesses.
json access_diamond(bool declare) {
  json m = json::parse(R"({
    "lrrt_manifest": 1,
    "name": "access_diamond",
    "kernels": {"scale": {"code_object": "", "kernel": "acc_scale"}, "add": {"code_object": "", "kernel": "acc_add"}},
    "buffers": [
      {"name": "in", "type": "f32", "count": 1024, "init": {"random": {"min": -1, "max": 1}}},
      {"name": "u", "type": "f32", "count": 1024, "init": {"random": {"min": -1, "max": 1}}},
      {"name": "b", "type": "f32", "count": 1024},
      {"name": "c1", "type": "f32", "count": 1024},
      {"name": "c2", "type": "f32", "count": 1024},
      {"name": "out", "type": "f32", "count": 1024}
    ],
    "sequence": [
      {"name": "produce", "kernel": "scale", "args": [{"type": "f32", "value": 2}, {"buffer": "in"}, {"buffer": "b"},
       {"type": "u32", "value": 1024}], "launch": {"workgroup_size": [64], "global_size": [1024]}},
      {"name": "left", "kernel": "add", "args": [{"buffer": "b"}, {"buffer": "u"}, {"buffer": "c1"},
       {"type": "u32", "value": 1024}], "launch": {"workgroup_size": [64], "global_size": [1024]}},
      {"name": "right", "kernel": "add", "args": [{"buffer": "b"}, {"buffer": "b"}, {"buffer": "c2"},
       {"type": "u32", "value": 1024}], "launch": {"workgroup_size": [64], "global_size": [1024]}},
      {"name": "join", "kernel": "add", "args": [{"buffer": "c1"}, {"buffer": "c2"}, {"buffer": "out"},
       {"type": "u32", "value": 1024}], "launch": {"workgroup_size": [64], "global_size": [1024]}}
    ],
    "iterations": 1
  })");
  const std::string co = (kAccessTestKernels / "access_kernels.*").string();
  m["kernels"]["scale"]["code_object"] = co;
  m["kernels"]["add"]["code_object"] = co;
  if (declare) {
    const char* modes[4][3] = {{"read", "write", ""}, {"read", "read", "write"}, {"read", "read", "write"}, {"read", "read", "write"}};
    for (size_t s = 0; s < 4; ++s) {
      size_t k = 0;
      for (auto& a : m["sequence"][s]["args"])
        if (a.contains("buffer")) a["access"] = modes[s][k++];
    }
  }
  return m;
}

std::set<std::pair<int, int>> access_edges_of(const json& plan) {
  std::set<std::pair<int, int>> out;
  for (const auto& e : plan["edges"]) out.insert({e["from"].get<int>(), e["to"].get<int>()});
  return out;
}

}  // namespace

TEST_CASE("access: lrrt inspect shows .actual_access and .access per argument") {
  TempDir dir;
  Result r = run_lrrt(dir, {"inspect", "--format", "json", (kAccessTestKernels / "access_kernels.gfx1100.hsaco").string()});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json doc = json::parse(r.out);
  const json& add = access_kernel_named(doc, "acc_add");
  CHECK(add["args"][0]["actual_access"] == "read_only");
  CHECK(add["args"][1]["actual_access"] == "read_only");
  CHECK(add["args"][2]["actual_access"] == "write_only");
  CHECK_FALSE(add["args"][3].contains("actual_access"));
  const json& plain = access_kernel_named(doc, "acc_add_plain");
  for (size_t i = 0; i < 3; ++i) CHECK_FALSE(plain["args"][i].contains("actual_access"));
  r = run_lrrt(dir, {"inspect", "--format", "json", (kAccessTestKernels / "access_qual.gfx1100.hsaco").string()});
  REQUIRE(r.rc == 0);
  const json qual_doc = json::parse(r.out);
  const json& qual = access_kernel_named(qual_doc, "acc_copy_qual");
  CHECK(qual["args"][0]["access"] == "read_only");
  CHECK(qual["args"][1]["access"] == "write_only");
  CHECK_FALSE(qual["args"][0].contains("actual_access"));
  r = run_lrrt(dir, {"inspect", (kAccessTestKernels / "access_kernels.gfx1100.hsaco").string()});
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("actual_access") != std::string::npos);  // the table's column
}

TEST_CASE("access: lrrt init writes the access the code object proves") {
  TempDir dir;
  const Result r = run_lrrt(dir, {"init", (kAccessTestKernels / "access_kernels.gfx1100.hsaco").string(), "--kernel", "acc_add",
                                  "-o", (dir / "m.json").string()});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json m = json::parse(read_text(dir / "m.json"));
  REQUIRE(m["buffers"].size() == 3);
  CHECK(m["buffers"][0]["access"] == "read");
  CHECK(m["buffers"][1]["access"] == "read");
  CHECK(m["buffers"][2]["access"] == "write");
  const Result plain = run_lrrt(dir, {"init", (kAccessTestKernels / "access_kernels.gfx1100.hsaco").string(), "--kernel",
                                      "acc_add_plain", "-o", (dir / "p.json").string()});
  REQUIRE(plain.rc == 0);
  const json p = json::parse(read_text(dir / "p.json"));  // named: a range-for over a temporary's member dangles
  for (const auto& b : p["buffers"]) CHECK_FALSE(b.contains("access"));
}

TEST_CASE("access: a single launch without access reports the proven accesses and their traffic") {
  AccessStandinEnv env;
  TempDir dir;
  json m = json::parse(R"({
    "lrrt_manifest": 1, "kernel": "acc_add",
    "buffers": [{"name": "a", "type": "f32", "count": 1024, "init": {"random": {"min": -1, "max": 1}}},
                {"name": "b", "type": "f32", "count": 1024, "init": {"random": {"min": -1, "max": 1}}},
                {"name": "out", "type": "f32", "count": 1024}],
    "args": [{"buffer": "a"}, {"buffer": "b"}, {"buffer": "out"}, {"type": "u32", "value": 1024}],
    "launch": {"workgroup_size": [64], "global_size": [1024]},
    "warmup": 0, "iterations": 2
  })");
  m["code_object"] = (kAccessTestKernels / "access_kernels.*").string();
  const Result r = run_lrrt(dir, {"run", "--backend", "hsa", "-q", "--format", "json", "-o", (dir / "out.json").string(),
                                  write_manifest(dir, "m.json", m).string()});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json run = json::parse(read_text(dir / "out.json"))["runs"][0];
  CHECK(run["buffers"][0]["access"] == "read");
  CHECK(run["buffers"][0]["access_source"] == "actual_access");
  CHECK(run["buffers"][2]["access"] == "write");
  CHECK(run["timing"]["bytes_per_iteration"] == 3 * 1024 * 4);
}

TEST_CASE("access: a sequence without access plans on the hsa stand-in as when declared, naming each source") {
  AccessStandinEnv env;
  TempDir dir;
  auto plan_of = [&](const json& m, const std::string& name, const std::string& format) {
    return run_lrrt(dir, {"plan", "--backend", "hsa", "-q", "--format", format, write_manifest(dir, name, m).string()});
  };
  Result declared = plan_of(access_diamond(true), "declared.json", "json");
  INFO(declared.err);
  REQUIRE(declared.rc == 0);
  Result derived = plan_of(access_diamond(false), "derived.json", "json");
  INFO(derived.err);
  REQUIRE(derived.rc == 0);
  const json want = json::parse(declared.out)["plans"][0], got = json::parse(derived.out)["plans"][0];
  CHECK(access_edges_of(got["plan"]) == std::set<std::pair<int, int>>{{0, 1}, {0, 2}, {1, 3}, {2, 3}});
  CHECK(access_edges_of(got["plan"]) == access_edges_of(want["plan"]));
  CHECK(got["plan"]["lanes"] == want["plan"]["lanes"]);
  for (size_t s = 0; s < 4; ++s)
    for (const auto& a : got["steps"][s]["accesses"]) CHECK(a["source"] == "actual_access");
  CHECK(got["steps"][1]["accesses"][2]["access"] == "write");
  for (const auto& a : want["steps"][1]["accesses"]) CHECK(a["source"] == "declared");
  const Result table = plan_of(access_diamond(false), "derived.json", "table");
  REQUIRE(table.rc == 0);
  CHECK(table.out.find("(actual_access)") != std::string::npos);
}
#endif

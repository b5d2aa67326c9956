// Derived access end to end (docs/access.md): `lrrt inspect` shows AMDGPU
// .access/.actual_access, `lrrt init` writes what they prove, and a single
// launch without access reports them (results and bandwidth).
#if defined(LRRT_CLI_AMD_KERNELS) && defined(LRRT_CLI_HSA_STANDIN)
#include <doctest/doctest.h>

#include <cstdlib>
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
  for (const auto& b : json::parse(read_text(dir / "p.json"))["buffers"]) CHECK_FALSE(b.contains("access"));
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

#endif

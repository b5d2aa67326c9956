// End-to-end tests of what verification may call "passed" (issue 25): a run
// never checks against a file it overwrites, expected values computed from
// poison or indistinguishable from it are vacuous, a check of a buffer
// nothing writes is an error unless the manifest says it means it, untouched
// poison equals untouched poison, expected values are rounded to the buffer's
// type, and references read the argument bytes the kernel received.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cli_support.hpp"

using namespace cli_test;

namespace {

json results(const TempDir& dir) { return json::parse(read_text(dir / "out.json")); }

std::mt19937& rng() {
  static std::mt19937 g{std::random_device{}()};
  return g;
}

// vector_add_f32 (or _i32) on `count`-element buffers, n = `n`, one
// workgroup of `count` work-items; a and b random, c poisoned.
json vector_add(uint32_t count, uint32_t n, const std::string& type = "f32") {
  json m = json::parse(R"({
    "lrrt_manifest": 1,
    "code_object": {"host": "@kernels/vector_add.host.so"},
    "buffers": [
      {"name": "a", "count": 1, "init": {"random": {"min": -100, "max": 100}}},
      {"name": "b", "count": 1, "init": {"random": {"min": -100, "max": 100}}},
      {"name": "c", "count": 1}
    ],
    "args": [{"buffer": "a"}, {"buffer": "b"}, {"buffer": "c"}, {"type": "u32", "value": 1}],
    "launch": {"workgroup_size": [1], "global_size": [1]}
  })");
  m["kernel"] = "vector_add_" + type;
  for (auto& b : m["buffers"]) {
    b["type"] = type;
    b["count"] = count;
  }
  m["args"][3]["value"] = n;
  m["launch"]["workgroup_size"] = {count};
  m["launch"]["global_size"] = {count};
  m["verify"] = {{{"buffer", "c"}, {"expected", {{"reference", "vector_add_" + type}}}}};
  if (type == "f32") m["verify"][0]["rtol"] = m["verify"][0]["atol"] = 0;
  return m;
}

// A one-step sequence: saxpy y = a*x + y on `count` elements.
json saxpy_sequence(uint32_t count) {
  json m = json::parse(R"({
    "lrrt_manifest": 1,
    "kernels": {"saxpy": {"code_object": "@kernels/saxpy.*"}},
    "buffers": [
      {"name": "x", "type": "f32", "count": 1, "init": {"random": {"min": -1, "max": 1}}},
      {"name": "y", "type": "f32", "count": 1, "init": {"random": {"min": -1, "max": 1}}}
    ],
    "sequence": [
      {"name": "saxpy", "kernel": "saxpy",
       "args": [{"name": "a", "type": "f32", "value": 2.5}, {"name": "x", "buffer": "x", "access": "read"},
                {"name": "y", "buffer": "y", "access": "read_write"},
                {"name": "n", "type": "u32", "value": {"count_of": "y"}, "bounds": ["x", "y"]}],
       "launch": {"workgroup_size": [256], "global_size": [{"count_of": "y"}], "covers": ["x", "y"]}}
    ],
    "verify": [{"buffer": "y", "expected": {"reference": "sequence"}, "rtol": 1e-5, "atol": 1e-6}]
  })");
  m["buffers"][0]["count"] = count;
  m["buffers"][1]["count"] = count;
  return m;
}

std::vector<float> random_floats(size_t n) {
  std::uniform_real_distribution<float> d(-10, 10);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng());
  return v;
}

}  // namespace

TEST_CASE("verify: a save onto a file the run reads is refused before the run, naming both fields") {
  TempDir dir;
  // c = a + b from two npy inputs, checked against golden.npy, which is wrong
  // at one element. Saving c onto golden.npy would make a second run pass.
  const auto a = random_floats(16), b = random_floats(16);
  std::vector<float> golden(16);
  for (int i = 0; i < 16; ++i) golden[i] = a[i] + b[i];
  golden[std::uniform_int_distribution<int>(0, 15)(rng())] += 1.0f;
  write_npy(dir / "a.npy", a);
  write_npy(dir / "b.npy", b);
  write_npy(dir / "golden.npy", golden);
  const std::string golden_bytes = read_text(dir / "golden.npy");
  json m = vector_add(16, 16);
  m["buffers"][0]["init"] = {{"npy", "a.npy"}};
  m["buffers"][1]["init"] = {{"npy", "b.npy"}};
  m["verify"] = {{{"buffer", "c"}, {"expected", {{"npy", "golden.npy"}}}}};

  // The check works: the wrong element fails it.
  Result r = run_manifest(dir, write_manifest(dir, "check.json", m));
  CHECK(r.rc == 1);
  fs::remove(dir / "out.json");

  // Onto the expected file, written another way ("./golden.npy"), twice in a row.
  m["save"] = {{{"buffer", "c"}, {"npy", "./golden.npy"}}};
  for (int run = 0; run < 2; ++run) {
    r = run_manifest(dir, write_manifest(dir, "save_expected.json", m));
    expect_error(dir, r, 2, {"/save/0/npy", "/verify/0/expected/npy", "golden.npy", "is read by this run ("});
    CHECK(read_text(dir / "golden.npy") == golden_bytes);
  }
  // Onto an init file, and onto the expected file through a symbolic link.
  m["save"] = {{{"buffer", "c"}, {"npy", "b.npy"}}};
  expect_error(dir, run_manifest(dir, write_manifest(dir, "save_init.json", m)), 2, {"/save/0/npy", "/buffers/1/init/npy"});
  fs::create_symlink(dir / "golden.npy", dir / "link.npy");
  m["save"] = {{{"buffer", "c"}, {"npy", "link.npy"}}};
  expect_error(dir, run_manifest(dir, write_manifest(dir, "save_link.json", m)), 2, {"/save/0/npy", "/verify/0/expected/npy"});
  // A raw init file, from a manifest in another folder (paths resolve against the manifest).
  fs::create_directory(dir / "sub");
  write_text(dir / "a.raw", std::string(reinterpret_cast<const char*>(a.data()), 64));
  m["buffers"][0]["init"] = {{"raw", "../a.raw"}};
  m["buffers"][1]["init"] = {{"npy", "../b.npy"}};
  m["verify"][0]["expected"]["npy"] = "../golden.npy";
  m["save"] = {{{"buffer", "c"}, {"npy", dir.path.string() + "/a.raw"}}};
  expect_error(dir, run_manifest(dir, write_manifest(dir, "sub/save_raw.json", m)), 2, {"/save/0/npy", "/buffers/0/init/raw"});
  // -o onto a file a manifest reads, and one manifest's save onto another's expected file.
  m.erase("save");
  const fs::path reader = write_manifest(dir, "sub/reader.json", m);
  r = run_lrrt(dir, {"run", "--backend", "host", "--kernel-dir", kKernels.string(), "-q", "-o", (dir / "golden.npy").string(),
                     reader.string()});
  expect_error(dir, r, 2, {"golden.npy", "/verify/0/expected/npy", "is read by this command ("});
  r = run_lrrt(dir, {"run", "--backend", "host", "--kernel-dir", kKernels.string(), "-q", "-o", reader.string(), reader.string()});
  expect_error(dir, r, 2, {"reader.json", "is the manifest"});
  json writer = vector_add(16, 16);
  writer["save"] = {{{"buffer", "c"}, {"npy", "golden.npy"}}};
  r = run_lrrt(dir, {"run", "--backend", "host", "--kernel-dir", kKernels.string(), "-q", "-o", (dir / "out.json").string(),
                     reader.string(), write_manifest(dir, "writer.json", writer).string()});
  expect_error(dir, r, 2, {"/save/0/npy", "/verify/0/expected/npy", "reader.json"});
  CHECK(read_text(dir / "golden.npy") == golden_bytes);
}

TEST_CASE("verify: expected values computed from poison are vacuous, never passed, and the poisoned read is a warning") {
  TempDir dir;
  // b has no init (poison, NaN). The launch writes one of 1024 elements; with
  // equal_nan every expected NaN would equal the output's poison.
  json m = vector_add(1024, 1024);
  m["buffers"][1].erase("init");
  m["launch"]["workgroup_size"] = {1};
  m["launch"]["global_size"] = {1};
  m["verify"][0]["equal_nan"] = true;
  Result r = run_manifest(dir, write_manifest(dir, "poisoned.json", m));
  INFO(r.err);
  CHECK(r.rc == 1);
  const json run = results(dir)["runs"][0];
  const json& check = run["verification"]["checks"][0];
  CHECK(run["verification"]["status"] == "failed");
  CHECK(check["status"] == "failed");
  CHECK(check["vacuous"] == true);
  CHECK(check["reason"].get<std::string>().find("are computed from poison (") != std::string::npos);
  CHECK(check["from_poison"] == 1024);
  REQUIRE(run["warnings"].is_array());
  REQUIRE(run["warnings"].size() == 1);
  CHECK(run["warnings"][0].get<std::string>().find("\"b\"") != std::string::npos);
  CHECK(run["warnings"][0].get<std::string>().find("but has no init: it holds") != std::string::npos);
  fs::remove(dir / "out.json");

  // Entirely NaN expected values over a poisoned output say nothing either:
  // the kernel is not launched over c at all (n = 0), the check expects NaN.
  json v = vector_add(64, 0);
  v["verify"] = {{{"buffer", "c"}, {"expected", {{"values", std::vector<std::string>(64, "nan")}}}, {"equal_nan", true}}};
  r = run_manifest(dir, write_manifest(dir, "all_nan.json", v));
  CHECK(r.rc == 1);
  const json nan_check = results(dir)["runs"][0]["verification"]["checks"][0];
  CHECK(nan_check["status"] == "failed");
  CHECK(nan_check["vacuous"] == true);
  CHECK(nan_check["reason"].get<std::string>().find("every expected value is NaN where buffer") != std::string::npos);
  CHECK(results(dir)["runs"][0]["warnings"].empty());
  fs::remove(dir / "out.json");

  // In a sequence: a step reads y, which has no init and no earlier step writes.
  json s = saxpy_sequence(512);
  s["buffers"][1].erase("init");
  s["verify"][0]["equal_nan"] = true;
  r = run_manifest(dir, write_manifest(dir, "seq_poisoned.json", s));
  CHECK(r.rc == 1);
  const json srun = results(dir)["runs"][0];
  CHECK(srun["verification"]["status"] == "failed");
  for (const auto& c : srun["verification"]["checks"]) {
    CHECK(c["status"] == "failed");
    CHECK(c["vacuous"] == true);
  }
  REQUIRE(srun["warnings"].size() == 1);
  CHECK(srun["warnings"][0].get<std::string>().find("\"y\"") != std::string::npos);
  CHECK(srun["warnings"][0].get<std::string>().find("which has no init and no earlier step writes") != std::string::npos);
  fs::remove(dir / "out.json");

  // With y initialised the same manifests pass, with no warning.
  s["buffers"][1]["init"] = "random";
  r = run_manifest(dir, write_manifest(dir, "seq_ok.json", s));
  CHECK(r.rc == 0);
  CHECK(results(dir)["runs"][0]["warnings"].empty());
}

TEST_CASE("verify: a check of a buffer nothing writes is an error unless the check allows it") {
  TempDir dir;
  // Buffer d is passed to no argument: a check of it sees its initial contents.
  json m = vector_add(32, 32);
  m["buffers"].push_back({{"name", "d"}, {"type", "f32"}, {"count", 32}, {"init", {{"fill", 1.5}}}});
  m["verify"].push_back({{"buffer", "d"}, {"expected", {{"values", std::vector<double>(32, 1.5)}}}});
  expect_error(dir, run_manifest(dir, write_manifest(dir, "unwritten.json", m)), 2,
               {"/verify/1/buffer", "\"d\"", "allow_unwritten"});
  // A buffer passed but declared read-only.
  json r = vector_add(32, 32);
  r["buffers"][0]["access"] = "read";
  r["verify"].push_back({{"buffer", "a"}, {"expected", {{"reference", "vector_add_f32"}}}});
  expect_error(dir, run_manifest(dir, write_manifest(dir, "readonly.json", r)), 2, {"/verify/1/buffer", "\"a\""});
  // Said on purpose: the check runs and passes.
  m["verify"][1]["allow_unwritten"] = true;
  Result ok = run_manifest(dir, write_manifest(dir, "allowed.json", m));
  INFO(ok.err);
  CHECK(ok.rc == 0);
  CHECK(results(dir)["runs"][0]["verification"]["checks"][1]["status"] == "passed");
  fs::remove(dir / "out.json");
  // In a sequence: no step writes x.
  json s = saxpy_sequence(256);
  s["verify"].push_back({{"buffer", "x"}, {"expected", {{"reference", "sequence"}}}});
  expect_error(dir, run_manifest(dir, write_manifest(dir, "seq_unwritten.json", s)), 2, {"/verify/1/buffer", "\"x\""});
}

TEST_CASE("verify: elements the kernel leaves untouched keep their poison, which equals the reference's bit for bit") {
  TempDir dir;
  for (const std::string type : {"f32", "i32"}) {
    // n = 6 on 8 elements: c[6] and c[7] stay poisoned, in the output and in the reference.
    for (const bool equal_nan : {false, true}) {
      json m = vector_add(8, 6, type);
      m["verify"][0]["equal_nan"] = equal_nan;
      Result r = run_manifest(dir, write_manifest(dir, "partial.json", m));
      INFO(type, " equal_nan ", equal_nan, ": ", r.err);
      CHECK(r.rc == 0);
      const json check = results(dir)["runs"][0]["verification"]["checks"][0];
      CHECK(check["status"] == "passed");
      CHECK(check["mismatches"] == 0);
      CHECK(check["compared"] == 8);
      CHECK(check["untouched"] == 2);
      fs::remove(dir / "out.json");
    }
  }
  // The same in a sequence: saxpy over 100 of 160 elements of a poisoned-free y.
  json s = saxpy_sequence(160);
  s["sequence"][0]["args"][3] = {{"name", "n"}, {"type", "u32"}, {"value", 100}};
  s["buffers"].push_back({{"name", "out"}, {"type", "f32"}, {"count", 160}});
  s["sequence"].push_back({{"copy", {{"from", "y"}, {"to", "out"}, {"bytes", 400}}}});
  s["verify"] = {{{"buffer", "out"}, {"expected", {{"reference", "sequence"}}}, {"rtol", 1e-5}, {"atol", 1e-6}}};
  Result r = run_manifest(dir, write_manifest(dir, "seq_partial.json", s));
  INFO(r.err);
  CHECK(r.rc == 0);
  const json doc = results(dir);  // the range-for below would outlive a temporary
  for (const auto& c : doc["runs"][0]["verification"]["checks"]) CHECK(c["untouched"] == 60);
}

TEST_CASE("verify: inline values are rounded to the buffer's type, so an exact check of a correct output passes") {
  TempDir dir;
  // c = a + 0 with a filled with v: exactly v rounded to f32, whatever v is.
  std::uniform_real_distribution<double> d(-1000, 1000);
  const double v = d(rng());
  json m = vector_add(16, 16);
  m["buffers"][0]["init"] = {{"fill", v}};
  m["buffers"][1]["init"] = "zeros";
  m["verify"] = {{{"buffer", "c"}, {"expected", {{"values", std::vector<double>(16, v)}}}, {"rtol", 0}, {"atol", 0}}};
  Result r = run_manifest(dir, write_manifest(dir, "values.json", m));
  INFO("v = ", v, ": ", r.err);
  CHECK(r.rc == 0);
  fs::remove(dir / "out.json");
  // 0.1 itself; and one float ulp off is still a mismatch.
  m["buffers"][0]["init"] = {{"fill", 0.1}};
  m["verify"][0]["expected"]["values"] = std::vector<double>(16, 0.1);
  CHECK(run_manifest(dir, write_manifest(dir, "tenth.json", m)).rc == 0);
  fs::remove(dir / "out.json");
  m["verify"][0]["expected"]["values"][3] = static_cast<double>(std::nextafter(0.1f, 1.0f));
  r = run_manifest(dir, write_manifest(dir, "ulp.json", m));
  CHECK(r.rc == 1);
  const json check = results(dir)["runs"][0]["verification"]["checks"][0];
  CHECK(check["mismatches"] == 1);
  CHECK(check["first_mismatches"][0]["index"] == 3);
}

TEST_CASE("verify: references use the argument bytes the kernel received, not the manifest's number") {
  TempDir dir;
  // a = 1e-44 is the f32 subnormal 7 * 2^-149 (9.8e-45); y = a*x + 0 exactly.
  json m = saxpy_manifest(4096);
  m["args"][0]["value"] = 1e-44;
  m["buffers"][1]["init"] = "zeros";
  m["verify"][0]["rtol"] = m["verify"][0]["atol"] = 0;
  Result r = run_manifest(dir, write_manifest(dir, "subnormal.json", m));
  INFO(r.err);
  CHECK(r.rc == 0);
  CHECK(results(dir)["runs"][0]["verification"]["checks"][0]["mismatches"] == 0);
  fs::remove(dir / "out.json");
  // a = 0.1 (not a float): the kernel multiplies by 0.1f.
  m["args"][0]["value"] = 0.1;
  CHECK(run_manifest(dir, write_manifest(dir, "tenth.json", m)).rc == 0);
  fs::remove(dir / "out.json");

  // A patched value enters the sequence reference as the bytes patched in.
  json s = saxpy_sequence(4096);
  s["buffers"][1]["init"] = "zeros";
  s["patch"] = {{"step", "saxpy"}, {"arg", "a"}, {"values", {1e-44, 0.1, -3e-42}}};
  s["verify"][0]["rtol"] = s["verify"][0]["atol"] = 0;
  r = run_manifest(dir, write_manifest(dir, "patched.json", s));
  INFO(r.err);
  CHECK(r.rc == 0);
  const json run = results(dir)["runs"][0];
  CHECK(run["verification"]["status"] == "passed");
  CHECK(run["verification"]["checks"].size() == 5);  // eager, replay, three patched
}

TEST_CASE("verify: the sequence reference follows the kernel's signature, not a conservative access declaration") {
  TempDir dir;
  json s = saxpy_sequence(1000);
  s["sequence"][0]["args"][1]["access"] = "read_write";  // saxpy only reads x
  Result r = run_manifest(dir, write_manifest(dir, "rw.json", s));
  INFO(r.err);
  CHECK(r.rc == 0);
  CHECK(results(dir)["runs"][0]["verification"]["status"] == "passed");
}

TEST_CASE("verify: patch values are checked against the argument's bounds when the manifest is loaded") {
  TempDir dir;
  json s = saxpy_sequence(16);
  s["patch"] = {{"step", "saxpy"}, {"arg", "n"}, {"values", {8, 16, 64}}};
  for (const bool verify : {true, false}) {
    std::vector<std::string> extra;
    if (!verify) extra.push_back("--no-verify");
    Result r = run_manifest(dir, write_manifest(dir, "patch_n.json", s), extra);
    expect_error(dir, r, 2, {"/patch/values/2", "\"x\"", "64", "is too small: the patched argument"});
  }
  // Within bounds, every value's replay verifies.
  s["patch"]["values"] = {8, 16};
  Result r = run_manifest(dir, write_manifest(dir, "patch_ok.json", s));
  INFO(r.err);
  CHECK(r.rc == 0);
}

TEST_CASE("verify: patch values of a count_of argument are checked against its buffer and the launch's covers") {
  TempDir dir;
  // Without "bounds", n = count_of y still says the kernel indexes [0, n) of
  // y, and the launch covers x and y: n = 64 on 16-element buffers would make
  // the replay write past both (exit 3 on host, silent corruption on a GPU).
  json s = saxpy_sequence(16);
  s["sequence"][0]["args"][3].erase("bounds");
  s["patch"] = {{"step", "saxpy"}, {"arg", "n"}, {"values", {8, 64}}};
  for (const bool verify : {true, false}) {
    std::vector<std::string> extra;
    if (!verify) extra.push_back("--no-verify");
    Result r = run_manifest(dir, write_manifest(dir, "patch_count_of.json", s), extra);
    expect_error(dir, r, 2, {"/patch/values/1", "\"y\"", "64", "count_of"});
  }
  // A larger x alone does not help: the launch covers y, and n is y's size.
  s["buffers"][0]["count"] = 64;
  Result r = run_manifest(dir, write_manifest(dir, "patch_count_of_x.json", s));
  expect_error(dir, r, 2, {"/patch/values/1", "\"y\"", "16 elements"});
  // Within y, every value's replay verifies.
  s["patch"]["values"] = {8, 16};
  r = run_manifest(dir, write_manifest(dir, "patch_count_of_ok.json", s));
  INFO(r.err);
  CHECK(r.rc == 0);
  CHECK(results(dir)["runs"][0]["verification"]["status"] == "passed");
}

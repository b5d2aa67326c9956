// End-to-end tests of `lrrt` on the host backend. Every test works in a fresh
// temporary folder; manifests for bad-input cases are generated there.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <chrono>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_support.hpp"

using namespace cli_test;

namespace {

json results(const TempDir& dir) { return json::parse(read_text(dir / "out.json")); }

}  // namespace

TEST_CASE("every bundled manifest runs and verifies on host") {
  std::vector<fs::path> manifests;
  for (const auto& e : fs::directory_iterator(kSource / "manifests"))
    // Sequences and sweeps have their own tests (test_cli_sequence.cpp, test_cli_sweep.cpp).
    if (e.path().extension() == ".json" && !json::parse(read_text(e.path())).contains("sequence") &&
        !json::parse(read_text(e.path())).contains("axes"))
      manifests.push_back(e.path());
  REQUIRE(manifests.size() >= 6);
  for (const auto& m : manifests) {
    SUBCASE(m.filename().string().c_str()) {
      TempDir dir;
      Result r = run_manifest(dir, m);
      INFO(m << " stderr: " << r.err);
      REQUIRE(r.rc == 0);
      json doc = results(dir);
      CHECK(doc["kind"] == "run");
      CHECK(doc["meta"].contains("git_sha"));
      CHECK(doc["meta"]["argv"].size() > 3);
      CHECK(doc["device"]["backend"] == "host");
      const json& run = doc["runs"][0];
      CHECK(run["kernargs"]["layout_checked"] == true);
      CHECK(run["timing"]["samples"].size() == 2);
      for (const char* k : {"min_ns", "median_ns", "mean_ns", "stddev_ns", "max_ns"}) CHECK(run["timing"].contains(k));
      if (m.filename() == "empty.json") {
        CHECK(run["verification"]["status"] == "skipped");
        CHECK(!run["verification"]["reason"].get<std::string>().empty());
      } else {
        CHECK(run["verification"]["status"] == "passed");
        CHECK(!run["verification"]["checks"].empty());
        CHECK(run["timing"].contains("bandwidth_gbps"));
      }
    }
  }
}

TEST_CASE("random inputs without a seed are fresh each run and the seed is recorded") {
  TempDir dir;
  auto seed_of = [&] {
    Result r = run_manifest(dir, kSource / "manifests" / "saxpy.json");
    REQUIRE(r.rc == 0);
    json s = results(dir)["runs"][0]["buffers"][0]["init"]["random"]["seed"];
    REQUIRE(s.is_number_unsigned());
    return s.get<uint64_t>();
  };
  CHECK(seed_of() != seed_of());
}

TEST_CASE("outputs are poisoned: elements the kernel does not write fail verification") {
  TempDir dir;
  json m = json::parse(read_text(kSource / "manifests" / "vector_add_f32.json"));
  // Launch only half the work-items; n still claims the whole buffer.
  m["launch"]["global_size"] = {500000};
  m.erase("$schema");
  Result r = run_manifest(dir, write_manifest(dir, "half.json", m));
  INFO(r.err);
  CHECK(r.rc == 1);
  json doc = results(dir);  // verification failures still write results
  const json& check = doc["runs"][0]["verification"]["checks"][0];
  CHECK(doc["runs"][0]["verification"]["status"] == "failed");
  CHECK(check["mismatches"].get<uint64_t>() == 1000003 - 500224);  // 1954 workgroups of 256 ran
  CHECK(check["first_mismatches"][0]["index"] == 500224);
  CHECK(check["first_mismatches"][0]["got"] == "nan");
}

TEST_CASE("in-place kernels are verified against one application") {
  // saxpy with many iterations: the verified launch is separate from timing.
  TempDir dir;
  json m = json::parse(read_text(kSource / "manifests" / "saxpy.json"));
  m.erase("$schema");
  m["iterations"] = 7;
  m["warmup"] = 5;
  Result r = run_lrrt(dir, {"run", "--backend", "host", "--kernel-dir", kKernels.string(), "-q", "-o",
                            (dir / "out.json").string(), write_manifest(dir, "saxpy7.json", m).string()});
  CHECK(r.rc == 0);
  CHECK(results(dir)["runs"][0]["verification"]["status"] == "passed");
}

TEST_CASE("expected values from npy, raw and inline values, saving outputs") {
  TempDir dir;
  json m = saxpy_manifest(16);
  m["buffers"][0]["init"] = {{"iota", {{"start", 0}, {"step", 1}}}};
  m["buffers"][1]["init"] = {{"fill", 1}};
  m["save"] = {{{"buffer", "y"}, {"npy", (dir / "y.npy").string()}}};
  REQUIRE(run_manifest(dir, write_manifest(dir, "save.json", m)).rc == 0);
  REQUIRE(fs::exists(dir / "y.npy"));
  fs::remove(dir / "out.json");

  // The saved .npy as expected values.
  m.erase("save");
  m["verify"] = {{{"buffer", "y"}, {"expected", {{"npy", "y.npy"}}}}};
  Result r = run_manifest(dir, write_manifest(dir, "npy.json", m));
  INFO(r.err);
  CHECK(r.rc == 0);
  fs::remove(dir / "out.json");

  // Inline values: y = 2.5 * i + 1.
  json values = json::array();
  for (int i = 0; i < 16; ++i) values.push_back(2.5 * i + 1);
  m["verify"] = {{{"buffer", "y"}, {"expected", {{"values", values}}}}};
  CHECK(run_manifest(dir, write_manifest(dir, "values.json", m)).rc == 0);
  fs::remove(dir / "out.json");

  // Raw file with one wrong value: exit 1, mismatch reported.
  std::vector<float> raw(16);
  for (int i = 0; i < 16; ++i) raw[i] = 2.5f * i + 1;
  raw[5] = 99;
  write_text(dir / "y.raw", std::string(reinterpret_cast<const char*>(raw.data()), raw.size() * 4));
  m["verify"] = {{{"buffer", "y"}, {"expected", {{"raw", "y.raw"}}}}};
  r = run_manifest(dir, write_manifest(dir, "raw.json", m));
  CHECK(r.rc == 1);
  json check = results(dir)["runs"][0]["verification"]["checks"][0];
  CHECK(check["mismatches"] == 1);
  CHECK(check["first_mismatches"][0]["index"] == 5);
  CHECK(check["first_mismatches"][0]["expected"] == 99);
  CHECK(check["first_mismatches"][0]["got"].get<double>() == doctest::Approx(13.5));
}

TEST_CASE("a reference backend equal to the backend under test is skipped, not passed") {
  TempDir dir;
  json m = saxpy_manifest();
  m["verify"] = {{{"buffer", "y"}, {"expected", {{"reference_backend", "host"}}}}};
  Result r = run_manifest(dir, write_manifest(dir, "refbackend.json", m));
  CHECK(r.rc == 0);
  json v = results(dir)["runs"][0]["verification"];
  CHECK(v["status"] == "skipped");
  CHECK(v["checks"][0]["status"] == "skipped");
}

TEST_CASE("a built-in reference lrrt does not have is an input error naming the file and the field") {
  TempDir dir;
  json m = saxpy_manifest();
  m["verify"] = {{{"buffer", "y"}, {"expected", {{"reference", "gemm"}}}}};
  Result r = run_manifest(dir, write_manifest(dir, "gemm.json", m));
  expect_error(dir, r, 2, {"gemm.json", "/verify/0/expected/reference", "no built-in reference \"gemm\"", "saxpy"});
}

TEST_CASE("formats: csv rows, table, and json by default when stdout is not a terminal") {
  TempDir dir;
  const std::string m = (kSource / "manifests" / "vector_add_i32.json").string();
  const std::vector<std::string> base = {"run", "--backend", "host", "--kernel-dir", kKernels.string(), "--iterations", "1", "-q"};
  auto with = [&](std::vector<std::string> extra) {
    auto a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    a.push_back(m);
    return run_lrrt(dir, a);
  };
  Result csv = with({"--format", "csv"});
  REQUIRE(csv.rc == 0);
  CHECK(csv.out.rfind("manifest,name,kernel,backend", 0) == 0);
  CHECK(std::count(csv.out.begin(), csv.out.end(), '\n') == 2);
  Result table = with({"--format", "table"});
  CHECK(table.out.find("verification") != std::string::npos);
  CHECK(table.out.find("passed") != std::string::npos);
  Result def = with({});
  CHECK(json::parse(def.out)["runs"].size() == 1);
  Result csv_file = with({"-o", (dir / "r.csv").string()});
  CHECK(read_text(dir / "r.csv").rfind("manifest,", 0) == 0);
}

// A short launch-overhead run on host: enough samples for compare, quick.
Result bench_quick(const TempDir& dir, const fs::path& out, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"bench", "launch-overhead", "--backend", "host", "--kernel-dir", kKernels.string(),
                                   "--quick", "--min-time", "0", "--min-samples", "10", "--max-samples", "10",
                                   "-q", "-o", out.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_lrrt(dir, args);
}

TEST_CASE("every command's result file has the same meta keys") {
  TempDir dir;
  std::map<std::string, json> docs;
  REQUIRE(run_manifest(dir, kSource / "manifests" / "saxpy.json").rc == 0);
  docs["run"] = results(dir);
  Result info = run_lrrt(dir, {"info", "--format", "json"});
  REQUIRE(info.rc == 0);
  docs["info"] = json::parse(info.out);
  Result inspect = run_lrrt(dir, {"inspect", (kKernels / "saxpy.host.so").string(), "--format", "json"});
  REQUIRE(inspect.rc == 0);
  docs["inspect"] = json::parse(inspect.out);
  Result b1 = bench_quick(dir, dir / "b1.json"), b2 = bench_quick(dir, dir / "b2.json");
  INFO(b1.err);
  REQUIRE(b1.rc == 0);
  REQUIRE(b2.rc == 0);
  docs["bench"] = json::parse(read_text(dir / "b1.json"));
  Result cmp = run_lrrt(dir, {"compare", (dir / "b1.json").string(), (dir / "b2.json").string(), "--no-fail",
                              "--threshold", "1000", "--format", "json"});
  REQUIRE(cmp.rc == 0);
  docs["compare"] = json::parse(cmp.out);

  std::set<std::string> keys;
  for (const auto& [k, v] : docs["run"]["meta"].items()) keys.insert(k);
  for (const char* k : {"tool", "version", "git_sha", "argv", "date", "host", "cpu", "cpu_cores", "options"})
    CHECK_MESSAGE(keys.count(k), k);
  for (const auto& [kind, doc] : docs) {
    INFO(kind);
    CHECK(doc["kind"] == kind);
    std::set<std::string> these;
    for (const auto& [k, v] : doc["meta"].items()) these.insert(k);
    CHECK(these == keys);
    CHECK(doc["meta"]["tool"] == "lrrt " + kind);
    CHECK(doc["meta"]["argv"][1] == kind);
  }
  // The machine is described wherever the host device is open anyway.
  CHECK(docs["run"]["meta"]["cpu"].is_string());
  CHECK(docs["bench"]["meta"]["cpu"].is_string());
  CHECK(docs["compare"]["meta"]["cpu"].is_null());
}

TEST_CASE("one format choice for every command: --format, -o's extension, markdown") {
  TempDir dir;
  const std::string m = (kSource / "manifests" / "vector_add_i32.json").string();
  Result md = run_lrrt(dir, {"run", "--backend", "host", "--kernel-dir", kKernels.string(), "--iterations", "1", "-q", "-o",
                             (dir / "r.md").string(), m});
  REQUIRE(md.rc == 0);
  CHECK(md.out.empty());  // -q: nothing on stdout
  const std::string text = read_text(dir / "r.md");
  CHECK(text.rfind("# lrrt run results", 0) == 0);
  CHECK(text.find("- **verification**: passed") != std::string::npos);
  // Without -q, -o also shows a table and says where the file went.
  Result loud = run_lrrt(dir, {"run", "--backend", "host", "--kernel-dir", kKernels.string(), "--iterations", "1", "-o",
                               (dir / "r.json").string(), m});
  REQUIRE(loud.rc == 0);
  CHECK(loud.out.find("verification") != std::string::npos);
  CHECK(loud.err.find("wrote " + (dir / "r.json").string()) != std::string::npos);
  CHECK(json::parse(read_text(dir / "r.json"))["kind"] == "run");

  Result info_md = run_lrrt(dir, {"info", "--format", "markdown"});
  CHECK(info_md.out.find("| backend | usable | devices | message |") != std::string::npos);
  for (const char* sub : {"run", "info", "inspect", "bench", "compare"}) {
    Result help = run_lrrt(dir, {sub, "--help"});
    INFO(sub);
    CHECK(help.out.find("table, json, csv or markdown") != std::string::npos);
    CHECK(help.out.find("--quiet") != std::string::npos);
  }
  CHECK(run_lrrt(dir, {"compare", "a.json", "b.json", "--format", "xml"}).rc == 2);
}

TEST_CASE("compare: a markdown file for the pull request, the table on stdout, exit 1 on a regression") {
  TempDir dir;
  REQUIRE(bench_quick(dir, dir / "base.json").rc == 0);
  // The same run with every lrrt time tripled: a regression in every row.
  json slow = json::parse(read_text(dir / "base.json"));
  for (auto& m : slow["measurements"])
    if (m["impl"] == "lrrt")
      for (auto& s : m["samples"]) s = s.get<double>() * 3 + 1000;
  write_text(dir / "slow.json", slow.dump());
  Result r = run_lrrt(dir, {"compare", (dir / "base.json").string(), (dir / "slow.json").string(), "-o",
                            (dir / "compare.md").string()});
  CHECK(r.rc == 1);
  CHECK(r.out.find("SLOWER") != std::string::npos);
  CHECK(r.out.find("REGRESSION") != std::string::npos);
  const std::string md = read_text(dir / "compare.md");
  CHECK(md.rfind("# lrrt compare results", 0) == 0);
  CHECK(md.find("| launch-overhead | host | round-trip |") != std::string::npos);
  CHECK(md.find("**") != std::string::npos);
  Result same = run_lrrt(dir, {"compare", (dir / "base.json").string(), (dir / "base.json").string(), "--format", "csv"});
  CHECK(same.rc == 0);
  CHECK(same.out.rfind("name,benchmark,backend,impl,", 0) == 0);
}

TEST_CASE("bench: --list, --help, the unknown-name error and dispatch read one registry") {
  TempDir dir;
  Result list = run_lrrt(dir, {"bench", "--list"});
  REQUIRE(list.rc == 0);
  std::vector<std::string> names;
  std::istringstream lines(list.out);
  for (std::string line; std::getline(lines, line);) names.push_back(line.substr(0, line.find(' ')));
  REQUIRE(names.size() >= 5);

  Result unknown = run_lrrt(dir, {"bench", "no-such-benchmark", "--backend", "host"});
  CHECK(unknown.rc == 2);
  std::string listed;
  for (const auto& n : names) listed += ", " + n;
  CHECK(unknown.err.find("unknown benchmark 'no-such-benchmark': choose all" + listed) != std::string::npos);

  Result help = run_lrrt(dir, {"bench", "--help"});
  CHECK(help.out.find("all" + listed) != std::string::npos);
  std::string footer = "Benchmarks (lrrt bench --list):\n";
  for (const auto& n : names) footer += "  " + n + "\n";
  CHECK(help.out.find(footer) != std::string::npos);

  // `all` runs every listed benchmark, in the listed order (two host
  // devices, so that p2p has a pair to measure).
  setenv("LRRT_HOST_DEVICES", "2", 1);
  Result all = run_lrrt(dir, {"bench", "all", "--backend", "host", "--kernel-dir", kKernels.string(), "--quick", "--sizes", "4K",
                       "--min-time", "0", "--min-samples", "3", "--max-samples", "3", "-q", "-o", (dir / "all.json").string()});
  unsetenv("LRRT_HOST_DEVICES");
  INFO(all.err);
  REQUIRE(all.rc == 0);
  json doc = json::parse(read_text(dir / "all.json"));
  std::vector<std::string> ran;
  for (const auto& m : doc["measurements"])
    if (ran.empty() || ran.back() != m["benchmark"].get<std::string>()) ran.push_back(m["benchmark"].get<std::string>());
  CHECK(ran == names);
  CHECK(doc["errors"].empty());
}

// `lrrt inspect FILE --format table` prints a table for every code object
// format (it printed a header and JSON for a cubin): not JSON, the kernel
// and one row per argument at its offset.
void expect_inspect_table(const TempDir& dir, const fs::path& file, const std::string& target) {
  Result r = run_lrrt(dir, {"inspect", file.string(), "--format", "table"});
  INFO(file << "\n" << r.out << r.err);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find('{') == std::string::npos);
  CHECK(r.out.find("saxpy") != std::string::npos);
  CHECK(r.out.find(target) != std::string::npos);
  int rows = 0;  // saxpy(a, x, y, n): offsets 0, 8, 16, 24
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream cells(line);
    std::vector<std::string> c{std::istream_iterator<std::string>(cells), {}};
    for (size_t i = 0; i + 1 < c.size(); ++i)
      if ((c[i] == "0" && c[i + 1] == "4") || (c[i] == "8" && c[i + 1] == "8") || (c[i] == "16" && c[i + 1] == "8") ||
          (c[i] == "24" && c[i + 1] == "4")) {
        ++rows;
        break;
      }
  }
  CHECK(rows >= 4);
}

TEST_CASE("inspect --format table prints a table for a cubin as for an hsaco and a host library") {
  TempDir dir;
  expect_inspect_table(dir, kKernels / "saxpy.host.so", "x86_64");
  if (fs::exists(kKernels / "saxpy.gfx1100.hsaco")) expect_inspect_table(dir, kKernels / "saxpy.gfx1100.hsaco", "gfx1100");
  const fs::path cubin = kKernels / "saxpy.sm_90.cubin";
  if (!fs::exists(cubin)) {
    MESSAGE("skipped the cubin: " << cubin << " is built only when nvcc builds kernels (configure without -DLRRT_NVCC=OFF)");
    return;
  }
  expect_inspect_table(dir, cubin, "sm_90");
}

TEST_CASE("lrrt info lists backends and devices") {
  TempDir dir;
  Result r = run_lrrt(dir, {"info", "--format", "json"});
  REQUIRE(r.rc == 0);
  json doc = json::parse(r.out);
  REQUIRE(doc["backends"].is_array());
  bool host = false;
  for (const auto& b : doc["backends"]) {
    CHECK(b.contains("usable"));
    CHECK(b.contains("message"));
    if (b["name"] == "host") host = b["usable"] == true;
  }
  CHECK(host);
  REQUIRE(!doc["devices"].empty());
  for (const auto& d : doc["devices"])
    for (const char* k : {"backend", "index", "name", "arch", "compute_units", "wave_size", "max_workgroup_size", "memory_bytes"})
      CHECK_MESSAGE(d.contains(k), k);
  Result t = run_lrrt(dir, {"info", "--format", "table"});
  CHECK(t.out.find("Backends") != std::string::npos);
  CHECK(t.out.find("host") != std::string::npos);
}

TEST_CASE("help teaches options, examples and exit codes") {
  TempDir dir;
  Result r = run_lrrt(dir, {"--help"});
  CHECK(r.rc == 0);
  CHECK(r.out.find("Exit codes") != std::string::npos);
  CHECK(r.out.find("verification failed") != std::string::npos);
  Result run = run_lrrt(dir, {"run", "--help"});
  CHECK(run.rc == 0);
  for (const char* o : {"--backend", "--device", "--format", "--output", "--quiet", "--kernel-dir", "Examples"})
    CHECK_MESSAGE(run.out.find(o) != std::string::npos, o);
}

TEST_CASE("usage errors exit 2") {
  TempDir dir;
  CHECK(run_lrrt(dir, {}).rc == 2);
  CHECK(run_lrrt(dir, {"run", "--no-such-option", (kSource / "manifests" / "saxpy.json").string()}).rc == 2);
  CHECK(run_lrrt(dir, {"run", "--format", "xml", (kSource / "manifests" / "saxpy.json").string()}).rc == 2);
  Result r = run_lrrt(dir, {"run", (dir / "missing.json").string()});
  CHECK(r.rc == 2);
  // -o into a folder that does not exist: error, nothing written.
  Result o = run_lrrt(dir, {"run", "--backend", "host", "--kernel-dir", kKernels.string(), "--iterations", "1", "-q", "-o",
                            (dir / "no" / "such" / "out.json").string(), (kSource / "manifests" / "empty.json").string()});
  CHECK(o.rc == 2);
  CHECK(o.err.find("out.json") != std::string::npos);
}

// ---------------------------------------------------------------- bad input

TEST_CASE("bad input: malformed JSON") {
  TempDir dir;
  write_text(dir / "m.json", "{\"lrrt_manifest\": 1,\n  \"kernel\": \"saxpy\",\n");
  expect_error(dir, run_manifest(dir, dir / "m.json"), 2, {"m.json", "malformed JSON", "line"});
}

TEST_CASE("bad input: missing field") {
  TempDir dir;
  json m = saxpy_manifest();
  m.erase("kernel");
  expect_error(dir, run_manifest(dir, write_manifest(dir, "m.json", m)), 2, {"m.json", "missing required field \"kernel\""});
  m = saxpy_manifest();
  m["buffers"][1].erase("type");
  expect_error(dir, run_manifest(dir, write_manifest(dir, "m.json", m)), 2, {"/buffers/1", "\"type\""});
}

TEST_CASE("bad input: mistyped field") {
  TempDir dir;
  json m = saxpy_manifest();
  m["launch"]["workgroup_size"] = {"64"};
  expect_error(dir, run_manifest(dir, write_manifest(dir, "m.json", m)), 2, {"/launch/workgroup_size/0", "string \"64\""});
  m = saxpy_manifest();
  m["args"][0]["type"] = "float";
  expect_error(dir, run_manifest(dir, write_manifest(dir, "m.json", m)), 2, {"/args/0/type", "unknown type \"float\""});
}

TEST_CASE("bad input: unknown field") {
  TempDir dir;
  json m = saxpy_manifest();
  m["buffers"][0]["init"]["random"]["sede"] = 1;
  expect_error(dir, run_manifest(dir, write_manifest(dir, "m.json", m)), 2,
               {"/buffers/0/init/random/sede", "unknown field", "seed"});
  m = saxpy_manifest();
  m["iteration"] = 5;
  expect_error(dir, run_manifest(dir, write_manifest(dir, "m.json", m)), 2, {"/iteration", "did you mean \"iterations\""});
}

TEST_CASE("bad input: missing code object") {
  TempDir dir;
  json m = saxpy_manifest();
  m["code_object"]["host"] = "@kernels/nope.host.so";
  expect_error(dir, run_manifest(dir, write_manifest(dir, "m.json", m)), 2, {"/code_object/host", "not found", "nope.host.so"});
  m["code_object"] = {{"cuda", "x.cubin"}};
  expect_error(dir, run_manifest(dir, write_manifest(dir, "m.json", m)), 2, {"/code_object", "no code object for backend \"host\""});
}

TEST_CASE("bad input: unknown kernel") {
  TempDir dir;
  json m = saxpy_manifest();
  m["kernel"] = "saxpyy";
  expect_error(dir, run_manifest(dir, write_manifest(dir, "m.json", m)), 2, {"/kernel", "saxpyy", "it has: saxpy"});
}

TEST_CASE("bad input: too few and too many arguments, wrong argument types") {
  TempDir dir;
  json m = saxpy_manifest();
  m["args"].erase(3);
  expect_error(dir, run_manifest(dir, write_manifest(dir, "m.json", m)), 2, {"/args", "too few arguments", "offset 24"});
  m = saxpy_manifest();
  m["args"].push_back({{"type", "u32"}, {"value", 1}});
  expect_error(dir, run_manifest(dir, write_manifest(dir, "m.json", m)), 2, {"/args", "too many arguments"});
  m = saxpy_manifest();
  m["args"][0] = {{"buffer", "x"}};
  expect_error(dir, run_manifest(dir, write_manifest(dir, "m.json", m)), 2, {"/args/0", "pointer", "value"});
  m = saxpy_manifest();
  m["args"][3]["type"] = "u64";
  expect_error(dir, run_manifest(dir, write_manifest(dir, "m.json", m)), 2, {"/args/3", "8 bytes", "4 bytes"});
}

TEST_CASE("bad input: buffer too small for the launch") {
  TempDir dir;
  json m = saxpy_manifest();
  m["args"][3] = {{"type", "u32"}, {"value", 2000}, {"bounds", {"x", "y"}}};
  expect_error(dir, run_manifest(dir, write_manifest(dir, "m.json", m)), 2, {"/args/3/bounds/0", "buffer \"x\" is too small"});
  m = saxpy_manifest();
  m["launch"] = {{"workgroup_size", {64}}, {"workgroup_count", {32}}, {"covers", {"x", "y"}}};
  expect_error(dir, run_manifest(dir, write_manifest(dir, "m.json", m)), 2,
               {"/launch/covers/0", "too small for the launch", "2048 work-items"});
}

TEST_CASE("bad input: grid arithmetic that overflows") {
  TempDir dir;
  json m = saxpy_manifest();
  m["launch"] = {{"workgroup_size", {1024}}, {"workgroup_count", {4194304}}};
  expect_error(dir, run_manifest(dir, write_manifest(dir, "m.json", m)), 2, {"/launch/workgroup_count/0", "overflows"});
  m["launch"] = {{"workgroup_size", {256}}, {"global_size", {4294967295u}}};
  expect_error(dir, run_manifest(dir, write_manifest(dir, "m.json", m)), 2, {"/launch/global_size/0", "overflows"});
}

TEST_CASE("bad input: allocation larger than the device") {
  TempDir dir;
  json m = saxpy_manifest();
  m["buffers"][0]["count"] = uint64_t(1) << 60;  // x: 4 EiB
  expect_error(dir, run_manifest(dir, write_manifest(dir, "m.json", m)), 3, {"/buffers/0", "\"x\"", "device"});
}

TEST_CASE("bad input: corrupt code object") {
  TempDir dir;
  write_text(dir / "corrupt.host.so", std::string("\x7f" "ELF garbage that is not a shared object", 40));
  json m = saxpy_manifest();
  m["code_object"] = "corrupt.host.so";
  expect_error(dir, run_manifest(dir, write_manifest(dir, "m.json", m)), 2, {"/code_object", "corrupt.host.so"});
}

TEST_CASE("bad input: wrong-architecture code object (an AMD hsaco on host)") {
  TempDir dir;
  // A minimal ELF64 header with e_machine = EM_AMDGPU (224).
  std::string elf(512, '\0');
  const unsigned char ident[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 64};
  std::memcpy(elf.data(), ident, sizeof(ident));
  elf[16] = 3;      // ET_DYN
  elf[18] = char(224);
  elf[20] = 1;      // EV_CURRENT
  write_text(dir / "saxpy.gfx1100.hsaco", elf);
  json m = saxpy_manifest();
  m["code_object"] = "saxpy.gfx1100.hsaco";
  expect_error(dir, run_manifest(dir, write_manifest(dir, "m.json", m)), 2, {"/code_object", "saxpy.gfx1100.hsaco", "AMDGPU"});
}

TEST_CASE("bad input: launch beyond the device's limits") {
  TempDir dir;
  json m = saxpy_manifest();
  m["launch"]["workgroup_size"] = {4096};
  expect_error(dir, run_manifest(dir, write_manifest(dir, "m.json", m)), 2, {"/launch/workgroup_size", "maximum"});
}

TEST_CASE("bad input: an error in a later manifest leaves no result file") {
  TempDir dir;
  json m = saxpy_manifest();
  m["kernel"] = "nope";
  fs::path bad = write_manifest(dir, "bad.json", m);
  Result r = run_lrrt(dir, {"run", "--backend", "host", "--kernel-dir", kKernels.string(), "--iterations", "1", "-q", "-o",
                            (dir / "out.json").string(), (kSource / "manifests" / "empty.json").string(), bad.string()});
  expect_error(dir, r, 2, {"bad.json", "/kernel"});
}

TEST_CASE("a kernel fault exits 3 naming the kernel, with no result file") {
  TempDir dir;
  json m = json::parse(R"({
    "lrrt_manifest": 1,
    "code_object": {"host": ")" + std::string(LRRT_CLI_ERROR_KERNELS) + R"("},
    "kernel": "write_to_address",
    "buffers": [],
    "args": [{"type": "u64", "value": 8}],
    "launch": {"workgroup_size": [1], "workgroup_count": [1]},
    "verify": {"skip": "the kernel faults"}
  })");
  expect_error(dir, run_manifest(dir, write_manifest(dir, "m.json", m)), 3,
               {"write_to_address", "faulted", "workgroup (0, 0, 0)"});
}

TEST_CASE("a hung kernel exits 3 after --timeout instead of hanging") {
  TempDir dir;
  json m = hang_manifest();
  auto start = std::chrono::steady_clock::now();
  Result r = run_manifest(dir, write_manifest(dir, "m.json", m), {"--timeout", "1"});
  auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  expect_error(dir, r, 3, {"did not finish within 1000 ms"});
  CHECK(seconds < 60);  // a generous bound: the point is that it returns at all
}


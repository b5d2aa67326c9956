// Sequences of Triton cache entries (docs/manifest.md, "Sequences"): a
// kernel alias names an entry, each step gives the entry's parameters by name
// and Triton's grid, and a pointer argument without "access" gets the access
// the entry's IR proves (docs/access.md, "ttir"). Planned and run on the hsa
// stand-in with the committed gfx942 entries (tests/triton/entries), whose
// host builds are tests/kernels/triton_standin.cpp; parse errors need no
// device.
#include <doctest/doctest.h>

#include <cstdlib>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "cli_support.hpp"

using namespace cli_test;

namespace {

const fs::path kTritonEntries = kSource / "tests" / "triton" / "entries";
constexpr int kN = 1000;  // not a multiple of the 256-work-item block: the tail is masked

// t = x + y; u = x + v; out = t + u, on gfx942 add_kernel (x_ptr, y_ptr,
// out_ptr: read, read, write by its IR). "first" and "second" share x only
// (both read it): no edge; "join" reads what each wrote: two RAW edges.
json add_chain(const std::string& entry) {
  json m = json::parse(R"({
    "lrrt_manifest": 1,
    "name": "triton_add_chain",
    "kernels": {"add": {}},
    "buffers": [
      {"name": "x", "type": "f32", "count": 1000, "init": "random"},
      {"name": "y", "type": "f32", "count": 1000, "init": "random"},
      {"name": "v", "type": "f32", "count": 1000, "init": "random"},
      {"name": "t", "type": "f32", "count": 1000},
      {"name": "u", "type": "f32", "count": 1000},
      {"name": "out", "type": "f32", "count": 1000}
    ],
    "sequence": [
      {"name": "first", "kernel": "add", "args": {"x_ptr": {"buffer": "x"}, "y_ptr": {"buffer": "y"},
       "out_ptr": {"buffer": "t"}, "n": {"value": 1000}}, "launch": {"grid": [4]}},
      {"name": "second", "kernel": "add", "args": [{"buffer": "x"}, {"buffer": "v"}, {"buffer": "u"}, {"value": 1000}],
       "launch": {"grid": [4]}},
      {"name": "join", "kernel": "add", "args": {"x_ptr": {"buffer": "t"}, "y_ptr": {"buffer": "u"},
       "out_ptr": {"buffer": "out"}, "n": {"value": 1000}}, "launch": {"grid": [4]}}
    ],
    "warmup": 0, "iterations": 2
  })");
  m["kernels"]["add"]["code_object"] = entry;
  return m;
}

std::vector<float> random_floats(std::mt19937& rng) {
  std::uniform_real_distribution<float> d(-4.0f, 4.0f);
  std::vector<float> v(kN);
  for (auto& x : v) x = d(rng);
  return v;
}

// The kernel-to-kernel edges of a plan, as (from, to) node pairs.
std::set<std::pair<int, int>> edges_of(const json& plan) {
  std::set<std::pair<int, int>> out;
  for (const auto& e : plan["edges"]) out.insert({e["from"].get<int>(), e["to"].get<int>()});
  return out;
}

json edge(const json& plan, int from, int to) {
  for (const auto& e : plan["edges"])
    if (e["from"] == from && e["to"] == to) return e;
  return nullptr;
}

Result run_seq(const TempDir& dir, const json& m, const std::vector<std::string>& args) {
  write_text(dir / "seq.json", m.dump());
  std::vector<std::string> a = args;
  a.push_back((dir / "seq.json").string());
  return run_lrrt(dir, a);
}

}  // namespace

TEST_CASE("triton sequence: a bad step argument is exit 2 naming the step and the argument") {
  TempDir dir;
  const std::string entry = (kTritonEntries / "gfx942" / "add_kernel").string();
  struct Case {
    const char* what;
    std::function<void(json&)> edit;
    const char* pointer;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"unknown parameter", [](json& m) { m["sequence"][2]["args"]["z_ptr"] = {{"buffer", "x"}}; },
       "/sequence/2/args/z_ptr", "step \"join\": Triton kernel add_kernel has no parameter \"z_ptr\""},
      {"missing parameter", [](json& m) { m["sequence"][0]["args"].erase("n"); },
       "/sequence/0/args", "step \"first\": missing parameter \"n\" of Triton kernel add_kernel"},
      {"array too short", [](json& m) { m["sequence"][1]["args"].erase(3); },
       "/sequence/1/args", "step \"second\": Triton kernel add_kernel takes 4 argument(s)"},
      {"unknown buffer", [](json& m) { m["sequence"][2]["args"]["out_ptr"]["buffer"] = "nope"; },
       "/sequence/2/args/out_ptr/buffer", "step \"join\": "},
      {"pointer given a value", [](json& m) { m["sequence"][0]["args"]["y_ptr"] = {{"value", 1}}; },
       "/sequence/0/args/y_ptr", "step \"first\": parameter \"y_ptr\" of Triton kernel add_kernel is a pointer"},
      {"bad access", [](json& m) { m["sequence"][1]["args"][2]["access"] = "sometimes"; },
       "/sequence/1/args/2/access", "step \"second\": "},
      {"access on a scalar", [](json& m) { m["sequence"][0]["args"]["n"]["access"] = "read"; },
       "/sequence/0/args/n/access", "step \"first\": only buffer arguments declare access"},
      {"workgroup launch", [](json& m) { m["sequence"][1]["launch"] = {{"workgroup_size", {64}}, {"workgroup_count", {4}}}; },
       "/sequence/1/launch/workgroup_size", "step \"second\": a Triton kernel's launch is \"grid\""},
      {"wrong kernel name", [](json& m) { m["kernels"]["add"]["kernel"] = "mul_kernel"; },
       "/kernels/add/kernel", "the Triton entry's kernel is \"add_kernel\", not \"mul_kernel\""},
      {"patch of a pointer", [](json& m) { m["patch"] = {{"step", "first"}, {"arg", "out_ptr"}, {"values", {1}}}; },
       "/patch/arg", "argument 2 of step \"first\" is a buffer"},
      {"patch of a scratch pointer", [](json& m) { m["patch"] = {{"step", "first"}, {"arg", "global_scratch"}, {"values", {1}}}; },
       "/patch/arg", "argument 4 (\"global_scratch\") of step \"first\" is lrrt's to pass"},
  };
  for (const Case& c : cases) {
    const std::string what = c.what;
    CAPTURE(what);
    json m = add_chain(entry);
    c.edit(m);
    // `lrrt plan` parses before it opens a device: host is enough.
    const Result r = run_seq(dir, m, {"plan"});
    INFO(r.err);
    CHECK(r.rc == 2);
    CHECK(r.err.find(std::string(c.pointer) + ": " + c.message) != std::string::npos);
  }
}

TEST_CASE("triton sequence: an entry with another backend's binary names the kernel's code_object") {
  // The sm_90 entry's binary is a cubin: the host plans nothing of it.
  TempDir dir;
  const Result r = run_seq(dir, add_chain((kTritonEntries / "sm_90" / "add_kernel" / "add_kernel.json").string()), {"plan"});
  CHECK(r.rc == 2);
  INFO(r.err);
  CHECK(r.err.find("/kernels/add/code_object") != std::string::npos);
  CHECK(r.err.find("no code object for backend \"host\" (the manifest has: cuda)") != std::string::npos);
}

TEST_CASE("triton sequence: a Triton entry folder that does not exist is exit 2 naming the path, not the argument form") {
  // Arguments by parameter name with a code_object that is no Triton entry
  // (a typo in the folder's path) were refused as "expected an array of
  // arguments, got an object", which names neither the entry nor its path.
  TempDir dir;
  const fs::path missing = dir / "no_such_entry" / "add_kernel";
  Result r = run_seq(dir, add_chain(missing.string()), {"plan"});
  CHECK(r.rc == 2);
  INFO(r.err);
  CHECK(r.err.find("/sequence/0/args: step \"first\": arguments by parameter name are for a Triton cache entry") !=
        std::string::npos);
  CHECK(r.err.find("code_object " + missing.string() + " does not exist") != std::string::npos);
  CHECK(r.err.find("(kernel \"add\")") != std::string::npos);
  // A file that exists but is no entry (a host library) says so.
  const fs::path lib = kKernels / "saxpy.host.so";
  r = run_seq(dir, add_chain(lib.string()), {"plan"});
  CHECK(r.rc == 2);
  INFO(r.err);
  CHECK(r.err.find("code_object " + lib.string() + " is not one") != std::string::npos);
  // The single-kernel form: /args, before the kernel name it would ask for.
  json single = {{"lrrt_manifest", 1}, {"code_object", missing.string()}, {"args", {{"x_ptr", {{"buffer", "x"}}}}},
                 {"launch", {{"grid", {4}}}}};
  write_text(dir / "single.json", single.dump());
  r = run_lrrt(dir, {"plan", (dir / "single.json").string()});
  CHECK(r.rc == 2);
  INFO(r.err);
  CHECK(r.err.find("/args: arguments by parameter name are for a Triton cache entry") != std::string::npos);
  CHECK(r.err.find("code_object " + missing.string() + " does not exist") != std::string::npos);
}

TEST_CASE("triton sequence: the committed GPU manifest parses whole on a machine without its backend") {
  // tests/triton/sequence/manifest.json (ctest -L gpu runs it on cuda): the
  // host plans nothing of an sm_90 entry, but only after the whole manifest
  // parsed.
  TempDir dir;
  const Result r = run_lrrt(dir, {"plan", (kSource / "tests" / "triton" / "sequence" / "manifest.json").string()});
  CHECK(r.rc == 2);
  INFO(r.err);
  CHECK(r.err.find("/kernels/add/code_object: step \"first\": no code object for backend \"host\" (the manifest has: cuda)") !=
        std::string::npos);
}

#if defined(LRRT_CLI_HSA_STANDIN)
namespace {

struct TritonStandinEnv {
  TritonStandinEnv() {
    setenv("LRRT_HSA_LIBRARY", LRRT_CLI_HSA_STANDIN, 1);
    setenv("LRRT_HSA_STANDIN_ISA", "gfx942", 1);
    setenv("LRRT_HSA_STANDIN_KERNEL_DIR", LRRT_CLI_TEST_KERNEL_DIR, 1);  // triton_standin.host.so
    setenv("LRRT_WAIT_TIMEOUT_MS", "20000", 1);
  }
  ~TritonStandinEnv() {
    unsetenv("LRRT_HSA_LIBRARY");
    unsetenv("LRRT_HSA_STANDIN_ISA");
    unsetenv("LRRT_HSA_STANDIN_KERNEL_DIR");
    unsetenv("LRRT_WAIT_TIMEOUT_MS");
  }
};

json plan_of(const TempDir& dir, const json& m) {
  const Result r = run_seq(dir, m, {"plan", "--backend", "hsa", "-q", "--format", "json"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  return json::parse(r.out)["plans"][0];
}

}  // namespace

TEST_CASE("triton sequence: each access comes from the entry's IR, and the plan's edges follow it") {
  TritonStandinEnv env;
  TempDir dir;
  for (const std::string entry : {(kTritonEntries / "gfx942" / "add_kernel").string(),
                                  (kTritonEntries / "gfx942" / "add_kernel" / "add_kernel.json").string()}) {
    CAPTURE(entry);
    const json got = plan_of(dir, add_chain(entry));
    const json& plan = got["plan"];
    // x is read by both first and second: no edge between them; join reads t
    // (first's write) and u (second's write): RAW from each.
    CHECK(edges_of(plan) == std::set<std::pair<int, int>>{{0, 2}, {1, 2}});
    CHECK(edge(plan, 0, 2)["hazards"].dump().find("RAW") != std::string::npos);
    CHECK(edge(plan, 1, 2)["hazards"].dump().find("RAW") != std::string::npos);
    for (size_t s = 0; s < 3; ++s) {
      const json& acc = got["steps"][s]["accesses"];
      // The three pointers; the scratch pointers are null (size 0), no buffers.
      REQUIRE(acc.size() == 3);
      CHECK(acc[0]["access"] == "read");
      CHECK(acc[1]["access"] == "read");
      CHECK(acc[2]["access"] == "write");
      for (const auto& a : acc) CHECK(a["source"] == "ttir");
    }
    CHECK(got["steps"][2]["accesses"][2]["buffer"] == "out");
  }
  // The table names the source too.
  const Result table = run_seq(dir, add_chain((kTritonEntries / "gfx942" / "add_kernel").string()),
                               {"plan", "--backend", "hsa", "-q", "--format", "table"});
  REQUIRE(table.rc == 0);
  CHECK(table.out.find("(ttir)") != std::string::npos);
}

TEST_CASE("triton sequence: a declared access wins over the IR's (negative control: the RAW edge goes)") {
  TritonStandinEnv env;
  TempDir dir;
  json m = add_chain((kTritonEntries / "gfx942" / "add_kernel").string());
  // Declaring first's output read: join no longer reads what first writes.
  m["sequence"][0]["args"]["out_ptr"]["access"] = "read";
  const json got = plan_of(dir, m);
  CHECK(edges_of(got["plan"]) == std::set<std::pair<int, int>>{{1, 2}});
  const json& acc = got["steps"][0]["accesses"];
  CHECK(acc[2]["access"] == "read");
  CHECK(acc[2]["source"] == "declared");
  CHECK(acc[0]["source"] == "ttir");
  // Declaring second's input x read_write orders it after first (WAR on x).
  json w = add_chain((kTritonEntries / "gfx942" / "add_kernel").string());
  w["sequence"][1]["args"][0]["access"] = "read_write";
  const json got_w = plan_of(dir, w);
  CHECK(edges_of(got_w["plan"]).count({0, 1}) == 1);
  CHECK(got_w["steps"][1]["accesses"][0]["source"] == "declared");
}

TEST_CASE("triton sequence: a Triton step's scalar parameter is patched by name") {
  TritonStandinEnv env;
  TempDir dir;
  json m = add_chain((kTritonEntries / "gfx942" / "add_kernel").string());
  m["patch"] = {{"step", "first"}, {"arg", "n"}, {"values", {500, 1000}}};
  m["verify"] = {{"skip", "the plan only"}};
  const json got = plan_of(dir, m);
  CHECK(edges_of(got["plan"]) == std::set<std::pair<int, int>>{{0, 2}, {1, 2}});
  // n is the fourth parameter: an i32 by the entry's signature.
  m["patch"]["values"] = {int64_t(1) << 31};
  const Result r = run_seq(dir, m, {"plan"});
  CHECK(r.rc == 2);
  CHECK(r.err.find("/patch/values/0") != std::string::npos);
}

TEST_CASE("triton sequence: runs on the hsa stand-in eagerly and replayed, every element checked") {
  TritonStandinEnv env;
  TempDir dir;
  std::mt19937 rng(20261206);
  const auto x = random_floats(rng), y = random_floats(rng), v = random_floats(rng);
  write_npy(dir / "x.npy", x);
  write_npy(dir / "y.npy", y);
  write_npy(dir / "v.npy", v);
  json m = add_chain((kTritonEntries / "gfx942" / "add_kernel").string());
  for (int b = 0; b < 3; ++b) m["buffers"][b]["init"] = {{"npy", m["buffers"][b]["name"].get<std::string>() + ".npy"}};
  json expected = json::array(), t_expected = json::array();
  for (int i = 0; i < kN; ++i) {
    t_expected.push_back(x[i] + y[i]);
    expected.push_back((x[i] + y[i]) + (x[i] + v[i]));
  }
  m["verify"] = json::array({{{"buffer", "out"}, {"expected", {{"values", expected}}}, {"rtol", 0}, {"atol", 0}},
                             {{"buffer", "t"}, {"expected", {{"values", t_expected}}}, {"rtol", 0}, {"atol", 0}}});
  const Result r = run_seq(dir, m, {"run", "--backend", "hsa", "-q", "--format", "json", "-o", (dir / "out.json").string()});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json run = json::parse(read_text(dir / "out.json"))["runs"][0];
  CHECK(run["kind"] == "sequence");
  CHECK(run["verification"]["status"] == "passed");
  size_t checks = 0;
  for (const auto& c : run["verification"]["checks"]) {
    CHECK(c["status"] == "passed");
    ++checks;
  }
  CHECK(checks >= 4);  // two buffers, at least eager and replayed
  // Negative control: a wrong expected element fails the run.
  expected[kN - 1] = expected[kN - 1].get<float>() + 1.0f;
  m["verify"][0]["expected"]["values"] = expected;
  const Result bad = run_seq(dir, m, {"run", "--backend", "hsa", "-q", "--format", "json", "-o", (dir / "bad.json").string()});
  CHECK(bad.rc != 0);
  CHECK(json::parse(read_text(dir / "bad.json"))["runs"][0]["verification"]["status"] == "failed");
}

TEST_CASE("triton sequence: the committed GPU manifest, on its gfx942 twin, passes its expected files on the stand-in") {
  // The same manifest with the gfx942 entry: the expected .npy files the GPU
  // check compares with hold what the three steps compute.
  TritonStandinEnv env;
  TempDir dir;
  const fs::path src = kSource / "tests" / "triton" / "sequence";
  json m = json::parse(read_text(src / "manifest.json"));
  m["kernels"]["add"]["code_object"] = (kTritonEntries / "gfx942" / "add_kernel").string();
  for (auto& v : m["verify"]) v["expected"]["npy"] = (src / v["expected"]["npy"].get<std::string>()).string();
  const Result r = run_seq(dir, m, {"run", "--backend", "hsa", "-q", "--format", "json", "-o", (dir / "out.json").string()});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json run = json::parse(read_text(dir / "out.json"))["runs"][0];
  CHECK(run["verification"]["status"] == "passed");
  for (const auto& c : run["verification"]["checks"]) CHECK(c["status"] == "passed");
  // Negative control: the join step adding t to itself fails out's check.
  m["sequence"][2]["args"]["y_ptr"]["buffer"] = "t";
  const Result bad = run_seq(dir, m, {"run", "--backend", "hsa", "-q", "--format", "json", "-o", (dir / "bad.json").string()});
  CHECK(bad.rc != 0);
  CHECK(json::parse(read_text(dir / "bad.json"))["runs"][0]["verification"]["status"] == "failed");
}

TEST_CASE("triton sequence: each step gets its own scratch buffer, sized by its grid, and no edge from it") {
  TritonStandinEnv env;
  TempDir dir;
  const fs::path e = dir / "add_kernel";
  fs::copy(kTritonEntries / "gfx942" / "add_kernel", e, fs::copy_options::recursive);
  json md = json::parse(read_text(e / "add_kernel.json"));
  md["profile_scratch_size"] = 96;
  md["profile_scratch_align"] = 8;
  write_text(e / "add_kernel.json", md.dump());
  json m = add_chain(e.string());
  m["sequence"][1]["launch"]["grid"] = {8};  // 8 programs: twice first's scratch
  const json got = plan_of(dir, m);
  // Scratch is read-write to lrrt (nothing proves less), but each written
  // step has its own: first and second stay unordered.
  CHECK(edges_of(got["plan"]) == std::set<std::pair<int, int>>{{0, 2}, {1, 2}});
  std::map<std::string, uint64_t> scratch;
  for (const auto& b : got["buffers"]) {
    const std::string name = b["name"];
    if (name.rfind("triton_", 0) != 0) continue;
    scratch[name] = std::stoull(b["bytes"][1].get<std::string>(), nullptr, 16) - std::stoull(b["bytes"][0].get<std::string>(), nullptr, 16);
  }
  CHECK(scratch == std::map<std::string, uint64_t>{{"triton_0_first_profile_scratch", 4 * 96},
                                                   {"triton_1_second_profile_scratch", 8 * 96},
                                                   {"triton_2_join_profile_scratch", 4 * 96}});
  const json& acc = got["steps"][1]["accesses"];
  REQUIRE(acc.size() == 4);
  CHECK(acc[3]["buffer"] == "triton_1_second_profile_scratch");
  CHECK(acc[3]["access"] == "read_write");
  CHECK(acc[3]["source"] == "default");
  CHECK(acc[2]["source"] == "ttir");
  // A manifest buffer of the scratch's name is refused, naming the step.
  m["buffers"].push_back({{"name", "triton_2_join_profile_scratch"}, {"type", "u8"}, {"count", 8}});
  const Result clash = run_seq(dir, m, {"plan"});
  INFO(clash.err);
  CHECK(clash.rc == 2);
  CHECK(clash.err.find("buffer name \"triton_2_join_profile_scratch\" is lrrt's (Triton scratch of step \"join\")") !=
        std::string::npos);
}
#endif

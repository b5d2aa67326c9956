// Sweeps end to end on host: every state verified and reported, states the
// device cannot run skipped with the reason, zipped axes, a verification
// failure in one state, --axis, the outputs, Ctrl-C, and hostile sweeps.
// Timing is short (fixed iterations, or a tiny --min-time): the tests assert
// what ran, never how fast.
#include <doctest/doctest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <cstring>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "cli_support.hpp"

using namespace cli_test;

namespace {

// saxpy over n x wg, verified against the built-in reference.
json sweep_cli_saxpy(const json& axes) {
  json m = saxpy_manifest();
  m["buffers"][0]["count"] = {{"axis", "n"}};
  m["buffers"][1]["count"] = {{"axis", "n"}};
  m["buffers"][0]["access"] = "read";
  m["buffers"][1]["access"] = "read_write";
  m["launch"]["workgroup_size"] = {{{"axis", "wg"}}};
  m["elements_per_iteration"] = {{"axis", "n"}};
  m["axes"] = axes;
  return m;
}

std::vector<std::string> sweep_cli_args(const TempDir& dir, const fs::path& manifest, std::vector<std::string> extra = {},
                                        const std::string& out = "out.json") {
  std::vector<std::string> a = {"run", "--backend", "host", "--kernel-dir", kKernels.string(), "--iterations", "2",
                                "--warmup", "0", "-q", "-o", (dir / out).string()};
  a.insert(a.end(), extra.begin(), extra.end());
  a.push_back(manifest.string());
  return a;
}

}  // namespace

TEST_CASE("sweep: every state runs and is verified, a workgroup over the device's limit is skipped and the sweep goes on") {
  TempDir dir;
  const fs::path m = write_manifest(dir, "s.json", sweep_cli_saxpy({{"n", {1000, "4K"}}, {"wg", {64, 2048, 256}}}));
  Result r = run_lrrt(dir, sweep_cli_args(dir, m));
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json doc = json::parse(read_text(dir / "out.json"));
  CHECK(doc["complete"] == true);
  CHECK(doc["interrupted"] == false);
  const json& s = doc["runs"][0];
  CHECK(s["kind"] == "sweep");
  CHECK(s["state_count"] == 6);
  CHECK(s["states_run"] == 4);
  CHECK(s["states_skipped"] == 2);
  REQUIRE(s["states"].size() == 6);
  std::set<std::pair<int, int>> ran;
  for (const auto& st : s["states"]) {
    const int n = st["axes"]["n"], wg = st["axes"]["wg"];
    CAPTURE(st.dump());
    if (wg == 2048) {
      CHECK(st["status"] == "skipped");
      CHECK(st["reason"].get<std::string>().find("exceeds the device's maximum of 1024") != std::string::npos);
      continue;
    }
    ran.insert({n, wg});
    CHECK(st["status"] == "ran");
    CHECK(st["launch"]["workgroup_size"][0] == wg);
    CHECK(st["launch"]["work_items"].get<int>() >= n);
    CHECK(st["verification"]["status"] == "passed");
    CHECK(st["verification"]["checks"][0]["compared"] == n);  // every element
    CHECK(st["verification"]["checks"][0]["mismatches"] == 0);
    CHECK(st["timing"]["sample_count"] == 2);
    CHECK(st["timing"]["criterion"]["kind"] == "iterations");
    CHECK(st["timing"]["bytes_per_iteration"] == 12 * n);
    CHECK(st["timing"]["elements_per_iteration"] == n);
    CHECK(st["timing"]["peak_source"] == "measured");
    CHECK(st["timing"].contains("percent_of_peak"));
    CHECK_FALSE(st["timing"].contains("samples"));
  }
  CHECK(ran == std::set<std::pair<int, int>>{{1000, 64}, {1000, 256}, {4096, 64}, {4096, 256}});
  CHECK(doc["device"]["memory"]["peak_bandwidth_source"] == "measured");
  CHECK(doc["device"]["memory"]["peak_bandwidth_gbps"].get<double>() > 0);

  // The same results as CSV and a table: one row per state, the axes as columns.
  r = run_lrrt(dir, {"run", "--backend", "host", "--kernel-dir", kKernels.string(), "--iterations", "1", "--warmup", "0", "-q",
                     "--format", "csv", "--axis", "wg=[64,2048]", m.string()});
  REQUIRE(r.rc == 0);
  std::istringstream lines(r.out);
  std::string header, line;
  std::getline(lines, header);
  CHECK(header.find(",state,status,reason,n,wg,noise,criterion_met,elements_per_second,percent_of_peak,peak_source") != std::string::npos);
  int rows = 0, skipped = 0;
  while (std::getline(lines, line)) {
    ++rows;
    if (line.find(",skipped,") != std::string::npos) ++skipped;
  }
  CHECK(rows == 4);
  CHECK(skipped == 2);
  r = run_lrrt(dir, {"run", "--backend", "host", "--kernel-dir", kKernels.string(), "--iterations", "1", "--warmup", "0", "-q",
                     "--format", "markdown", "--axis", "n=[1000]", m.string()});
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("sweep of 3 states over n (1) x wg (3)") != std::string::npos);
  CHECK(r.out.find("skipped: /launch/workgroup_size") != std::string::npos);
}

TEST_CASE("sweep: zipped axes vary together, the noise criterion is reported, --verify first") {
  TempDir dir;
  json m = sweep_cli_saxpy({{"n", {256, 1000, 4096}}, {"wg", {32, 64, 128}}});
  m["zip"] = json::array({json::array({"n", "wg"})});
  const fs::path p = write_manifest(dir, "z.json", m);
  std::vector<std::string> args = {"run", "--backend", "host", "--kernel-dir", kKernels.string(), "--min-time", "0",
                                   "--min-samples", "3", "--max-time", "0.2", "--max-noise", "100000", "--verify", "first", "-q",
                                   "-o", (dir / "out.json").string(), p.string()};
  Result r = run_lrrt(dir, args);
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json s = json::parse(read_text(dir / "out.json"))["runs"][0];
  CHECK(s["zip"] == json::array({json::array({"n", "wg"})}));
  REQUIRE(s["states"].size() == 3);
  const std::vector<std::pair<int, int>> expect = {{256, 32}, {1000, 64}, {4096, 128}};
  for (size_t k = 0; k < 3; ++k) {
    const json& st = s["states"][k];
    CHECK(st["axes"]["n"] == expect[k].first);
    CHECK(st["axes"]["wg"] == expect[k].second);
    CHECK(st["timing"]["criterion"]["kind"] == "noise");
    CHECK(st["timing"]["criterion"]["met"] == true);  // 100000% noise is always met
    CHECK(st["timing"]["sample_count"].get<int>() >= 3);
    CHECK(st["verification"]["status"] == (k == 0 ? "passed" : "skipped"));
  }
  // A criterion that cannot be met within --max-time is reported, not hidden.
  args[6] = "10";  // --min-time 10 s of samples within --max-time 0.2 s
  r = run_lrrt(dir, args);
  REQUIRE(r.rc == 0);
  const json s2 = json::parse(read_text(dir / "out.json"))["runs"][0];
  CHECK(s2["states_criterion_not_met"] == 3);
  for (const auto& st : s2["states"]) {
    CHECK(st["timing"]["criterion"]["met"] == false);
    CHECK(st["timing"]["criterion"]["stop"].get<std::string>().find("timeout") == 0);
  }
}

TEST_CASE("sweep: a verification failure in one state is found (exit 1) and the others pass") {
  TempDir dir;
  // y = 2*x + y with x = 1, y = 0: every element 2. One state's expected
  // file differs from it in one random element.
  const unsigned seed = std::random_device{}();
  CAPTURE(seed);
  std::mt19937 rng(seed);
  const size_t n = 512;
  const size_t bad = std::uniform_int_distribution<size_t>(0, n - 1)(rng);
  std::vector<float> ok(n, 2.0f), wrong(n, 2.0f);
  wrong[bad] = 2.5f;
  write_npy(dir / "ok.npy", ok);
  write_npy(dir / "wrong.npy", wrong);
  json m = saxpy_manifest(n);
  m["axes"] = {{"expected", {"ok.npy", "wrong.npy", "ok.npy"}}, {"wg", {64, 128, 256}}};
  m["zip"] = json::array({json::array({"expected", "wg"})});
  m["args"][0]["value"] = 2.0;
  m["buffers"][0]["init"] = {{"fill", 1}};
  m["buffers"][1]["init"] = "zeros";
  m["launch"]["workgroup_size"] = {{{"axis", "wg"}}};
  m["verify"] = {{{"buffer", "y"}, {"expected", {{"npy", {{"axis", "expected"}}}}}, {"rtol", 0}, {"atol", 0}}};
  Result r = run_lrrt(dir, sweep_cli_args(dir, write_manifest(dir, "v.json", m)));
  INFO(r.err);
  CHECK(r.rc == 1);
  const json s = json::parse(read_text(dir / "out.json"))["runs"][0];
  CHECK(s["verification"]["status"] == "failed");
  CHECK(s["verification"]["states_failed"] == 1);
  CHECK(s["verification"]["states_passed"] == 2);
  const json& failed = s["states"][1];
  CHECK(failed["axes"]["expected"] == "wrong.npy");
  CHECK(failed["verification"]["checks"][0]["mismatches"] == 1);
  CHECK(failed["verification"]["checks"][0]["first_mismatches"][0]["index"] == bad);
  CHECK(s["states"][0]["verification"]["status"] == "passed");
  CHECK(s["states"][2]["verification"]["status"] == "passed");
}

TEST_CASE("sweep: a state too big for the memory there is is skipped, a sequence's repeat is an axis") {
  TempDir dir;
  const fs::path m = write_manifest(dir, "s.json", sweep_cli_saxpy({{"n", {1000, "4M"}}, {"wg", {64}}}));
  setenv("LRRT_TEST_MEMAVAILABLE_BYTES", "4000000", 1);
  Result r = run_lrrt(dir, sweep_cli_args(dir, m));
  unsetenv("LRRT_TEST_MEMAVAILABLE_BYTES");
  INFO(r.err);
  REQUIRE(r.rc == 0);
  json s = json::parse(read_text(dir / "out.json"))["runs"][0];
  CHECK(s["states"][0]["status"] == "ran");
  CHECK(s["states"][1]["status"] == "skipped");
  CHECK(s["states"][1]["reason"].get<std::string>().find("more than") != std::string::npos);

  r = run_lrrt(dir, sweep_cli_args(dir, kSource / "manifests/saxpy_chain_sweep.json", {"--axis", "chain=[1,3]"}));
  INFO(r.err);
  REQUIRE(r.rc == 0);
  s = json::parse(read_text(dir / "out.json"))["runs"][0];
  REQUIRE(s["states"].size() == 2);
  CHECK(s["states"][0]["sequence"]["steps"] == 1);
  CHECK(s["states"][1]["sequence"]["steps"] == 3);
  for (const auto& st : s["states"]) {
    CHECK(st["verification"]["status"] == "passed");
    CHECK(st["ways"].size() == 2);
  }
}

TEST_CASE("sweep: hostile sweeps and --axis are exit 2 naming the field, with no result file") {
  TempDir dir;
  auto expect_sweep_error = [&](const json& m, const std::vector<std::string>& fragments, std::vector<std::string> extra = {}) {
    const fs::path p = write_manifest(dir, "h.json", m);
    expect_error(dir, run_lrrt(dir, sweep_cli_args(dir, p, extra)), 2, fragments);
  };
  const json axes = {{"n", {1000}}, {"wg", {64}}};
  json m = sweep_cli_saxpy(axes);
  m["axes"]["n"] = json::array();
  expect_sweep_error(m, {"/axes/n: an axis needs at least one value"});
  m = sweep_cli_saxpy(axes);
  m["launch"]["workgroup_size"][0]["axis"] = "wgg";
  expect_sweep_error(m, {"/launch/workgroup_size/0/axis: unknown axis \"wgg\" (axes: n, wg)"});
  m = sweep_cli_saxpy({{"n", {{"pow2", {0, 20}}}}, {"wg", {{"pow2", {0, 9}}}}});
  expect_sweep_error(m, {"/axes: the sweep has 210 states", "more than the 100 allowed", "--max-states"}, {"--max-states", "100"});
  m = sweep_cli_saxpy({{"n", {"1K", "4611686018427387904"}}, {"wg", {64}}});
  expect_sweep_error(m, {"/buffers/0/count: 4611686018427387904 elements of f32 overflow", "state 2 of 2"});
  m = sweep_cli_saxpy({{"n", {"99999999999999999999K"}}, {"wg", {64}}});
  expect_sweep_error(m, {"/axes/n/0: ", "does not fit in 64 bits"});
  m = sweep_cli_saxpy(axes);
  expect_sweep_error(m, {"--axis q=[1]: the manifest has no axis \"q\""}, {"--axis", "q=[1]"});
  expect_sweep_error(m, {"--axis n=[1: a list ends with ]"}, {"--axis", "n=[1"});
  expect_sweep_error(m, {"--cold with --batch"}, {"--cold", "--batch", "4"});
  m["save"] = {{{"buffer", "y"}, {"npy", "y.npy"}}};
  expect_sweep_error(m, {"/save: a sweep cannot save outputs"});
  // --axis on a command without a sweep.
  const fs::path plain = write_manifest(dir, "p.json", saxpy_manifest());
  expect_error(dir, run_lrrt(dir, sweep_cli_args(dir, plain, {"--axis", "n=[1]"})), 2, {"no manifest of the command declares"});
}

TEST_CASE("sweep: Ctrl-C leaves a results file marked interrupted that holds the finished states") {
  TempDir dir;
  // Each state times for 0.4 s (a --min-time no noise criterion shortens).
  const fs::path m = write_manifest(dir, "s.json", sweep_cli_saxpy({{"n", {1000}}, {"wg", {32, 64, 128, 256, 512, 1024}}}));
  std::vector<std::string> argv_s = {kBinary.string(), "run", "--backend", "host", "--kernel-dir", kKernels.string(), "--min-time",
                                     "0.4", "--max-time", "0.4", "--max-noise", "0", "-q", "-o", (dir / "out.json").string(), m.string()};
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  const fs::path err = dir / ".stderr";
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  REQUIRE(posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ) == 0);
  posix_spawn_file_actions_destroy(&fa);
  // -o appears once the first state finished (rewritten after each state).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!fs::exists(dir / "out.json") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  REQUIRE(fs::exists(dir / "out.json"));
  const json partial = json::parse(read_text(dir / "out.json"));
  CHECK(partial["complete"] == false);
  kill(pid, SIGINT);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  INFO(read_text(err));
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  const json doc = json::parse(read_text(dir / "out.json"));
  CHECK(doc["interrupted"] == true);
  CHECK(doc["complete"] == false);
  const json& s = doc["runs"][0];
  CHECK(s["interrupted"] == true);
  CHECK(s["states"].size() >= 1);
  CHECK(s["states"].size() < 6);
  for (const auto& st : s["states"]) {
    CHECK(st["status"] == "ran");
    CHECK(st["verification"]["status"] == "passed");
    CHECK(st["timing"]["criterion"]["stop"] != "interrupted");  // a cut-short state is not kept
  }
  for (const auto& e : dir.entries()) CHECK_MESSAGE(e.find(".tmp.") == std::string::npos, "temporary left: " << e);
}

TEST_CASE("sweep: the bundled sweep manifests parse, and a narrowed saxpy and transpose sweep pass") {
  TempDir dir;
  Result r = run_lrrt(dir, sweep_cli_args(dir, kSource / "manifests/saxpy_sweep.json",
                                          {"--axis", "n[pow2]=[10,12]", "--axis", "wg=[128,1024]"}));
  INFO(r.err);
  REQUIRE(r.rc == 0);
  json s = json::parse(read_text(dir / "out.json"))["runs"][0];
  CHECK(s["state_count"] == 8);  // 2 n x 2 wg x 2 kernels (zipped with their files and elements per work-item)
  std::set<std::string> kernels;
  for (const auto& st : s["states"]) {
    CHECK(st["verification"]["status"] == "passed");
    CHECK(st["verification"]["checks"][0]["compared"] == st["axes"]["n"]);
    kernels.insert(st["axes"]["kernel"].get<std::string>());
    // saxpy4 takes four elements per work-item: ceil(n / 4) work-items, in whole workgroups.
    const uint64_t n = st["axes"]["n"], wg = st["axes"]["wg"], per = st["axes"]["per_item"];
    const uint64_t items = (n + per - 1) / per;
    CHECK(st["launch"]["workgroup_count"][0] == (items + wg - 1) / wg);
  }
  CHECK(kernels == std::set<std::string>{"saxpy", "saxpy4"});
  r = run_lrrt(dir, sweep_cli_args(dir, kSource / "manifests/transpose_sweep.json",
                                   {"--axis", "rows=[33,64]", "--axis", "cols=[100,17]"}));
  INFO(r.err);
  REQUIRE(r.rc == 0);
  s = json::parse(read_text(dir / "out.json"))["runs"][0];
  REQUIRE(s["states"].size() == 4);  // 2 shapes x 2 tiles
  for (const auto& st : s["states"]) {
    CHECK(st["verification"]["status"] == "passed");
    CHECK(st["verification"]["checks"][0]["compared"] == st["axes"]["rows"].get<int>() * st["axes"]["cols"].get<int>());
  }
  CHECK(s["states"][1]["launch"]["dynamic_shared_bytes"] == 4224);
}

TEST_CASE("sweep: lrrt compare pairs states by axis values and says faster, slower or same within noise") {
  TempDir dir;
  const fs::path m = write_manifest(dir, "s.json", sweep_cli_saxpy({{"n", {1000, 2000}}, {"wg", {64, 128}}}));
  Result r = run_lrrt(dir, sweep_cli_args(dir, m, {}, "base.json"));
  REQUIRE(r.rc == 0);
  json doc = json::parse(read_text(dir / "base.json"));
  // Both files with 1% noise: the verdicts then follow the medians alone.
  for (auto& st : doc["runs"][0]["states"]) st["timing"]["noise"] = 0.01;
  write_text(dir / "base.json", doc.dump());
  // The new file: states in another order, one 3x slower, one 3x faster.
  json& states = doc["runs"][0]["states"];
  std::reverse(states.begin(), states.end());
  for (auto& st : states) st["timing"]["noise"] = 0.01;
  const json slow_axes = states[0]["axes"], fast_axes = states[1]["axes"];
  states[0]["timing"]["median_ns"] = states[0]["timing"]["median_ns"].get<double>() * 3;
  states[1]["timing"]["median_ns"] = states[1]["timing"]["median_ns"].get<double>() / 3;
  write_text(dir / "new.json", doc.dump());
  r = run_lrrt(dir, {"compare", "--format", "json", (dir / "base.json").string(), (dir / "new.json").string()});
  INFO(r.err);
  CHECK(r.rc == 1);  // a slower state is a regression
  const json c = json::parse(r.out);
  CHECK(c["summary"]["rows"] == 4);
  CHECK(c["summary"]["slower"] == 1);
  CHECK(c["summary"]["faster"] == 1);
  CHECK(c["summary"]["same"] == 2);
  for (const auto& row : c["rows"]) {
    const json axes = json::parse(row["case"].get<std::string>());
    CHECK(row["verdict"] == (axes == slow_axes ? "slower" : axes == fast_axes ? "faster" : "same"));
  }
  // A state missing from the new file is an error unless --allow-missing.
  states.erase(states.begin());
  write_text(dir / "new.json", doc.dump());
  r = run_lrrt(dir, {"compare", "--format", "json", (dir / "base.json").string(), (dir / "new.json").string()});
  CHECK(r.rc == 2);
  CHECK(r.err.find("lacks 1 state(s)") != std::string::npos);
}

TEST_CASE("sweep: --batch times N launches per sample and --cold flushes twice the last-level cache before each") {
  TempDir dir;
  const fs::path m = write_manifest(dir, "s.json", sweep_cli_saxpy({{"n", {1000}}, {"wg", {64}}}));
  Result r = run_lrrt(dir, sweep_cli_args(dir, m, {"--batch", "4"}));
  INFO(r.err);
  REQUIRE(r.rc == 0);
  json st = json::parse(read_text(dir / "out.json"))["runs"][0]["states"][0];
  CHECK(st["timing"]["batch"] == 4);
  CHECK(st["timing"]["cold"] == false);
  CHECK(st["timing"]["sample_count"] == 2);
  CHECK(st["verification"]["status"] == "passed");
  r = run_lrrt(dir, sweep_cli_args(dir, m, {"--cold"}));
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json doc = json::parse(read_text(dir / "out.json"));
  st = doc["runs"][0]["states"][0];
  CHECK(st["timing"]["cold"] == true);
  const uint64_t llc = doc["device"]["memory"]["last_level_cache_bytes"];
  const json& flush = st["timing"]["flush"];
  CHECK(flush["llc_bytes"] == llc);
  CHECK(flush["bytes_written"].get<uint64_t>() == 2 * (llc ? llc : uint64_t(256) << 20));
  CHECK(st["verification"]["status"] == "passed");
}

#if defined(LRRT_CLI_HSA_STANDIN)
// The queue hold (sampling.hpp, opt-in with LRRT_HOLD_QUEUE=1): on a GPU
// backend each round of samples is enqueued behind spin.*'s hold_queue and
// released by the host, never by the kernel's poll limit; results stay
// verified. Off by default, and never on host, each saying why.
TEST_CASE("run: timed rounds behind a held queue on the hsa stand-in, released by the host, off by default") {
  TempDir dir;
  const fs::path m = write_manifest(dir, "m.json", saxpy_manifest(4096));
  auto timing_of = [&](const std::string& backend, bool hold) {
    setenv("LRRT_HSA_LIBRARY", LRRT_CLI_HSA_STANDIN, 1);
    if (hold) setenv("LRRT_HOLD_QUEUE", "1", 1);
    const Result r = run_lrrt(dir, {"run", "--backend", backend, "--kernel-dir", kKernels.string(), "--iterations", "300",
                                    "--warmup", "1", "-q", "--format", "json", "-o", (dir / "out.json").string(),
                                    m.string()});
    unsetenv("LRRT_HOLD_QUEUE");
    unsetenv("LRRT_HSA_LIBRARY");
    REQUIRE_MESSAGE(r.rc == 0, r.err);
    const json out = json::parse(read_text(dir / "out.json"));
    CHECK(out["runs"][0]["verification"]["status"] == "passed");
    CHECK(out["runs"][0]["timing"]["sample_count"] == 300);
    return out["runs"][0]["timing"];
  };
  const json held = timing_of("hsa", true);
  CHECK(held["queue_hold"]["held"] == true);
  CHECK(held["queue_hold"]["rounds"].get<uint32_t>() >= 2);  // 300 samples, at most 85 a round
  CHECK(held["queue_hold"]["rounds_released_by_timeout"] == 0);
  const json off = timing_of("hsa", false);
  CHECK(off["queue_hold"]["held"] == false);
  CHECK(off["queue_hold"]["why_not"].get<std::string>().find("LRRT_HOLD_QUEUE=1") != std::string::npos);
  const json host = timing_of("host", true);
  CHECK(host["queue_hold"]["held"] == false);
  CHECK(host["queue_hold"]["why_not"].get<std::string>().find("host backend") != std::string::npos);
}
#endif

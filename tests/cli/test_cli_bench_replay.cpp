// `lrrt bench replay` end to end on the host backend and the hsa stand-in:
// every case and way present, outputs verified by the benchmark itself.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "cli_support.hpp"

using namespace cli_test;

namespace {

// `lrrt bench replay --quick` on backend, two samples a way: its result
// document, after checking that the run succeeded with no errors.
json quick_bench_replay(const std::string& backend) {
  TempDir dir;
  Result r = run_lrrt(dir, {"bench", "replay", "--backend", backend, "--kernel-dir", kKernels.string(), "--quick",
                            "--min-time", "0", "--min-samples", "2", "--max-samples", "2", "-q", "-o",
                            (dir / "replay.json").string()});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  json doc = json::parse(read_text(dir / "replay.json"));
  CHECK(doc["errors"].empty());
  return doc;
}

// `lrrt bench replay` with a tiny time budget on `backend`: every case has
// lrrt's replay and per-launch rows and the native per-launch row; the native
// graph row where the backend has one (hsa: the raw AQL loop), else its
// summary says there is none. The benchmark checks the saxpy chains' and the
// spin kernels' outputs of every way before timing and fails otherwise
// (errors would then be non-empty and the exit status 3).
void expect_bench_replay(const std::string& backend, bool native_graph) {
  json doc = quick_bench_replay(backend);
  auto find = [&](const std::string& metric, const std::string& kernels, const std::string& impl,
                  const std::string& mode) -> const json* {
    for (const auto& m : doc["measurements"])
      if (m["benchmark"] == "replay" && m["backend"] == backend && m["metric"] == metric && m["impl"] == impl &&
          m["params"].value("kernels", "") == kernels && m["params"].value("mode", "") == mode)
        return &m;
    return nullptr;
  };
  auto summary = [&](const std::string& name) -> const json* {
    for (const auto& s : doc["summaries"])
      if (s["benchmark"] == "replay" && s["backend"] == backend && s["name"] == name) return &s;
    return nullptr;
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"chain", "1"},     {"chain", "16"},   {"chain", "256"},          {"chain", "1024"},
      {"diamond", "4"},   {"spin", "1"},     {"fan-out", "8"},          {"saxpy-chain", "1000"},
      {"patched-replay", "16"}};
  for (const auto& [metric, kernels] : cases) {
    INFO(metric << " " << kernels);
    for (const auto& [impl, mode] : std::vector<std::pair<std::string, std::string>>{
             {"lrrt", "replay"}, {"lrrt", "per-launch"}, {"native", "per-launch"}}) {
      const json* m = find(metric, kernels, impl, mode);
      REQUIRE_MESSAGE(m, impl << " " << mode);
      CHECK((*m)["samples"].size() == 2);
      CHECK((*m)["stats"]["median"].get<double>() > 0);
    }
    const json* graph = find(metric, kernels, "native", "replay");
    CHECK(bool(graph) == native_graph);
    const json* vs = summary(metric + "-" + kernels + "-replay-vs-native-graph");
    REQUIRE(vs);
    CHECK((*vs)["unit"] == "ns");
    if (native_graph) {
      CHECK((*vs)["baseline"].get<double>() > 0);
      CHECK((*vs)["ratio"].get<double>() > 0);
    } else {
      CHECK_FALSE(vs->contains("baseline"));
      CHECK((*vs)["note"].get<std::string>().find("no native graph") != std::string::npos);
    }
    const json* pl = summary(metric + "-" + kernels + "-per-launch-vs-replay");
    REQUIRE(pl);
    CHECK((*pl)["baseline_label"] == "lrrt replay");
    // Cases with several replays per sample: back to back against one at a time.
    const bool several = metric != "saxpy-chain" && !(metric == "chain" && kernels == "1024") &&
                         !(metric == "chain" && kernels == "256");
    CHECK(bool(find(metric, kernels, "lrrt", "one-at-a-time")) == several);
    if (several) {
      const json* b2b = summary(metric + "-" + kernels + "-back-to-back-vs-one-at-a-time");
      REQUIRE(b2b);
      CHECK((*b2b)["baseline"].get<double>() > 0);
      CHECK((*b2b)["note"].get<std::string>().find("replays/s back to back") != std::string::npos);
    }
  }
  const json* overlap = summary("fan-out-overlap");
  REQUIRE(overlap);
  CHECK((*overlap)["note"].get<std::string>().find("iterations") != std::string::npos);
  CHECK(bool(summary("fan-out-overlap-native-graph")) == native_graph);
}

}  // namespace

TEST_CASE("bench replay on host: every case, four ways (no native graph on host), results verified") {
  expect_bench_replay("host", false);
}

// LRRT_BENCH_REPLAY_WAYS=lrrt (scripts/rust-replay-check): lrrt's ways only,
// as the Rust example alternates them; the chosen case only.
TEST_CASE("bench replay LRRT_BENCH_REPLAY_WAYS=lrrt: lrrt's replay and per-launch only, no native rows") {
  struct Env {
    Env() {
      setenv("LRRT_BENCH_REPLAY_WAYS", "lrrt", 1);
      setenv("LRRT_BENCH_REPLAY_CASES", "saxpy-chain-1000", 1);
    }
    ~Env() {
      unsetenv("LRRT_BENCH_REPLAY_WAYS");
      unsetenv("LRRT_BENCH_REPLAY_CASES");
    }
  } env;
  json doc = quick_bench_replay("host");
  std::set<std::string> ways;
  for (const auto& m : doc["measurements"])
    if (m["benchmark"] == "replay" && !m["params"].contains("timed"))
      ways.insert(m["metric"].get<std::string>() + " " + m["impl"].get<std::string>() + " " +
                  m["params"]["mode"].get<std::string>());
  CHECK(ways == std::set<std::string>{"saxpy-chain lrrt per-launch", "saxpy-chain lrrt replay"});
  // A value other than all or lrrt is refused before any work (exit 2).
  setenv("LRRT_BENCH_REPLAY_WAYS", "native", 1);
  TempDir dir;
  Result bad = run_lrrt(dir, {"bench", "replay", "--backend", "host", "--kernel-dir", kKernels.string(), "--quick"});
  CHECK(bad.rc == 2);
  CHECK(bad.err.find("LRRT_BENCH_REPLAY_WAYS") != std::string::npos);
}

#if defined(LRRT_CLI_HSA_STANDIN)
TEST_CASE("bench replay on the hsa stand-in: every case with the native graph (the raw AQL loop)") {
  struct Env {  // the stand-in for this test only
    Env() {
      setenv("LRRT_HSA_LIBRARY", LRRT_CLI_HSA_STANDIN, 1);
      setenv("LRRT_WAIT_TIMEOUT_MS", "20000", 1);
    }
    ~Env() {
      unsetenv("LRRT_HSA_LIBRARY");
      unsetenv("LRRT_WAIT_TIMEOUT_MS");
    }
  } env;
  expect_bench_replay("hsa", true);
}
#endif

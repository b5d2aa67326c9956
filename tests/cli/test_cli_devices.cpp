// Several devices through the CLI (issue 23) on the host backend with
// LRRT_HOST_DEVICES=N: lrrt info's peer access, lrrt run --device all (every
// device verified, the spread over them), lrrt bench p2p, and the inputs
// they refuse.
#include <doctest/doctest.h>

#include <cstdlib>
#include <map>
#include <set>
#include <vector>

#include "cli_support.hpp"

using namespace cli_test;

namespace {

struct HostDevicesEnv {
  explicit HostDevicesEnv(const char* n) { setenv("LRRT_HOST_DEVICES", n, 1); }
  ~HostDevicesEnv() { unsetenv("LRRT_HOST_DEVICES"); }
};

}  // namespace

TEST_CASE("devices: lrrt info lists every host device and which can reach which") {
  HostDevicesEnv env("3");
  TempDir dir;
  const Result r = run_lrrt(dir, {"info", "--format", "json"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const json doc = json::parse(r.out);
  size_t host = 0;
  for (const auto& d : doc["devices"]) host += d["backend"] == "host";
  CHECK(host == 3);
  size_t pairs = 0;
  for (const auto& p : doc["peer_access"])
    if (doc["devices"][p["device"].get<size_t>()]["backend"] == "host") {
      CHECK(p["can_access"] == true);
      CHECK(p["link"].get<std::string>().find("memcpy") != std::string::npos);  // what the backend says of the link
      ++pairs;
    }
  CHECK(pairs == 6);
  const Result table = run_lrrt(dir, {"info", "--format", "table"});
  REQUIRE(table.rc == 0);
  CHECK(table.out.find("Peer access") != std::string::npos);
}

TEST_CASE("devices: lrrt run --device all verifies every device's run and reports the spread") {
  HostDevicesEnv env("3");
  TempDir dir;
  const fs::path m = write_manifest(dir, "m.json", saxpy_manifest(3001));
  const Result r = run_lrrt(dir, {"run", "--backend", "host", "--device", "all", "--kernel-dir", kKernels.string(),
                                  "--iterations", "3", "-q", "-o", (dir / "out.json").string(), m.string()});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const json doc = json::parse(read_text(dir / "out.json"));
  REQUIRE(doc["runs"].size() == 3);
  std::set<uint32_t> seen;
  for (const auto& run : doc["runs"]) {
    CHECK(run["verification"]["status"] == "passed");
    seen.insert(run["device_index"].get<uint32_t>());
  }
  CHECK(seen.size() == 3);
  CHECK(doc["devices"].size() == 3);
  REQUIRE(doc["spread"].size() == 1);
  const json& sp = doc["spread"][0];
  CHECK(sp["median_ns_per_device"].size() == 3);
  CHECK(sp["slowest_over_fastest"].get<double>() >= 1.0);
  CHECK(seen.count(sp["slowest_device"].get<uint32_t>()) == 1);
  const Result table = run_lrrt(dir, {"run", "--backend", "host", "--device", "all", "--kernel-dir", kKernels.string(),
                                      "--iterations", "2", "--format", "table", m.string()});
  REQUIRE_MESSAGE(table.rc == 0, table.err);
  CHECK(table.out.find("Spread over the devices") != std::string::npos);

  // A wrong result on every device is exit 1, as for one.
  json bad = saxpy_manifest(3001);
  bad["verify"][0]["expected"] = {{"values", std::vector<int>(3001, 1)}};  // y is never all ones
  const fs::path wrong = write_manifest(dir, "wrong.json", bad);
  const Result failed = run_lrrt(dir, {"run", "--backend", "host", "--device", "all", "--kernel-dir",
                                       kKernels.string(), "--iterations", "1", "-q", "--format", "json", wrong.string()});
  CHECK(failed.rc == 1);
}

TEST_CASE("devices: --device all refuses saves and sweeps, --device takes N or all, LRRT_HOST_DEVICES is checked") {
  HostDevicesEnv env("2");
  TempDir dir;
  json saving = saxpy_manifest(100);
  saving["save"] = json::array({{{"buffer", "y"}, {"npy", (dir / "y.npy").string()}}});
  const fs::path s = write_manifest(dir, "save.json", saving);
  Result r = run_lrrt(dir, {"run", "--backend", "host", "--device", "all", "--kernel-dir", kKernels.string(), s.string()});
  CHECK(r.rc == 2);
  CHECK(r.err.find("/save") != std::string::npos);
  CHECK(r.err.find("every device") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "y.npy"));

  json sweep = saxpy_manifest(100);
  sweep["axes"] = {{"n", {64, 128}}};
  sweep["buffers"][0]["count"] = {{"axis", "n"}};
  sweep["buffers"][1]["count"] = {{"axis", "n"}};
  const fs::path sw = write_manifest(dir, "sweep.json", sweep);
  r = run_lrrt(dir, {"run", "--backend", "host", "--device", "all", "--kernel-dir", kKernels.string(), sw.string()});
  CHECK(r.rc == 2);
  CHECK(r.err.find("not sweeps") != std::string::npos);

  const fs::path m = write_manifest(dir, "m.json", saxpy_manifest(100));
  r = run_lrrt(dir, {"run", "--backend", "host", "--device", "some", m.string()});
  CHECK(r.rc == 2);
  CHECK(r.err.find("or all") != std::string::npos);
  r = run_lrrt(dir, {"run", "--backend", "host", "--device", "1", "--kernel-dir", kKernels.string(), "-q", "--format",
                     "json", m.string()});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(json::parse(r.out)["runs"][0]["device_index"] == 1);
  r = run_lrrt(dir, {"run", "--backend", "host", "--device", "2", m.string()});
  CHECK(r.rc == 3);

  setenv("LRRT_HOST_DEVICES", "0", 1);
  r = run_lrrt(dir, {"info"});
  CHECK(r.rc == 2);
  CHECK(r.err.find("LRRT_HOST_DEVICES='0'") != std::string::npos);
}

TEST_CASE("devices: lrrt bench p2p measures every pair beside the native copy, and says when there is one device") {
  TempDir dir;
  {
    HostDevicesEnv env("3");
    const Result r = run_lrrt(dir, {"bench", "p2p", "--backend", "host", "--quick", "--kernel-dir", kKernels.string(), "-q",
                                    "-o", (dir / "p2p.json").string()});
    REQUIRE_MESSAGE(r.rc == 0, r.err);
    const json doc = json::parse(read_text(dir / "p2p.json"));
    std::set<std::string> pairs, native_pairs;
    size_t latency = 0, bi = 0, h2d = 0;
    for (const auto& m : doc["measurements"]) {
      const json& p = m["params"];
      if (m["metric"] == "copy" && p["direction"] == "uni") {
        (m["impl"] == "lrrt" ? pairs : native_pairs).insert(p["src"].get<std::string>() + ">" + p["dst"].get<std::string>());
        CHECK(m["stats"]["median"].get<double>() > 0);
      }
      latency += m["metric"] == "latency";
      bi += m["metric"] == "copy" && p.contains("direction") && p["direction"] == "bi";
      h2d += m["metric"] == "h2d";
    }
    CHECK(pairs.size() == 6);
    CHECK(native_pairs == pairs);
    CHECK(latency == 12);  // lrrt and native, each ordered pair
    CHECK(bi == 3);
    CHECK(h2d == 2);
    size_t summaries = 0;
    for (const auto& s : doc["summaries"]) summaries += s["name"].get<std::string>().rfind("p2p-", 0) == 0;
    CHECK(summaries == 6);
  }
  const Result one = run_lrrt(dir, {"bench", "p2p", "--backend", "host", "--quick", "--kernel-dir", kKernels.string(), "-q",
                                    "--format", "json"});
  REQUIRE_MESSAGE(one.rc == 0, one.err);
  const json doc = json::parse(one.out);
  bool said = false;
  for (const auto& e : doc["errors"]) said |= e.get<std::string>().find("LRRT_HOST_DEVICES") != std::string::npos;
  CHECK(said);
}

TEST_CASE("devices: lrrt bench --device all measures each device, p2p once, and tags every measurement") {
  HostDevicesEnv env("2");
  TempDir dir;
  const Result r = run_lrrt(dir, {"bench", "saxpy-bandwidth,launch-overhead,p2p", "--backend", "host", "--device", "all",
                                  "--quick", "--min-time", "0", "--min-samples", "3", "--max-samples", "3", "--kernel-dir",
                                  kKernels.string(), "-q", "-o", (dir / "all.json").string()});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const json doc = json::parse(read_text(dir / "all.json"));
  CHECK(doc["errors"].empty());
  std::map<std::string, std::set<std::string>> devices_of;  // benchmark -> "device" params seen
  for (const auto& m : doc["measurements"]) {
    const json& p = m["params"];
    devices_of[m["benchmark"].get<std::string>()].insert(p.contains("device") ? p["device"].get<std::string>() : "-");
  }
  // saxpy-bandwidth ran on both devices at once, launch-overhead on each in
  // turn: each measurement names its device. p2p covers both devices itself, once.
  CHECK(devices_of["saxpy-bandwidth"] == std::set<std::string>{"0", "1"});
  CHECK(devices_of["launch-overhead"] == std::set<std::string>{"0", "1"});
  CHECK(devices_of["p2p"] == std::set<std::string>{"-"});
  std::set<std::string> summaries;
  for (const auto& s : doc["summaries"]) summaries.insert(s["name"].get<std::string>());
  CHECK(summaries.count("saxpy-traffic-vs-memcpy-device-0") == 1);
  CHECK(summaries.count("saxpy-traffic-vs-memcpy-device-1") == 1);
  // The same measurement of the two devices has one key but for the device: lrrt compare keeps them apart.
  std::set<std::string> names;
  for (const auto& m : doc["measurements"]) CHECK(names.insert(m["name"].get<std::string>()).second);
}

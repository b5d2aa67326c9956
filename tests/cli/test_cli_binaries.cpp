// `lrrt inspect` and `lrrt run` on the binaries users have (docs/code-objects.md):
// host libraries carrying .hip_fatbin (plain and compressed bundles), their
// filters and streamed output, the host backend refusing to load them (no
// constructor runs), and corrupt variants ending in exit 2.
#include <doctest/doctest.h>

#include <random>
#include <set>

#include "cli_support.hpp"

using namespace cli_test;

namespace {

const fs::path kBinaries = LRRT_CLI_BINARY_DIR;

// vector_add_i32 with fresh random inputs (a seed per run), c poisoned,
// every element checked against lrrt's reference sums; `code_object` as given.
json vector_add_manifest(const json& code_object, uint32_t n, std::mt19937& rng) {
  return json{{"lrrt_manifest", 1},
              {"code_object", code_object},
              {"kernel", "vector_add_i32"},
              {"buffers",
               {{{"name", "a"}, {"type", "i32"}, {"count", n},
                 {"init", {{"random", {{"min", -1000000}, {"max", 1000000}, {"seed", rng()}}}}}},
                {{"name", "b"}, {"type", "i32"}, {"count", n},
                 {"init", {{"random", {{"min", -1000000}, {"max", 1000000}, {"seed", rng()}}}}}},
                {{"name", "c"}, {"type", "i32"}, {"count", n}, {"init", {{"fill", -559038737}}}}}},
              {"args", {{{"buffer", "a"}}, {{"buffer", "b"}}, {{"buffer", "c"}}, {{"type", "u32"}, {"value", n}}}},
              {"launch", {{"workgroup_size", {64}}, {"global_size", {n}}}},
              {"verify", {{{"buffer", "c"}, {"expected", {{"reference", "vector_add_i32"}}}}}}};
}

#if defined(LRRT_CLI_HSA_STANDIN)
struct StandIn {  // the hsa stand-in for one test
  StandIn() {
    setenv("LRRT_HSA_LIBRARY", LRRT_CLI_HSA_STANDIN, 1);
    setenv("LRRT_WAIT_TIMEOUT_MS", "20000", 1);
  }
  ~StandIn() {
    unsetenv("LRRT_HSA_LIBRARY");
    unsetenv("LRRT_WAIT_TIMEOUT_MS");
  }
};
#endif

}  // namespace

#if defined(LRRT_CLI_AMD_BUNDLES)
TEST_CASE("inspect: host libraries with .hip_fatbin list every target and kernel, and load nothing") {
  TempDir dir;
  const fs::path mark = dir / "constructor-ran";
  setenv("LRRT_FIXTURE_CONSTRUCTOR_MARK", mark.c_str(), 1);
  for (std::string name : {"vector_add.hipfatbin.so", "vector_add.hipfatbin.ccob.so"}) {
    CAPTURE(name);
    Result r = run_lrrt(dir, {"inspect", (kBinaries / name).string(), "--format", "json"});
    REQUIRE_MESSAGE(r.rc == 0, r.err);
    const json doc = json::parse(r.out);
    const json& object = doc["objects"][0];
    CHECK(object["format"] == "host-binary");
    std::set<std::string> targets;
    for (const auto& t : object["targets"]) {
      if (t["format"] != "hsaco") continue;
      CHECK(t["section"] == ".hip_fatbin");
      if (name.find("ccob") != std::string::npos) CHECK(t["compression"] == "zstd");
      targets.insert(t["target"].get<std::string>());
      std::set<std::string> kernels;
      for (const auto& k : t["kernels"]) kernels.insert(k["name"].get<std::string>());
      CHECK(kernels == std::set<std::string>{"vector_add_f32", "vector_add_i32"});
    }
    CHECK(targets.size() >= 2);
    // Filters: one processor (every feature variant of it), one kernel.
    r = run_lrrt(dir, {"inspect", (kBinaries / name).string(), "--format", "json", "--target", "gfx90a", "--kernel",
                       "_i32$"});
    REQUIRE_MESSAGE(r.rc == 0, r.err);
    const json filtered = json::parse(r.out)["objects"][0]["targets"];
    REQUIRE(!filtered.empty());
    for (const auto& t : filtered) {
      CHECK(t["target"].get<std::string>().rfind("gfx90a", 0) == 0);
      REQUIRE(t["kernels"].size() == 1);
      CHECK(t["kernels"][0]["name"] == "vector_add_i32");
    }
    // Streamed (stdout) and written whole (-o) are the same document.
    const fs::path whole = dir / "whole.json";
    r = run_lrrt(dir, {"inspect", (kBinaries / name).string(), "-o", whole.string(), "-q"});
    REQUIRE_MESSAGE(r.rc == 0, r.err);
    json a = doc, b = json::parse(read_text(whole));
    a.erase("meta");
    b.erase("meta");
    CHECK(a == b);
    fs::remove(whole);
    // The host backend does not load a library that is not lrrt's.
    r = run_lrrt(dir, {"run", "--backend", "host", "-q",
                       write_manifest(dir, "m.json", json{{"lrrt_manifest", 1},
                                                          {"code_object", (kBinaries / name).string()},
                                                          {"kernel", "vector_add_i32"},
                                                          {"args", json::array()},
                                                          {"launch", {{"workgroup_size", {1}}, {"workgroup_count", {1}}}},
                                                          {"verify", {{"skip", "refused"}}}})
                           .string()});
    CHECK(r.rc == 2);
    CHECK_MESSAGE(r.err.find("host binary carrying GPU code") != std::string::npos, r.err);
    CHECK_MESSAGE(r.err.find("--backend hsa") != std::string::npos, r.err);
  }
  unsetenv("LRRT_FIXTURE_CONSTRUCTOR_MARK");
  CHECK_FALSE(fs::exists(mark));  // no constructor of the fixture ever ran
}

TEST_CASE("inspect: a table and CSV stream target by target, with one heading per file and one CSV header") {
  TempDir dir;
  const std::string lib = (kBinaries / "scale.hip.ccob.so").string();
  Result r = run_lrrt(dir, {"inspect", lib, lib, "--format", "table"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  size_t headings = 0;
  for (size_t p = 0; (p = r.out.find(lib + ": host-binary", p)) != std::string::npos; ++p) ++headings;
  CHECK(headings == 2);
  CHECK(r.out.find("scale_f32") != std::string::npos);
  CHECK(r.out.find("3 target(s)") != std::string::npos);
  r = run_lrrt(dir, {"inspect", lib, "--format", "csv", "--kernel", "^offset"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  size_t headers = 0, rows = 0;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("file,", 0) == 0) ++headers;
    else if (!line.empty()) {
      ++rows;
      CHECK(line.find("offset_i32") != std::string::npos);
    }
  }
  CHECK(headers == 1);
  CHECK(rows == 2 * 3);  // two targets, three arguments each
  // A bad regular expression is exit 2 naming the option.
  r = run_lrrt(dir, {"inspect", lib, "--kernel", "(unclosed"});
  CHECK(r.rc == 2);
  CHECK(r.err.find("--kernel") != std::string::npos);
  CHECK(r.err.find("is not a regular expression") != std::string::npos);
}

#if defined(LRRT_CLI_HSA_STANDIN)
TEST_CASE("run: a kernel from a host library's .hip_fatbin, plain or compressed, runs verified on hsa") {
  StandIn standin;
  TempDir dir;
  std::mt19937 rng(std::random_device{}());
  for (std::string name : {"vector_add.hipfatbin.so", "vector_add.hipfatbin.ccob.so"}) {
    CAPTURE(name);
    const fs::path manifest = write_manifest(dir, "m.json", vector_add_manifest({{"hsa", (kBinaries / name).string()}}, 3001, rng));
    Result r = run_lrrt(dir, {"run", "--backend", "hsa", "--kernel-dir", kKernels.string(), "--iterations", "1",
                              "--warmup", "0", "-q", "-o", (dir / "out.json").string(), manifest.string()});
    REQUIRE_MESSAGE(r.rc == 0, r.err);
    const json result = json::parse(read_text(dir / "out.json"))["runs"][0];
    const std::string entry = result["code_object_entry"];
    CHECK_MESSAGE(entry.find("in section .hip_fatbin") != std::string::npos, entry);
    CHECK_MESSAGE(entry.find(name.find("ccob") != std::string::npos ? "compressed bundle 0" : "of bundle 0") !=
                      std::string::npos,
                  entry);
    fs::remove(dir / "out.json");
    // The check can fail: constant inputs, and one expected sum off by one.
    json wrong = json::parse(read_text(manifest));
    const int32_t x = int32_t(rng() % 1000), y = int32_t(rng() % 1000);
    wrong["buffers"][0]["init"] = {{"fill", x}};
    wrong["buffers"][1]["init"] = {{"fill", y}};
    std::vector<int64_t> sums(3001, int64_t(x) + y);
    sums[1500] += 1;
    wrong["verify"][0]["expected"] = {{"values", sums}};
    r = run_lrrt(dir, {"run", "--backend", "hsa", "--kernel-dir", kKernels.string(), "--iterations", "1", "--warmup",
                       "0", "-q", write_manifest(dir, "wrong.json", wrong).string()});
    CHECK(r.rc == 1);
  }
}
#endif

#if defined(LRRT_CLI_HSA_STANDIN)
TEST_CASE("run: a library whose .hip_fatbin holds a bundle per translation unit runs the kernels of each") {
  StandIn standin;
  TempDir dir;
  std::mt19937 rng(std::random_device{}());
  const std::string lib = (kBinaries / "two_bundles.hipfatbin.so").string();
  Result r = run_lrrt(dir, {"inspect", lib, "--format", "json"});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  std::set<uint64_t> bundles;
  const json listing = json::parse(r.out);
  for (const auto& t : listing["objects"][0]["targets"]) bundles.insert(t["bundle"].get<uint64_t>());
  CHECK(bundles.size() == 2);
  // vector_add_i32 lives in bundle 0, saxpy in bundle 1: both run verified.
  const fs::path va = write_manifest(dir, "va.json", vector_add_manifest({{"hsa", lib}}, 2049, rng));
  r = run_lrrt(dir, {"run", "--backend", "hsa", "--kernel-dir", kKernels.string(), "--iterations", "1", "--warmup", "0",
                     "-q", "-o", (dir / "out.json").string(), va.string()});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const std::string entry = json::parse(read_text(dir / "out.json"))["runs"][0]["code_object_entry"];
  CHECK_MESSAGE(entry.find("2 bundles with kernels") == 0, entry);
  fs::remove(dir / "out.json");
  json sx = saxpy_manifest(3000);
  sx["code_object"] = {{"hsa", lib}};
  r = run_lrrt(dir, {"run", "--backend", "hsa", "--kernel-dir", kKernels.string(), "--iterations", "1", "--warmup", "0",
                     "-q", write_manifest(dir, "sx.json", sx).string()});
  CHECK_MESSAGE(r.rc == 0, r.err);
}
#endif

#if defined(LRRT_CLI_HSA_STANDIN)
// Issue 24, suspected defect 6: ROCr's loader refuses a second definition of
// a non-local symbol in one executable (the stand-in too), and translation
// units share weak ones. One executable per code object, as HIP does.
TEST_CASE("run: a .hip_fatbin whose two bundles define the same kernels loads and runs them") {
  StandIn standin;
  TempDir dir;
  std::mt19937 rng(std::random_device{}());
  const std::string lib = (kBinaries / "same_kernels.hipfatbin.so").string();
  const fs::path va = write_manifest(dir, "va.json", vector_add_manifest({{"hsa", lib}}, 1000 + rng() % 3000, rng));
  Result r = run_lrrt(dir, {"run", "--backend", "hsa", "--kernel-dir", kKernels.string(), "--iterations", "1",
                            "--warmup", "0", "-q", "-o", (dir / "out.json").string(), va.string()});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const std::string entry = json::parse(read_text(dir / "out.json"))["runs"][0]["code_object_entry"];
  CHECK_MESSAGE(entry.find("2 bundles with kernels") == 0, entry);
}

// Issue 24, defect 4: a GPU memory fault ends `lrrt run` with exit 3 and the
// kernel's name, not with ROCr's abort().
TEST_CASE("run: a GPU memory fault is exit 3 naming the kernel") {
  StandIn standin;
  TempDir dir;
  std::mt19937 rng(std::random_device{}());
  setenv("LRRT_HSA_STANDIN_FAULT", "vm_fault:vector_add_i32", 1);
  struct Unset {
    ~Unset() { unsetenv("LRRT_HSA_STANDIN_FAULT"); }
  } unset;
  const fs::path va = write_manifest(
      dir, "va.json",
      vector_add_manifest({{"hsa", (kKernels / "vector_add.gfx1100.hsaco").string()}}, 1000 + rng() % 3000, rng));
  Result r = run_lrrt(dir, {"run", "--backend", "hsa", "--kernel-dir", kKernels.string(), "--iterations", "1",
                            "--warmup", "0", "-q", va.string()});
  CHECK_MESSAGE(r.rc == 3, r.err);
  CHECK_MESSAGE(r.err.find("caused a GPU memory fault") != std::string::npos, r.err);
  CHECK_MESSAGE(r.err.find("vector_add_i32") != std::string::npos, r.err);
}
#endif

TEST_CASE("run and inspect: corrupt host binaries and compressed bundles end in exit 2, never a crash") {
  TempDir dir;
  const std::string seed_text = std::getenv("LRRT_TEST_SEED") ? std::getenv("LRRT_TEST_SEED") : "";
  const unsigned seed = seed_text.empty() ? std::random_device{}() : unsigned(std::stoul(seed_text));
  MESSAGE("corrupt binaries: seed " << seed << " (LRRT_TEST_SEED=" << seed << " repeats it)");
  std::mt19937 rng(seed);
  for (std::string name : {"scale.hip.ccob.so", "vector_add.hipfatbin.ccob.so", "vector_add.bundle.ccob.hsaco"}) {
    const std::string original = read_text(kBinaries / name);
    int refused = 0;
    for (int copy = 0; copy < 40; ++copy) {
      std::string bytes = original;
      if (copy % 2) {
        bytes.resize(std::uniform_int_distribution<size_t>(0, bytes.size() - 1)(rng));
      } else {
        for (int k = 0; k < 8; ++k) bytes[std::uniform_int_distribution<size_t>(0, bytes.size() - 1)(rng)] ^= char(1 + rng() % 255);
      }
      const fs::path bad = dir / ("bad." + name);
      write_text(bad, bytes);
      INFO(name << " copy " << copy);
      Result r = run_lrrt(dir, {"inspect", bad.string(), "--format", "json"});
      CHECK_MESSAGE((r.rc == 0 || r.rc == 2), "rc ", r.rc, ": ", r.err);
      if (r.rc == 2) {
        ++refused;
        CHECK_MESSAGE(r.err.find(bad.string()) != std::string::npos, r.err);
      }
    }
    CHECK(refused > 0);
  }
}
#endif

#if defined(LRRT_CLI_AMD_BUNDLES) || defined(LRRT_CLI_NVIDIA_KERNELS)
namespace {

// "file target" for every target an inspect document lists.
std::set<std::string> listed_targets(const json& doc) {
  std::set<std::string> out;
  for (const auto& o : doc.at("objects"))
    for (const auto& t : o.at("targets"))
      out.insert(fs::path(o.at("file").get<std::string>()).filename().string() + " " + t.at("target").get<std::string>());
  return out;
}

}  // namespace
#endif

#if defined(LRRT_CLI_AMD_BUNDLES)
TEST_CASE("inspect: --runs-on an AMD agent follows the target-ID rules (xnack, a feature left open matches either)") {
  TempDir dir;
  const std::vector<std::string> files = {(kKernels / "saxpy.bundle.hsaco").string(), (kBinaries / "scale.hip.so").string()};
  auto inspect = [&](const std::string& option, const std::string& value) {
    std::vector<std::string> args = {"inspect", "--format", "json", option, value};
    args.insert(args.end(), files.begin(), files.end());
    Result r = run_lrrt(dir, args);
    REQUIRE_MESSAGE(r.rc == 0, r.err);
    return listed_targets(json::parse(r.out));
  };
  // The bundle holds gfx90a:xnack+, gfx90a:xnack- and gfx1100; the HIP
  // library gfx90a (features open) and gfx1100.
  CHECK(inspect("--runs-on", "gfx90a:xnack-") ==
        std::set<std::string>{"saxpy.bundle.hsaco gfx90a:xnack-", "scale.hip.so gfx90a"});
  CHECK(inspect("--runs-on", "gfx90a:sramecc+:xnack+") ==
        std::set<std::string>{"saxpy.bundle.hsaco gfx90a:xnack+", "scale.hip.so gfx90a"});
  CHECK(inspect("--runs-on", "gfx90a") == std::set<std::string>{"saxpy.bundle.hsaco gfx90a:xnack+",
                                                                 "saxpy.bundle.hsaco gfx90a:xnack-", "scale.hip.so gfx90a"});
  CHECK(inspect("--runs-on", "gfx1100") == std::set<std::string>{"saxpy.bundle.hsaco gfx1100", "scale.hip.so gfx1100"});
  CHECK(inspect("--runs-on", "gfx942").empty());
  CHECK(inspect("--runs-on", "sm_90").empty());
  CHECK(inspect("--target", "gfx90a:xnack-") == std::set<std::string>{"saxpy.bundle.hsaco gfx90a:xnack-"});
}
#endif

#if defined(LRRT_CLI_NVIDIA_KERNELS)
TEST_CASE("inspect: --target lists one exact target, --runs-on what the entry choice would load on a device") {
  // Before --runs-on, `--target sm_90` was the only question: it leaves out
  // the sm_90a cubin and the PTX an sm_90 device runs.
  TempDir dir;
  const std::vector<std::string> files = {(kBinaries / "vector_add.cuda.so").string(),
                                          (kBinaries / "vector_add.sm_90a.cubin").string(),
                                          (kBinaries / "vector_add.ptx80.fatbin").string(),
                                          (kBinaries / "vector_add.sm_100f.cubin").string(),
                                          (kKernels / "saxpy.sm_90.cubin").string()};
  auto inspect = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"inspect", "--format", "json"});
    args.insert(args.end(), files.begin(), files.end());
    Result r = run_lrrt(dir, args);
    REQUIRE_MESSAGE(r.rc == 0, r.err);
    return listed_targets(json::parse(r.out));
  };
  CHECK(inspect({"--target", "sm_90"}) ==
        std::set<std::string>{"vector_add.cuda.so sm_90", "saxpy.sm_90.cubin sm_90"});
  CHECK(inspect({"--target", "sm_90a"}) == std::set<std::string>{"vector_add.sm_90a.cubin sm_90a"});
  const std::set<std::string> on90 = {"vector_add.cuda.so sm_90", "vector_add.cuda.so compute_90",
                                      "vector_add.sm_90a.cubin sm_90a", "vector_add.ptx80.fatbin compute_80",
                                      "saxpy.sm_90.cubin sm_90"};
  CHECK(inspect({"--runs-on", "sm_90"}) == on90);
  // sm_86: the sm_80 SASS (same major, lower minor) and PTX 80, nothing of sm_90.
  CHECK(inspect({"--runs-on", "sm_86"}) ==
        std::set<std::string>{"vector_add.ptx80.fatbin sm_80", "vector_add.ptx80.fatbin compute_80"});
  // sm_103: the family-specific sm_100f cubin, and the PTX.
  CHECK(inspect({"--runs-on", "sm_103"}) ==
        std::set<std::string>{"vector_add.sm_100f.cubin sm_100f", "vector_add.cuda.so compute_90",
                              "vector_add.ptx80.fatbin compute_80"});
  // Both filters: what runs on sm_90 and is built for exactly sm_90a.
  CHECK(inspect({"--runs-on", "sm_90", "--target", "sm_90a"}) ==
        std::set<std::string>{"vector_add.sm_90a.cubin sm_90a"});
  // A code target is not a device; the message says what to give.
  for (const char* bad : {"sm_90a", "compute_90", "gfx90a:xnack", "h200"}) {
    CAPTURE(bad);
    Result r = run_lrrt(dir, {"inspect", "--runs-on", bad, files[0]});
    CHECK(r.rc == 2);
    CHECK_MESSAGE(r.err.find("--runs-on: \"" + std::string(bad) + "\" names no device") != std::string::npos, r.err);
  }
  // --help says what each matches.
  Result help = run_lrrt(dir, {"inspect", "--help"});
  CHECK(help.out.find("exactly this target") != std::string::npos);
  CHECK(help.out.find("--runs-on") != std::string::npos);
}
#endif

#if defined(LRRT_CLI_HSA_STANDIN)
TEST_CASE("init: an AMDGPU kernel taking a struct by value gets bytes at the code object's offset, and hsa accepts the layout") {
  // The struct (40 bytes: two pointers, a float, a nested struct) becomes 40
  // zero bytes at offset 0: its n is 0, so the kernel touches nothing, and
  // the run shows that the code object's metadata accepted the layout.
  StandIn standin;
  TempDir dir;
  Result r = run_lrrt(dir, {"init", (kKernels / "struct_args.gfx1100.hsaco").string(), "-o", (dir / "m.json").string()});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const json m = json::parse(read_text(dir / "m.json"));
  REQUIRE(m["args"].size() == 1);
  CHECK(m["args"][0]["bytes"] == std::string(80, '0'));
  CHECK(m["args"][0]["offset"] == 0);
  CHECK(m["description"].get<std::string>().find("0 (40 bytes") != std::string::npos);
  r = run_lrrt(dir, {"run", "--backend", "hsa", "--kernel-dir", kKernels.string(), "--iterations", "1", "--warmup", "0",
                     "-q", "-o", (dir / "out.json").string(), (dir / "m.json").string()});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(json::parse(read_text(dir / "out.json"))["runs"][0]["kernargs"]["layout_checked"] == true);
  // One byte short of the code object's argument: refused, naming it.
  json short_arg = m;
  short_arg["args"][0]["bytes"] = std::string(78, '0');
  r = run_lrrt(dir, {"run", "--backend", "hsa", "--kernel-dir", kKernels.string(), "-q",
                     write_manifest(dir, "short.json", short_arg).string()});
  CHECK(r.rc == 2);
  CHECK_MESSAGE(r.err.find("args[0]") != std::string::npos, r.err);
}
#endif

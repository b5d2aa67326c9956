// End-to-end tests of `lrrt inspect`: every code-object format this build
// makes gives the same document shape, a real table, and saxpy's argument
// layout; host libraries are read, not loaded; bad files exit 2.
#include <doctest/doctest.h>

#include <cstdlib>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_support.hpp"

using namespace cli_test;

namespace {

// The code objects this build made from kernels/saxpy.cpp, one per format.
std::vector<std::string> saxpy_code_objects() {
  std::vector<std::string> files = {"saxpy.host.so"};
#if defined(LRRT_CLI_AMD_KERNELS)
  files.push_back("saxpy.gfx1100.hsaco");
  files.push_back("saxpy.gfx90a.hsaco");
#endif
#if defined(LRRT_CLI_AMD_BUNDLES)
  files.push_back("saxpy.bundle.hsaco");
#endif
#if defined(LRRT_CLI_NVIDIA_KERNELS)
  files.push_back("saxpy.sm_90.cubin");
  files.push_back("saxpy.fatbin");
  files.push_back("saxpy.ptx");
#endif
  return files;
}

// Checks the one document shape `lrrt inspect` writes for every format
// (docs/code-objects.md); returns the targets.
json check_inspect_object(const json& o, const fs::path& file) {
  CHECK(o.at("file") == file.string());
  CHECK(o.at("size") == fs::file_size(file));
  CHECK(o.at("format").is_string());
  REQUIRE(o.at("targets").is_array());
  CHECK(!o.at("targets").empty());
  for (const auto& t : o.at("targets")) {
    INFO(t.dump());
    for (const char* key : {"target", "format", "offset", "size", "kernels"}) CHECK(t.contains(key));
    CHECK(t.at("offset").get<uint64_t>() + t.at("size").get<uint64_t>() <= fs::file_size(file));
    for (const auto& k : t.at("kernels")) {
      for (const char* key : {"name", "symbol", "has_arg_layout", "args"}) CHECK(k.contains(key));
      for (const auto& a : k.at("args"))
        for (const char* key : {"index", "offset", "size", "kind"}) CHECK(a.contains(key));
    }
  }
  return o.at("targets");
}

}  // namespace

TEST_CASE("inspect: every format gives the same document, with saxpy's explicit argument layout") {
  TempDir dir;
  for (const auto& name : saxpy_code_objects()) {
    const fs::path file = kKernels / name;
    INFO(name);
    Result r = run_lrrt(dir, {"inspect", "--format", "json", file.string()});
    REQUIRE_MESSAGE(r.rc == 0, r.err);
    json doc = json::parse(r.out);
    CHECK(doc.at("kind") == "inspect");
    CHECK(doc.at("lrrt_results") == 1);
    REQUIRE(doc.at("objects").size() == 1);
    int saxpys = 0;
    for (const auto& t : check_inspect_object(doc["objects"][0], file)) {
      // A target without kernels (a bundle's empty host entry) says why.
      if (t.at("kernels").empty()) CHECK(t.contains("note"));
      else CHECK(t.at("kernels").size() == 1);
      for (const auto& k : t.at("kernels")) {
        if (k.at("name") != "saxpy") continue;
        ++saxpys;
        // saxpy(float a, const float* x, float* y, uint32_t n): the same
        // explicit layout whatever the compiler and format.
        REQUIRE(k.at("has_arg_layout") == true);
        std::vector<std::pair<uint32_t, uint32_t>> layout;
        for (const auto& a : k.at("args"))
          if (a.at("kind") != "hidden") layout.emplace_back(a.at("offset"), a.at("size"));
        CHECK(layout == std::vector<std::pair<uint32_t, uint32_t>>{{0, 4}, {8, 8}, {16, 8}, {24, 4}});
        CHECK(k.at("explicit_kernarg_size") == 28);
      }
    }
    CHECK(saxpys >= 1);
  }
}

TEST_CASE("inspect: format-specific facts and targets") {
  TempDir dir;
  auto inspect = [&](const std::string& name) {
    Result r = run_lrrt(dir, {"inspect", "--format", "json", (kKernels / name).string()});
    REQUIRE_MESSAGE(r.rc == 0, r.err);
    return json::parse(r.out)["objects"][0];
  };
  json host = inspect("saxpy.host.so");
  CHECK(host["format"] == "host-so");
  CHECK(host["targets"][0]["format"] == "host-so");
  json host_args = host["targets"][0]["kernels"][0]["args"];
  CHECK(host_args[1]["kind"] == "global_buffer");
  CHECK(host_args[1]["name"] == "x");
  CHECK(host_args[1]["type_name"] == "const float*");
#if defined(LRRT_CLI_AMD_KERNELS)
  json hsaco = inspect("saxpy.gfx90a.hsaco");
  CHECK(hsaco["format"] == "hsaco");
  const json& t = hsaco["targets"][0];
  CHECK(t["target"] == "gfx90a");
  CHECK(t["triple"] == "amdgcn-amd-amdhsa");
  CHECK(t["code_object_version"] == 5);
  CHECK(t["kernels"][0]["wavefront_size"] == 64);
  CHECK(t["kernels"][0]["symbol"] == "saxpy.kd");
  bool hidden = false;
  for (const auto& a : t["kernels"][0]["args"]) hidden |= a["value_kind"] == "hidden_block_count_x";
  CHECK(hidden);
#endif
#if defined(LRRT_CLI_AMD_BUNDLES)
  json bundle = inspect("saxpy.bundle.hsaco");
  CHECK(bundle["format"] == "clang-offload-bundle");
  std::set<std::string> amd;
  for (const auto& e : bundle["targets"])
    if (e["format"] == "hsaco") {
      amd.insert(e["target"].get<std::string>());
      CHECK(e["entry"].get<std::string>().find(e["target"].get<std::string>()) != std::string::npos);
    }
  CHECK(amd == std::set<std::string>{"gfx90a:xnack+", "gfx90a:xnack-", "gfx1100"});
#endif
#if defined(LRRT_CLI_NVIDIA_KERNELS)
  json cubin = inspect("saxpy.sm_90.cubin");
  CHECK(cubin["targets"][0]["target"] == "sm_90");
  CHECK(cubin["targets"][0]["kernels"][0]["registers"].get<int>() > 0);
  json fatbin = inspect("saxpy.fatbin");
  CHECK(fatbin["format"] == "fatbin");
  REQUIRE(fatbin["targets"].size() == 2);
  CHECK(fatbin["targets"][0]["target"] == "sm_90");
  CHECK(fatbin["targets"][0]["format"] == "cubin");
  CHECK(fatbin["targets"][1]["target"] == "compute_90");
  CHECK(fatbin["targets"][1]["format"] == "ptx");
  json ptx = inspect("saxpy.ptx");
  CHECK(ptx["targets"][0]["target"] == "compute_90");
  CHECK(ptx["targets"][0]["ptx_target"] == "sm_90");
#endif
}

TEST_CASE("inspect: a real table for every format, several files at once") {
  TempDir dir;
  std::vector<std::string> args = {"inspect", "--format", "table"};
  auto files = saxpy_code_objects();
  for (const auto& f : files) args.push_back((kKernels / f).string());
  Result r = run_lrrt(dir, args);
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  INFO(r.out);
  CHECK(r.out.find('{') == std::string::npos);  // no JSON inside the table
  for (const auto& f : files) CHECK(r.out.find((kKernels / f).string() + ": ") != std::string::npos);
  // Per target a kernel table (or why there is none), per kernel an argument table.
  size_t targets = 0, kernel_headers = 0, none = 0, arg_headers = 0, saxpy_rows = 0;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    targets += line.rfind("  target ", 0) == 0;
    kernel_headers += line.rfind("  kernel  ", 0) == 0;
    none += line == "  no kernels listed";
    arg_headers += line.rfind("    index  offset  size  kind", 0) == 0;
    if (line.rfind("  saxpy  ", 0) == 0) {
      ++saxpy_rows;
      CHECK(line.find(" 28 ") != std::string::npos);  // explicit bytes
    }
  }
  CHECK(targets >= files.size());
  CHECK(kernel_headers + none == targets);
  CHECK(saxpy_rows == kernel_headers);
  CHECK(arg_headers == kernel_headers);
  // Several files in json: one object each, in order.
  args[2] = "json";
  Result j = run_lrrt(dir, args);
  REQUIRE(j.rc == 0);
  json doc = json::parse(j.out);
  REQUIRE(doc["objects"].size() == files.size());
  for (size_t i = 0; i < files.size(); ++i) CHECK(doc["objects"][i]["file"] == (kKernels / files[i]).string());
}

TEST_CASE("inspect: a host library is read, not loaded") {
  TempDir dir;
  const fs::path marker = dir / "loaded";
  ::setenv("LRRT_TEST_LOAD_MARKER", marker.c_str(), 1);
  Result r = run_lrrt(dir, {"inspect", "--format", "json", LRRT_CLI_ERROR_KERNELS});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  std::set<std::string> names;
  const json doc = json::parse(r.out);
  for (const auto& k : doc["objects"][0]["targets"][0]["kernels"]) names.insert(k["name"].get<std::string>());
  CHECK(names == std::set<std::string>{"block_signal_then_fault", "recurse_deep", "recurse_frames", "rendezvous",
                                       "signal_blocked", "spin_forever", "write_to_address"});
  CHECK_FALSE(fs::exists(marker));
  // The check can fail: loading the library (lrrt run) does create the marker.
  json m = json::parse(R"({
    "lrrt_manifest": 1,
    "code_object": {"host": ")" + std::string(LRRT_CLI_ERROR_KERNELS) + R"("},
    "kernel": "no_such_kernel", "buffers": [], "args": [],
    "launch": {"workgroup_size": [1], "workgroup_count": [1]},
    "verify": {"skip": "never launched"}
  })");
  Result run = run_manifest(dir, write_manifest(dir, "m.json", m));
  CHECK(run.rc == 2);
  CHECK(fs::exists(marker));
  ::unsetenv("LRRT_TEST_LOAD_MARKER");
}

TEST_CASE("inspect: bad files exit 2 naming the file, leaving no output file") {
  TempDir dir;
  write_text(dir / "junk.bin", "not a code object at all");
  write_text(dir / "empty.bin", "");
  std::string host = read_text(kKernels / "saxpy.host.so");
  write_text(dir / "truncated.so", host.substr(0, host.size() / 2));
  struct Case {
    std::string file;
    std::string fragment;
  };
  std::vector<Case> cases = {{(dir / "missing.hsaco").string(), "cannot open"},
                             {(dir / "junk.bin").string(), "not a code object lrrt recognises"},
                             {(dir / "empty.bin").string(), "an empty file"},
                             {(dir / "truncated.so").string(), "invalid host kernel library"}};
#if defined(LRRT_CLI_AMD_KERNELS)
  std::string hsaco = read_text(kKernels / "saxpy.gfx1100.hsaco");
  write_text(dir / "truncated.hsaco", hsaco.substr(0, hsaco.size() - 100));
  cases.push_back({(dir / "truncated.hsaco").string(), "invalid AMDGPU code object"});
#endif
  for (const auto& c : cases) {
    INFO(c.file);
    for (const char* format : {"json", "table"}) {
      Result r = run_lrrt(dir, {"inspect", "--format", format, "-o", (dir / "out.json").string(),
                                (kKernels / "saxpy.host.so").string(), c.file});
      expect_error(dir, r, 2, {c.file, c.fragment});
    }
  }
}

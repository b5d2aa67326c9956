// End-to-end tests of `lrrt inspect`: every code-object format this build
// makes gives the same document shape, a real table, and saxpy's argument
// layout; host libraries are read, not loaded; bad files exit 2.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <random>
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
  CHECK(names == std::set<std::string>{"block_signal_then_fault", "recurse_deep", "recurse_frames", "recurse_sum",
                                       "rendezvous", "signal_blocked", "spin_forever", "write_to_address"});
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

namespace {

// "ff" for 0xff.
std::string hex2(int byte) {
  char text[3];
  std::snprintf(text, sizeof text, "%02x", byte & 0xff);
  return text;
}

// Kernel names of an inspect document, every target of every object.
std::set<std::string> inspected_names(const json& doc) {
  std::set<std::string> names;
  for (const auto& o : doc.at("objects"))
    for (const auto& t : o.at("targets"))
      for (const auto& k : t.at("kernels")) names.insert(k.at("name").get<std::string>());
  return names;
}

}  // namespace

TEST_CASE("inspect: a kernel name that is not UTF-8 is shown as \\xNN in every format, exit 0, and --kernel finds it") {
  // Before the fix --format json failed with exit 3 and nlohmann's
  // "[json.exception.type_error.316] invalid UTF-8 byte".
  TempDir dir;
  std::mt19937 rng(std::random_device{}());
  // A byte that never starts or continues valid UTF-8 here: a lone
  // continuation byte, an overlong lead, or one beyond U+10FFFF.
  const std::vector<int> invalid = {0x80, 0x9b, 0xbf, 0xc0, 0xc1, 0xf5, 0xfe, 0xff};
  const int byte = invalid[std::uniform_int_distribution<size_t>(0, invalid.size() - 1)(rng)];
  CAPTURE(byte);
  const std::string raw = std::string("spin") + char(byte) + "forever";
  const std::string shown = "spin\\x" + hex2(byte) + "forever";
  // The test kernels with spin_forever renamed in the file's bytes (its
  // kernel record and its symbol), under a file name that is not UTF-8
  // either: the file name reaches "file" and meta's argv.
  std::string library = read_text(LRRT_CLI_ERROR_KERNELS);
  size_t renamed = 0;
  for (size_t at = 0; (at = library.find(std::string("spin_forever") + '\0', at)) != std::string::npos; ++renamed)
    library.replace(at, raw.size(), raw);
  REQUIRE(renamed >= 1);
  const fs::path file = dir / "bad\xfe-name.so";
  write_text(file, library);
  const std::string shown_file = (dir.path / "bad\\xfe-name.so").string();

  Result r = run_lrrt(dir, {"inspect", "--format", "json", file.string()});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  json doc = json::parse(r.out);  // valid UTF-8, or parse throws
  CHECK(doc["objects"][0]["file"] == shown_file);
  std::set<std::string> names = inspected_names(doc);
  CHECK(names.count(shown) == 1);
  CHECK(names.count("spin_forever") == 0);
  CHECK(names.count("write_to_address") == 1);  // the others as they were
  // -o writes the same document.
  r = run_lrrt(dir, {"inspect", "--format", "json", "-q", "-o", (dir / "out.json").string(), file.string()});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(inspected_names(json::parse(read_text(dir / "out.json"))) == names);

  for (const std::string format : {"table", "csv", "markdown"}) {
    CAPTURE(format);
    r = run_lrrt(dir, {"inspect", "--format", format, file.string()});
    REQUIRE_MESSAGE(r.rc == 0, r.err);
    CHECK_MESSAGE(r.out.find(shown) != std::string::npos, r.out);
    CHECK(r.out.find(char(byte)) == std::string::npos);  // never the raw byte
    CHECK(r.out.find(char(0xfe)) == std::string::npos);
  }

  // --kernel: the regex \xNN is the byte (the name as read), \\xNN the text
  // shown; either finds the kernel, and only it.
  for (const std::string regex : {"^spin\\x" + hex2(byte) + "for", "^spin\\\\x" + hex2(byte) + "for"}) {
    CAPTURE(regex);
    r = run_lrrt(dir, {"inspect", "--format", "json", "--kernel", regex, file.string()});
    REQUIRE_MESSAGE(r.rc == 0, r.err);
    CHECK(inspected_names(json::parse(r.out)) == std::set<std::string>{shown});
  }
  r = run_lrrt(dir, {"inspect", "--format", "json", "--kernel", "^spin_forever$", file.string()});
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(inspected_names(json::parse(r.out)).empty());

  // Messages: a manifest naming a kernel the library lacks lists the ones it
  // has, this one escaped.
  json m = json::parse(R"({"lrrt_manifest": 1, "kernel": "nope", "args": [],
                           "launch": {"workgroup_size": [1], "workgroup_count": [1]}, "verify": {"skip": "none"}})");
  write_text(dir / "renamed.so", library);  // a manifest is UTF-8: the library under a name it can hold
  m["code_object"] = {{"host", (dir / "renamed.so").string()}};
  write_text(dir / "m.json", m.dump());
  r = run_lrrt(dir, {"run", "--backend", "host", "-q", (dir / "m.json").string()});
  CHECK(r.rc == 2);
  CHECK_MESSAGE(r.err.find(shown) != std::string::npos, r.err);
  CHECK(r.err.find(char(byte)) == std::string::npos);
}

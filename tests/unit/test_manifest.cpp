// Manifest parsing: every field, and errors that name the field; code object
// resolution. Sequences: test_manifest_sequence.cpp; values, names and checks
// that would make verification wrong or vacuous: test_manifest_checks.cpp.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "lrrt/bundle.hpp"
#include "manifest_test_support.hpp"

using nlohmann::json;
using namespace lrrt::bundle;
namespace fs = std::filesystem;
using namespace lrrt::test::manifest_test;

TEST_CASE("manifest: a minimal manifest parses with defaults") {
  Manifest m = parse(base());
  CHECK(m.kernel == "k");
  CHECK(m.name == "k");
  CHECK(m.code_object.at("*") == "k.so");
  REQUIRE(m.buffers.size() == 2);
  CHECK(m.buffers[0].count == 100);
  CHECK(m.buffers[0].bytes == 400);
  CHECK(m.buffers[0].init.kind == BufferInit::Kind::Zeros);
  CHECK(m.buffers[1].count == 15);
  CHECK(m.buffers[1].bytes == 30);
  CHECK(m.buffers[1].shape == std::vector<uint64_t>{3, 5});
  CHECK(m.buffers[1].init.kind == BufferInit::Kind::Poison);  // no init: poisoned output
  REQUIRE(m.args.size() == 2);
  CHECK(m.args[0].kind == ArgSpec::Kind::Buffer);
  CHECK(m.args[1].value == 7);
  CHECK(m.launch.workgroup_count[0] == 4);  // 100 rounded up to whole workgroups of 32
  CHECK(m.launch.requested[0] == 100);
  CHECK(m.launch.workgroup_size[1] == 1);
  CHECK(m.warmup == 3);
  CHECK(m.iterations == 20);
  CHECK(m.verify.empty());
  CHECK_FALSE(m.traffic_bytes().has_value());
}

TEST_CASE("manifest: every field") {
  json j = base();
  j["name"] = "all";
  j["description"] = "d";
  j["code_object"] = {{"host", "a.so"}, {"hsa", "@kernels/a.{arch}.hsaco"}, {"cuda", "a.cubin"}};
  j["buffers"][0]["init"] = {{"random", {{"seed", 5}, {"min", -2}, {"max", 3}}}};
  j["buffers"][0]["access"] = "read_write";
  j["buffers"][1]["init"] = {{"iota", {{"start", -3}, {"step", 2}}}};
  j["buffers"][1]["access"] = "write";
  j["buffers"].push_back({{"name", "h"}, {"type", "f16"}, {"count", 4}, {"init", {{"fill", 1.5}}}});
  j["args"] = {{{"buffer", "x"}, {"name", "x"}},
               {{"type", "f16"}, {"value", 1.5}, {"offset", 8}},
               {{"type", "u64"}, {"value", {{"count_of", "m"}}}, {"bounds", {"m"}}},
               {{"type", "u32"}, {"value", {{"shape_of", "m"}, {"axis", 1}}}}};
  j["launch"] = {{"workgroup_size", {4, 2}},
                 {"workgroup_count", {3, 2}},
                 {"dynamic_shared_bytes", 256},
                 {"covers", {"x", {{"buffer", "m"}, {"per", "workgroup"}}}}};
  j["warmup"] = 0;
  j["iterations"] = 5;
  j["verify"] = {{{"buffer", "x"}, {"expected", {{"reference", "saxpy"}}}, {"rtol", 0.1}, {"atol", 0.2}, {"equal_nan", true}},
                 {{"buffer", "m"}, {"expected", {{"reference_backend", "host"}}}, {"allow_unwritten", true}},
                 {{"buffer", "h"}, {"expected", {{"values", {1, 2, "nan", "-inf"}}}}, {"allow_unwritten", true}}};
  j["save"] = {{{"buffer", "x"}, {"npy", "x.npy"}}};
  j["bytes_per_iteration"] = 1234;
  Manifest m = parse(j);
  CHECK(m.name == "all");
  CHECK(m.code_object.size() == 3);
  CHECK(m.buffers[0].init.kind == BufferInit::Kind::Random);
  CHECK(*m.buffers[0].init.seed == 5);
  CHECK(m.buffers[0].init.min == -2);
  CHECK(m.buffers[0].access == Access::ReadWrite);
  CHECK(m.buffers[1].init.start == -3);
  CHECK(m.buffers[1].init.step == 2);
  CHECK(m.buffers[2].init.fill == 1.5);
  CHECK(m.args[1].type == DType::f16);
  CHECK(*m.args[1].offset == 8);
  CHECK(m.args[2].value == 15);
  CHECK(m.args[3].value == 5);
  CHECK(m.launch.dims == 2);
  CHECK(m.launch.workgroup_count[1] == 2);
  CHECK(m.launch.total_workitems() == 48);
  CHECK(m.launch.total_workgroups() == 6);
  CHECK(m.launch.dynamic_shared_bytes == 256);
  CHECK(m.launch.covers.size() == 2);
  CHECK(m.launch.covers[1].per_workgroup);
  CHECK(m.iterations == 5);
  CHECK(m.warmup == 0);
  REQUIRE(m.verify.size() == 3);
  CHECK(m.verify[0].rtol == 0.1);
  CHECK(m.verify[0].equal_nan);
  CHECK(m.verify[0].method() == "reference:saxpy");
  CHECK(m.verify[1].method() == "reference_backend:host");
  // An integer buffer without a tolerance: exact.
  CHECK(m.verify[1].rtol == (dtype_is_float(m.buffers[m.verify[1].buffer].type) ? 1e-5 : 0));
  CHECK(m.verify[1].atol == (dtype_is_float(m.buffers[m.verify[1].buffer].type) ? 1e-8 : 0));
  CHECK_FALSE(m.verify[1].equal_nan);
  CHECK(m.save.size() == 1);
  CHECK(*m.traffic_bytes() == 1234);
}

TEST_CASE("manifest: verify skip and traffic from access") {
  json j = base();
  j["verify"] = {{"skip", "nothing to check"}};
  j["buffers"][0]["access"] = "read_write";
  j["buffers"][1]["access"] = "read";
  Manifest m = parse(j);
  CHECK(m.verify_skip_reason == "nothing to check");
  CHECK(*m.traffic_bytes() == 2 * 400 + 30);
}

TEST_CASE("manifest: errors name the field with a JSON pointer") {
  struct Case {
    const char* what;
    std::function<void(json&)> edit;
    const char* pointer;
    const char* fragment;
  };
  const Case cases[] = {
      {"version", [](json& j) { j["lrrt_manifest"] = 2; }, "/lrrt_manifest", "unsupported"},
      {"no version", [](json& j) { j.erase("lrrt_manifest"); }, "", "lrrt_manifest"},
      {"unknown top", [](json& j) { j["kernal"] = 1; }, "/kernal", "did you mean \"kernel\""},
      {"a sequence field without a sequence", [](json& j) { j["kernels"] = 1; }, "/kernels", "only a sequence manifest"},
      {"missing kernel", [](json& j) { j.erase("kernel"); }, "", "\"kernel\""},
      {"kernel type", [](json& j) { j["kernel"] = 3; }, "/kernel", "expected a string"},
      {"code object key", [](json& j) { j["code_object"] = {{"rocm", "x"}}; }, "/code_object/rocm", "unknown field"},
      {"buffers type", [](json& j) { j["buffers"] = json::object(); }, "/buffers", "expected an array"},
      {"buffer type", [](json& j) { j["buffers"][1]["type"] = "f128"; }, "/buffers/1/type", "unknown type"},
      {"count and shape", [](json& j) { j["buffers"][0]["shape"] = {100}; }, "/buffers/0", "not both"},
      {"no count", [](json& j) { j["buffers"][0].erase("count"); }, "/buffers/0", "\"count\""},
      {"count zero", [](json& j) { j["buffers"][0]["count"] = 0; }, "/buffers/0/count", "at least 1"},
      {"count negative", [](json& j) { j["buffers"][0]["count"] = -4; }, "/buffers/0/count", "at least"},
      {"count string", [](json& j) { j["buffers"][0]["count"] = "4"; }, "/buffers/0/count", "string \"4\""},
      {"shape dim", [](json& j) { j["buffers"][1]["shape"][1] = 0; }, "/buffers/1/shape/1", "at least 1"},
      {"byte overflow", [](json& j) { j["buffers"][0]["count"] = uint64_t(1) << 63; }, "/buffers/0/count", "overflow"},
      {"duplicate", [](json& j) { j["buffers"][1]["name"] = "x"; }, "/buffers/1/name", "duplicate"},
      {"unknown init key", [](json& j) { j["buffers"][0]["init"] = {{"random", {{"sed", 1}}}}; }, "/buffers/0/init/random/sed", "did you mean \"seed\""},
      {"init name", [](json& j) { j["buffers"][0]["init"] = "ones"; }, "/buffers/0/init", "unknown init"},
      {"init two", [](json& j) { j["buffers"][0]["init"] = {{"fill", 1}, {"zeros", true}}; }, "/buffers/0/init", "exactly one"},
      {"fill int range", [](json& j) { j["buffers"][1]["init"] = {{"fill", 40000}}; }, "/buffers/1/init/fill", "does not fit in i16"},
      {"fill int frac", [](json& j) { j["buffers"][1]["init"] = {{"fill", 1.5}}; }, "/buffers/1/init/fill", "integer"},
      {"random range", [](json& j) { j["buffers"][0]["init"] = {{"random", {{"min", 2}, {"max", 1}}}}; }, "/buffers/0/init/random/max", "less than min"},
      {"npy missing", [](json& j) { j["buffers"][0]["init"] = {{"npy", "nope.npy"}}; }, "/buffers/0/init/npy", "not found"},
      {"access", [](json& j) { j["buffers"][0]["access"] = "rw"; }, "/buffers/0/access", "unknown access"},
      {"arg unknown buffer", [](json& j) { j["args"][0]["buffer"] = "z"; }, "/args/0/buffer", "no buffer named \"z\""},
      {"arg both", [](json& j) { j["args"][0]["type"] = "u32"; }, "/args/0", "no \"type\""},
      {"arg empty", [](json& j) { j["args"][0] = json::object(); }, "/args/0", "missing"},
      {"arg type", [](json& j) { j["args"][1]["type"] = "int"; }, "/args/1/type", "unknown type \"int\""},
      {"arg range", [](json& j) { j["args"][1] = {{"type", "u8"}, {"value", 256}}; }, "/args/1/value", "does not fit in u8"},
      {"arg negative unsigned", [](json& j) { j["args"][1] = {{"type", "u32"}, {"value", -1}}; }, "/args/1/value", "does not fit"},
      {"arg value type", [](json& j) { j["args"][1]["value"] = true; }, "/args/1/value", "expected a number"},
      {"arg no value", [](json& j) { j["args"][1].erase("value"); }, "/args/1", "\"value\""},
      {"arg offset align", [](json& j) { j["args"][1]["offset"] = 2; }, "", ""},  // checked by layout, not parse
      {"count_of unknown", [](json& j) { j["args"][1]["value"] = {{"count_of", "q"}}; }, "/args/1/value/count_of", "no buffer"},
      {"shape_of axis", [](json& j) { j["args"][1]["value"] = {{"shape_of", "m"}, {"axis", 2}}; }, "/args/1/value/axis", "2 dimension"},
      {"divided_by zero", [](json& j) { j["launch"]["global_size"] = {{{"count_of", "x"}, {"divided_by", 0}}}; }, "/launch/global_size/0/divided_by", "at least 1"},
      {"divided_by type", [](json& j) { j["launch"]["global_size"] = {{{"count_of", "x"}, {"divided_by", "4"}}}; }, "/launch/global_size/0/divided_by", "expected"},
      {"divided_by unknown key", [](json& j) { j["launch"]["global_size"] = {{{"count_of", "x"}, {"divide", 4}}}; }, "/launch/global_size/0/divide", ""},
      {"bounds", [](json& j) { j["args"][1] = {{"type", "u32"}, {"value", 101}, {"bounds", {"x"}}}; }, "/args/1/bounds/0", "too small"},
      {"launch missing", [](json& j) { j.erase("launch"); }, "", "\"launch\""},
      {"wg size type", [](json& j) { j["launch"]["workgroup_size"] = 32; }, "/launch/workgroup_size", "array"},
      {"wg size dims", [](json& j) { j["launch"]["workgroup_size"] = {1, 1, 1, 1}; }, "/launch/workgroup_size", "1 to 3"},
      {"wg size zero", [](json& j) { j["launch"]["workgroup_size"] = {0}; }, "/launch/workgroup_size/0", "at least 1"},
      {"both grids", [](json& j) { j["launch"]["workgroup_count"] = {4}; }, "/launch", "exactly one"},
      {"no grid", [](json& j) { j["launch"].erase("global_size"); }, "/launch", "workgroup_count"},
      {"grid dims", [](json& j) { j["launch"]["global_size"] = {100, 1}; }, "/launch/global_size", "one per workgroup_size"},
      {"grid overflow", [](json& j) { j["launch"]["global_size"] = {uint64_t(1) << 32}; }, "/launch/global_size/0", "overflows"},
      {"grid round overflow", [](json& j) { j["launch"]["global_size"] = {4294967295u}; }, "/launch/global_size/0", "overflows"},
      {"count overflow", [](json& j) { j["launch"] = {{"workgroup_size", {32}}, {"workgroup_count", {134217728}}}; }, "/launch/workgroup_count/0", "overflows"},
      {"covers", [](json& j) { j["launch"]["covers"] = {"m"}; }, "/launch/covers/0", "too small for the launch"},
      {"covers per", [](json& j) { j["launch"]["covers"] = {{{"buffer", "m"}, {"per", "group"}}}; }, "/launch/covers/0/per", "unknown"},
      {"iterations", [](json& j) { j["iterations"] = -1; }, "/iterations", "at least"},
      {"verify type", [](json& j) { j["verify"] = "yes"; }, "/verify", "expected an array"},
      {"verify buffer", [](json& j) { j["verify"] = {{{"buffer", "q"}, {"expected", {{"reference", "saxpy"}}}}}; }, "/verify/0/buffer", "no buffer"},
      {"verify expected", [](json& j) { j["verify"] = {{{"buffer", "x"}, {"expected", {{"file", "a"}}}}}; }, "/verify/0/expected/file", "unknown field"},
      {"verify no expected", [](json& j) { j["verify"] = {{{"buffer", "x"}}}; }, "/verify/0", "\"expected\""},
      {"verify reference", [](json& j) { j["verify"] = {{{"buffer", "x"}, {"expected", {{"reference", ""}}}}}; }, "/verify/0/expected/reference", "empty"},
      {"verify backend", [](json& j) { j["verify"] = {{{"buffer", "x"}, {"expected", {{"reference_backend", "cpu"}}}}}; }, "/verify/0/expected/reference_backend", "host"},
      {"verify values count", [](json& j) { j["verify"] = {{{"buffer", "x"}, {"expected", {{"values", {1, 2}}}}}}; }, "/verify/0/expected/values", "100 elements"},
      {"verify rtol", [](json& j) { j["verify"] = {{{"buffer", "x"}, {"expected", {{"reference", "saxpy"}}}, {"rtol", -1}}}; }, "/verify/0/rtol", "negative"},
      {"verify equal_nan", [](json& j) { j["verify"] = {{{"buffer", "x"}, {"expected", {{"reference", "saxpy"}}}, {"equal_nan", 1}}}; }, "/verify/0/equal_nan", "true or false"},
      {"verify skip", [](json& j) { j["verify"] = {{"skip", ""}}; }, "/verify/skip", "empty"},
      {"save", [](json& j) { j["save"] = {{{"buffer", "x"}, {"file", "x.npy"}}}; }, "/save/0/file", "unknown field"},
  };
  for (const auto& c : cases) {
    std::string what = c.what;
    CAPTURE(what);
    json j = base();
    c.edit(j);
    std::string message;
    std::string ptr = error_pointer(j, &message);
    CAPTURE(message);
    if (std::string(c.pointer).empty() && std::string(c.fragment).empty()) {
      CHECK(message.empty());
      continue;
    }
    CHECK(ptr == c.pointer);
    CHECK(message.find(c.fragment) != std::string::npos);
  }
}

// A buffer's access and a step argument's are read by one function
// (manifest_parse::parse_access): both quote a hostile value bounded.
TEST_CASE("manifest: an unknown buffer access is quoted bounded, as a step argument's is") {
  json j = base();
  const std::string hostile(5000, 'w');
  j["buffers"][0]["access"] = hostile;
  std::string message;
  CHECK(error_pointer(j, &message) == "/buffers/0/access");
  CAPTURE(message);
  CHECK(message.find("unknown access") != std::string::npos);
  CHECK(message.find("expected read, write or read_write") != std::string::npos);
  CHECK(message.size() < 300);
}

TEST_CASE("manifest: pointer tokens escape / and ~") {
  CHECK(pointer_token("a/b~c") == "a~1b~0c");
}

TEST_CASE("manifest: load_manifest reports malformed JSON with line and column, and missing files") {
  namespace fs = std::filesystem;
  fs::path p = fs::temp_directory_path() / "lrrt_test_malformed.json";
  {
    std::ofstream(p) << "{\n  \"lrrt_manifest\": 1,\n  \"kernel\": }";
  }
  try {
    load_manifest(p);
    FAIL("expected an error");
  } catch (const InputError& e) {
    std::string w = e.what();
    CHECK(w.find("lrrt_test_malformed.json") != std::string::npos);
    CHECK(w.find("line 3") != std::string::npos);
  }
  fs::remove(p);
  CHECK_THROWS_AS(load_manifest(fs::temp_directory_path() / "lrrt_no_such_manifest.json"), InputError);
}

TEST_CASE("manifest: code object resolution") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / "lrrt_test_codeobj";
  fs::create_directories(dir / "k");
  std::ofstream(dir / "k" / "a.gfx1100.hsaco") << "x";
  std::ofstream(dir / "local.so") << "x";
  json j = base();
  j["code_object"] = {{"hsa", "@kernels/a.{arch}.hsaco"}, {"host", "local.so"}};
  Manifest m = parse_manifest(j, dir);
  CHECK(resolve_code_object(m, "hsa", "gfx1100", dir / "k") == dir / "k" / "a.gfx1100.hsaco");
  CHECK(resolve_code_object(m, "host", "x86_64", dir / "k") == dir / "local.so");
  try {
    resolve_code_object(m, "cuda", "sm_90", dir / "k");
    FAIL("expected an error");
  } catch (const ManifestError& e) {
    CHECK(e.pointer() == "/code_object");
  }
  try {
    resolve_code_object(m, "hsa", "gfx942", dir / "k");
    FAIL("expected an error");
  } catch (const ManifestError& e) {
    CHECK(e.pointer() == "/code_object/hsa");
    CHECK(std::string(e.what()).find("a.gfx942.hsaco") != std::string::npos);
  }
  fs::remove_all(dir);
}

TEST_CASE("manifest: NAME.* is the build's file of NAME for the device, best first") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / "lrrt_test_buildname";
  fs::remove_all(dir);
  fs::create_directories(dir / "k");
  for (const char* f : {"b.host.so", "b.bundle.hsaco", "b.gfx1100.hsaco", "b.ptx"}) std::ofstream(dir / "k" / f) << "x";
  json j = base();
  j["code_object"] = "@kernels/b.*";
  Manifest m = parse_manifest(j, dir);
  CHECK(resolve_code_object(m, "host", "x86_64", dir / "k") == dir / "k" / "b.host.so");
  CHECK(resolve_code_object(m, "hsa", "gfx1100", dir / "k") == dir / "k" / "b.gfx1100.hsaco");
  CHECK(resolve_code_object(m, "hsa", "gfx942", dir / "k") == dir / "k" / "b.bundle.hsaco");  // no gfx942 build
  CHECK(resolve_code_object(m, "cuda", "sm_90", dir / "k") == dir / "k" / "b.ptx");          // neither cubin nor fatbin
  fs::remove(dir / "k" / "b.ptx");
  try {
    resolve_code_object(m, "cuda", "sm_90", dir / "k");
    FAIL("expected an error");
  } catch (const ManifestError& e) {
    CHECK(e.pointer() == "/code_object");
    for (const char* f : {"b.sm_90.cubin", "b.fatbin", "b.ptx", "--kernel-dir"})
      CHECK_MESSAGE(std::string(e.what()).find(f) != std::string::npos, f);
  }
  // The same rule for callers without a manifest (lrrt bench).
  CHECK(resolve_code_object_path("@kernels/b.*", "host", "x86_64", dir / "k", dir) == dir / "k" / "b.host.so");
  CHECK(build_file_names("b", "hsa", "gfx90a") == std::vector<std::string>{"b.gfx90a.hsaco", "b.bundle.hsaco"});
  fs::remove_all(dir);
}

TEST_CASE("manifest: divided_by launches a kernel that takes several elements per work-item") {
  // ceil(count / d) for every d from 1 to the count, on count_of and shape_of.
  for (uint64_t d = 1; d <= 101; ++d) {
    json j = base();
    j["launch"] = {{"workgroup_size", {1}}, {"global_size", {{{"count_of", "x"}, {"divided_by", d}}}}};
    j["args"][1]["value"] = {{"shape_of", "m"}, {"axis", 1}, {"divided_by", d}};
    const Manifest m = parse(j);
    CAPTURE(d);
    CHECK(m.launch.workgroup_count[0] == (100 + d - 1) / d);
    CHECK(m.args[1].value == static_cast<long double>((5 + d - 1) / d));
  }
}

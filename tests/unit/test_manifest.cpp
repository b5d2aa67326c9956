// Manifest parsing: every field, and errors that name the field.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "lrrt/bundle.hpp"

using nlohmann::json;
using namespace lrrt::bundle;
namespace fs = std::filesystem;

namespace {

json base() {
  return json::parse(R"({
    "lrrt_manifest": 1,
    "code_object": "k.so",
    "kernel": "k",
    "buffers": [
      {"name": "x", "type": "f32", "count": 100, "init": "zeros"},
      {"name": "m", "type": "i16", "shape": [3, 5]}
    ],
    "args": [{"buffer": "x"}, {"type": "u32", "value": 7}],
    "launch": {"workgroup_size": [32], "global_size": [100]}
  })");
}

Manifest parse(const json& j) { return parse_manifest(j, "."); }

// The error's pointer for a document (or "" when it parses).
std::string error_pointer(const json& j, std::string* message = nullptr) {
  try {
    parse(j);
  } catch (const ManifestError& e) {
    if (message) *message = e.what();
    return e.pointer();
  }
  return "";
}

}  // namespace

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

// ---- Sequences ---------------------------------------------------------------

namespace {

json sequence_base() {
  return json::parse(R"({
    "lrrt_manifest": 1,
    "kernels": {"saxpy": {"code_object": "k.so"}, "add": {"code_object": {"host": "a.so"}, "kernel": "vector_add_f32"}},
    "buffers": [
      {"name": "x", "type": "f32", "count": 100, "init": "random"},
      {"name": "y", "type": "f32", "count": 100, "init": "random"},
      {"name": "z", "type": "f32", "count": 100},
      {"name": "w", "type": "i64", "count": 10}
    ],
    "sequence": [
      {"name": "load", "copy": {"from": "x", "to": "z", "bytes": 40, "to_offset": 8}},
      {"name": "clear", "fill": {"buffer": "y", "value": 1.5, "range": {"offset": 4, "bytes": 8}}},
      {"repeat": 3, "steps": [
        {"name": "step", "kernel": "saxpy",
         "args": [{"name": "a", "type": "f32", "value": 2},
                  {"buffer": "x", "access": "read", "range": {"offset": 16, "bytes": 64}},
                  {"buffer": "y", "access": "read_write"},
                  {"type": "u32", "value": 100}],
         "launch": {"workgroup_size": [32], "global_size": [100]}},
        {"name": "sum", "kernel": "add", "after": ["step", "load"],
         "args": [{"buffer": "y", "access": "read"}, {"buffer": "y", "access": "read"}, {"buffer": "z", "access": "write"},
                  {"type": "u32", "value": 100}],
         "launch": {"workgroup_size": [32], "workgroup_count": [4]}}
      ]}
    ],
    "patch": {"step": "step", "arg": "a", "values": [1, -2.5]},
    "verify": [{"buffer": "z", "expected": {"reference": "sequence"}}]
  })");
}

std::string sequence_error(const json& j, std::string* message = nullptr) {
  try {
    parse(j);
  } catch (const ManifestError& e) {
    if (message) *message = e.what();
    return e.pointer();
  }
  return "";
}

}  // namespace

TEST_CASE("manifest: a sequence expands repeat, resolves after to the latest earlier repetition, and parses patch") {
  const Manifest m = parse(sequence_base());
  REQUIRE(m.sequence);
  const Sequence& s = *m.sequence;
  CHECK(m.name == "sequence");
  CHECK(m.kernel.empty());
  CHECK(m.args.empty());
  REQUIRE(s.kernels.size() == 2);
  CHECK(s.kernels[0].alias == "add");  // object keys in order
  CHECK(s.kernels[0].kernel == "vector_add_f32");
  CHECK(s.kernels[1].kernel == "saxpy");  // defaults to the alias
  CHECK(s.written_steps == 4);
  REQUIRE(s.steps.size() == 2 + 3 * 2);
  CHECK(s.dispatches() == 6);
  CHECK(s.steps[0].kind == SequenceStep::Kind::Copy);
  CHECK(s.steps[0].bytes == 40);
  CHECK(s.steps[0].to_offset == 8);
  CHECK(s.steps[1].kind == SequenceStep::Kind::Fill);
  CHECK(s.steps[1].pattern_size == 4);
  CHECK(s.steps[1].to_offset == 4);
  CHECK(s.steps[1].bytes == 8);
  float pattern = 0;
  std::memcpy(&pattern, s.steps[1].pattern.data(), 4);
  CHECK(pattern == 1.5f);
  for (size_t r = 0; r < 3; ++r) {
    const SequenceStep& k = s.steps[2 + 2 * r];
    const SequenceStep& sum = s.steps[3 + 2 * r];
    CHECK(k.label == "step[" + std::to_string(r) + "]");
    CHECK(k.repetition == r);
    CHECK(k.written == 2);
    CHECK(k.args[1].access == Access::Read);
    CHECK(k.args[1].range_offset == 16);
    CHECK(k.args[1].range_bytes == 64);
    CHECK(k.args[2].access == Access::ReadWrite);
    CHECK(k.args[2].range_bytes == 0);
    // after: the latest earlier instance of each named step.
    CHECK(sum.after == std::vector<size_t>{2 + 2 * r, 0});
    CHECK(sum.launch.workgroup_count[0] == 4);
  }
  REQUIRE(s.patch);
  CHECK(s.patch->written == 2);
  CHECK(s.patch->arg == 0);
  REQUIRE(s.patch->values.size() == 2);
  float v = 0;
  std::memcpy(&v, s.patch->encoded[1].data(), 4);
  CHECK(v == -2.5f);
  // The single-kernel view of a step.
  const Manifest k = kernel_step_manifest(m, s.steps[3]);
  CHECK(k.kernel == "vector_add_f32");
  CHECK(k.code_object.at("host") == "a.so");
  CHECK(k.args.size() == 4);
  CHECK(k.buffers.size() == m.buffers.size());
}

TEST_CASE("manifest: a step's buffer argument may omit its access (derived from the code object)") {
  json j = sequence_base();
  j["sequence"][2]["steps"][0]["args"][2].erase("access");
  const Manifest m = parse(j);
  REQUIRE(m.sequence);
  bool none = false, declared = false;
  for (const auto& step : m.sequence->steps)
    for (const auto& a : step.args)
      if (a.kind == ArgSpec::Kind::Buffer) (a.access == Access::None ? none : declared) = true;
  CHECK(none);      // the one without
  CHECK(declared);  // the others keep theirs
}

TEST_CASE("manifest: sequence errors name the step and the field") {
  struct Case {
    const char* what;
    std::function<void(json&)> edit;
    const char* pointer;
    const char* fragment;
  };
  const std::vector<Case> cases = {
      {"unknown access", [](json& j) { j["sequence"][2]["steps"][0]["args"][2]["access"] = "modify"; },
       "/sequence/2/steps/0/args/2/access", "unknown access"},
      {"access on a scalar", [](json& j) { j["sequence"][2]["steps"][0]["args"][0]["access"] = "read"; },
       "/sequence/2/steps/0/args/0/access", "only buffer arguments"},
      {"range past the end", [](json& j) { j["sequence"][2]["steps"][0]["args"][1]["range"]["bytes"] = 400; },
       "/sequence/2/steps/0/args/1/range/bytes", "past the end"},
      {"unknown buffer", [](json& j) { j["sequence"][2]["steps"][1]["args"][2]["buffer"] = "nope"; },
       "/sequence/2/steps/1/args/2/buffer", "no buffer named \"nope\""},
      {"unknown copy buffer", [](json& j) { j["sequence"][0]["copy"]["to"] = "nope"; }, "/sequence/0/copy/to", "no buffer named"},
      {"copy too large", [](json& j) { j["sequence"][0]["copy"]["to_offset"] = 396; }, "/sequence/0/copy/bytes", "do not fit"},
      {"unknown kernel", [](json& j) { j["sequence"][2]["steps"][0]["kernel"] = "gemm"; }, "/sequence/2/steps/0/kernel",
       "no kernel \"gemm\" in /kernels"},
      {"unknown after", [](json& j) { j["sequence"][2]["steps"][1]["after"] = {"nope"}; }, "/sequence/2/steps/1/after/0",
       "no earlier step named \"nope\""},
      {"after a later step (a cycle)", [](json& j) { j["sequence"][0]["after"] = {"sum"}; }, "/sequence/0/after/0",
       "comes later in the sequence"},
      {"after itself", [](json& j) { j["sequence"][1]["after"] = {"clear"}; }, "/sequence/1/after/0", "after itself"},
      {"repeat 0", [](json& j) { j["sequence"][2]["repeat"] = 0; }, "/sequence/2/repeat", "at least 1"},
      {"repeat not an integer", [](json& j) { j["sequence"][2]["repeat"] = 2.5; }, "/sequence/2/repeat", "non-negative integer"},
      {"repeat too large",
       [](json& j) {
         j["sequence"][2]["repeat"] = 1000;
         j["sequence"][2]["steps"] = json::array({{{"repeat", 1000}, {"steps", j["sequence"][2]["steps"]}}});
       },
       "/sequence/2/repeat", "exceed the limit"},
      {"empty repeat", [](json& j) { j["sequence"][2]["steps"] = json::array(); }, "/sequence/2/steps", "non-empty"},
      {"two kinds in one step", [](json& j) { j["sequence"][0]["fill"] = {{"buffer", "y"}, {"value", 0}}; }, "/sequence/0",
       "exactly one of"},
      {"duplicate name", [](json& j) { j["sequence"][1]["name"] = "load"; }, "/sequence/1/name", "duplicate step name"},
      {"fill value not a 4-byte pattern",
       [](json& j) { j["sequence"][1]["fill"] = {{"buffer", "w"}, {"value", 1}}; }, "/sequence/1/fill/value", "4-byte pattern"},
      {"patch of an unknown step", [](json& j) { j["patch"]["step"] = "nope"; }, "/patch/step", "no step named"},
      {"patch of a buffer argument", [](json& j) { j["patch"]["arg"] = 1; }, "/patch/arg", "only scalars can be patched"},
      {"patch of an unknown argument", [](json& j) { j["patch"]["arg"] = "b"; }, "/patch/arg", "no argument named \"b\""},
      {"patch of a copy", [](json& j) { j["patch"]["step"] = "load"; }, "/patch/step", "not a kernel step"},
      {"patch without values", [](json& j) { j["patch"]["values"] = json::array(); }, "/patch/values", "1 to 1000"},
      {"patch value out of range",
       [](json& j) {
         j["patch"]["arg"] = 3;
         j["patch"]["values"] = {-1};
       },
       "/patch/values/0", "does not fit in u32"},
      {"patch with a check that cannot follow it",
       [](json& j) { j["verify"][0]["expected"] = {{"values", std::vector<double>(100, 0.0)}}; }, "/patch", "/verify/0"},
      {"a single-kernel field in a sequence", [](json& j) { j["kernel"] = "saxpy"; }, "/kernel", "per step"},
      {"kernels without a sequence",
       [](json& j) {
         j.erase("sequence");
         j.erase("patch");
       },
       "/kernels", "only a sequence manifest"},
      {"an empty sequence", [](json& j) { j["sequence"] = json::array(); }, "/sequence", "non-empty"},
  };
  for (const auto& c : cases) {
    SUBCASE(c.what) {
      json j = sequence_base();
      c.edit(j);
      std::string message;
      CHECK(sequence_error(j, &message) == c.pointer);
      INFO(message);
      CHECK(message.find(c.fragment) != std::string::npos);
    }
  }
}

TEST_CASE("manifest: values a buffer's type cannot hold are errors, not truncations or infinities") {
  std::mt19937_64 rng(std::random_device{}());
  auto with_check = [](const std::string& type, const json& values) {
    json j = base();
    j["buffers"].push_back({{"name", "c"}, {"type", type}, {"count", values.size()}});
    // c is passed to no argument: the check says it means that.
    j["verify"] = {{{"buffer", "c"}, {"expected", {{"values", values}}}, {"allow_unwritten", true}}};
    return j;
  };
  // Integers: whole numbers in range only.
  for (const json& bad : {json(0.9), json(4294967296.0), json(4294967296ull), json("nan"), json("inf"), json(1e30),
                          json(-1)}) {
    CAPTURE(bad.dump());
    CHECK(error_pointer(with_check("u32", json::array({7, bad}))) == "/verify/0/expected/values/1");
  }
  CHECK(error_pointer(with_check("i8", json::array({-128, 127}))) == "");
  CHECK(error_pointer(with_check("i8", json::array({-129}))) == "/verify/0/expected/values/0");
  const uint64_t big = rng() | (1ull << 63);
  CHECK(error_pointer(with_check("u64", json::array({big}))) == "");
  // Floats: finite values must stay finite in the type.
  CHECK(error_pointer(with_check("f32", json::array({1e39}))) == "/verify/0/expected/values/0");
  CHECK(error_pointer(with_check("f16", json::array({65520.0}))) == "/verify/0/expected/values/0");
  CHECK(error_pointer(with_check("f16", json::array({65504.0, "inf", "nan", "-inf"}))) == "");
  CHECK(error_pointer(with_check("f32", json::array({3.4028234e38, -3.4028234e38}))) == "");
  CHECK(error_pointer(with_check("f64", json::array({1e300}))) == "");
  // The same rule for fills, random bounds, iota starts and scalars.
  json j = base();
  j["buffers"][0]["init"] = {{"fill", 1e39}};
  CHECK(error_pointer(j) == "/buffers/0/init/fill");
  j = base();
  j["buffers"][0]["init"] = {{"random", {{"min", -1e39}, {"max", 1}}}};
  CHECK(error_pointer(j) == "/buffers/0/init/random/min");
  j = base();
  j["args"].push_back({{"type", "f32"}, {"value", 1e39}});
  CHECK(error_pointer(j) == "/args/2/value");
  j = base();
  j["args"].push_back({{"type", "f16"}, {"value", 70000}});
  CHECK(error_pointer(j) == "/args/2/value");
}

TEST_CASE("manifest: integer checks are exact unless a tolerance is given") {
  json j = base();
  j["buffers"].push_back({{"name", "c"}, {"type", "i32"}, {"count", 2}});
  j["verify"] = {{{"buffer", "c"}, {"expected", {{"values", {1, 2}}}}, {"allow_unwritten", true}},
                 {{"buffer", "c"}, {"expected", {{"values", {1, 2}}}}, {"atol", 3}, {"allow_unwritten", true}},
                 {{"buffer", "x"}, {"expected", {{"values", std::vector<double>(100, 0.5)}}}}};
  Manifest m = parse(j);
  CHECK(m.verify[0].rtol == 0);
  CHECK(m.verify[0].atol == 0);
  CHECK(m.verify[1].rtol == 0);
  CHECK(m.verify[1].atol == 3);
  CHECK(m.verify[2].rtol == 1e-5);  // floats keep numpy's defaults
  CHECK(m.verify[2].atol == 1e-8);
}

TEST_CASE("manifest: names and paths hold no control characters") {
  for (const std::string& bad : {std::string("empty\0junk", 10), std::string("k\x1b[31m"), std::string("k\n"),
                                 std::string("k\x7f")}) {
    CAPTURE(lrrt::bundle::printable(bad));
    json j = base();
    j["kernel"] = bad;
    std::string message;
    CHECK(error_pointer(j, &message) == "/kernel");
    CHECK(message.find("control character") != std::string::npos);
    for (unsigned char c : message) CHECK((c >= 0x20 || c == '\n'));  // the message is escaped itself
    j = base();
    j["buffers"][0]["name"] = bad;
    CHECK(error_pointer(j) == "/buffers/0/name");
    j = base();
    j["code_object"] = bad;
    CHECK(error_pointer(j) == "/code_object");
  }
  json j = base();
  j["description"] = "two lines\n\tand a tab";
  CHECK(error_pointer(j) == "");
}

TEST_CASE("kernargs: a scalar of the other kind of number is refused where the code object records types") {
  CHECK(scalar_family("float") == ScalarFamily::Float);
  CHECK(scalar_family("const double") == ScalarFamily::Float);
  CHECK(scalar_family("f32") == ScalarFamily::Float);        // PTX
  CHECK(scalar_family("uint32_t") == ScalarFamily::Integer);
  CHECK(scalar_family("unsigned int") == ScalarFamily::Integer);
  CHECK(scalar_family("u32") == ScalarFamily::Integer);      // PTX
  CHECK(scalar_family("b32") == ScalarFamily::Unknown);      // PTX untyped bits
  CHECK(scalar_family("const float*") == ScalarFamily::Unknown);
  CHECK(scalar_family("struct params") == ScalarFamily::Unknown);
  CHECK(scalar_family("") == ScalarFamily::Unknown);

  json j = base();
  j["args"] = {{{"type", "u32"}, {"value", 2}}, {{"buffer", "x"}}};
  Manifest m = parse(j);
  const KernargLayout layout = layout_kernargs(m.args);
  auto declared = [](std::string scalar_type) {
    return std::vector<KernelArg>{{0, 4, false, "a", true, std::move(scalar_type)}, {8, 8, true, "x", true, "float*"}};
  };
  try {
    check_kernargs(m.args, layout, declared("float"), "saxpy");
    FAIL("u32 for a float argument passed the layout check");
  } catch (const ManifestError& e) {
    CHECK(e.pointer() == "/args/0");
    CHECK(std::string(e.what()).find("u32 (an integer)") != std::string::npos);
    CHECK(std::string(e.what()).find("(a) is float") != std::string::npos);
  }
  CHECK_NOTHROW(check_kernargs(m.args, layout, declared("uint32_t"), "k"));
  CHECK_NOTHROW(check_kernargs(m.args, layout, declared("int"), "k"));  // signedness is not checked
  CHECK_NOTHROW(check_kernargs(m.args, layout, declared(""), "k"));     // no type recorded
  CHECK_NOTHROW(check_kernargs(m.args, layout, declared("b32"), "k"));
  j["args"][0] = {{"type", "f32"}, {"value", 2}};
  m = parse(j);
  CHECK_THROWS_AS(check_kernargs(m.args, layout_kernargs(m.args), declared("int32_t"), "k"), ManifestError);
  CHECK_NOTHROW(check_kernargs(m.args, layout_kernargs(m.args), declared("float"), "k"));
}

// ---- Issue 25: manifests that would make verification vacuous ---------------

namespace {

std::string pointer_and_message(const json& j, const fs::path& base, std::string& message) {
  try {
    parse_manifest(j, base);
  } catch (const ManifestError& e) {
    message = e.what();
    return e.pointer();
  }
  return "";
}

}  // namespace

TEST_CASE("manifest: patch values are checked against the patched argument's bounds") {
  json j = sequence_base();
  j["sequence"][2]["steps"][0]["args"][3]["bounds"] = {"x", "y"};
  j["patch"] = {{"step", "step"}, {"arg", 3}, {"values", {100, 50, 101}}};
  std::string msg;
  CHECK(pointer_and_message(j, ".", msg) == "/patch/values/2");
  CHECK(msg.find("\"x\"") != std::string::npos);
  CHECK(msg.find("101") != std::string::npos);
  j["patch"]["values"] = {100, 1, 0};
  CHECK(pointer_and_message(j, ".", msg).empty());
}

TEST_CASE("manifest: a check of a buffer nothing writes is an error unless it says allow_unwritten") {
  json j = base();
  // m is passed to no argument.
  j["verify"] = {{{"buffer", "x"}, {"expected", {{"reference", "k"}}}}, {{"buffer", "m"}, {"expected", {{"reference", "k"}}}}};
  std::string msg;
  CHECK(pointer_and_message(j, ".", msg) == "/verify/1/buffer");
  CHECK(msg.find("\"m\"") != std::string::npos);
  j["verify"][1]["allow_unwritten"] = true;
  CHECK(pointer_and_message(j, ".", msg).empty());
  // x declared read-only.
  j["buffers"][0]["access"] = "read";
  CHECK(pointer_and_message(j, ".", msg) == "/verify/0/buffer");
  j["verify"][0]["allow_unwritten"] = "yes";
  CHECK(pointer_and_message(j, ".", msg) == "/verify/0/allow_unwritten");
  // A sequence: no step writes x (read only), y is written by a fill, z by a copy.
  json s = sequence_base();
  s.erase("patch");
  s["verify"] = {{{"buffer", "x"}, {"expected", {{"values", std::vector<double>(100, 0.0)}}}}};
  CHECK(pointer_and_message(s, ".", msg) == "/verify/0/buffer");
  s["verify"][0]["buffer"] = "y";
  CHECK(pointer_and_message(s, ".", msg).empty());
  s["verify"][0]["buffer"] = "w";
  s["verify"][0]["expected"]["values"] = std::vector<int>(10, 0);
  CHECK(pointer_and_message(s, ".", msg) == "/verify/0/buffer");
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

// Manifests that would make verification wrong or vacuous: values a
// buffer's type cannot hold, inexact integer checks, control characters in
// names and paths, a scalar of the other kind of number (kernargs), patch
// values past an argument's bounds, checks of buffers nothing writes.
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

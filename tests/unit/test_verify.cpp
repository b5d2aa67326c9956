// verify_outputs: the five strategies of "expected" (npy, raw, inline values,
// a built-in reference, another backend) on fresh random data, each passing
// on right outputs and failing, at the right element, on a poisoned one.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "lrrt/lrrt.hpp"
#include "tool/bundle.hpp"
#include "tool/verify.hpp"

using nlohmann::json;
using namespace lrrt::tool;
namespace fs = std::filesystem;

namespace {

constexpr uint32_t kCount = 257;

struct Fixture {
  fs::path dir = fs::temp_directory_path() / ("lrrt-verify-" + std::to_string(::getpid()));
  std::mt19937 gen{std::random_device{}()};
  float a = 0;
  BufferContents initial{2}, outputs{2};
  std::vector<float> expected = std::vector<float>(kCount);

  Fixture() {
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::uniform_real_distribution<float> d(-4, 4);
    a = d(gen);
    std::vector<float> x(kCount), y(kCount);
    for (uint32_t i = 0; i < kCount; ++i) {
      x[i] = d(gen);
      y[i] = d(gen);
      expected[i] = a * x[i] + y[i];
    }
    initial[0] = bytes_of(x);
    initial[1] = bytes_of(y);
    outputs[1] = bytes_of(expected);
  }
  ~Fixture() { fs::remove_all(dir); }

  static std::vector<std::byte> bytes_of(const std::vector<float>& v) {
    std::vector<std::byte> b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
  }

  Manifest manifest(const json& expected_spec) const {
    json m = {{"lrrt_manifest", 1},
              {"code_object", "k.so"},
              {"kernel", "saxpy"},
              {"buffers", {{{"name", "x"}, {"type", "f32"}, {"count", kCount}}, {{"name", "y"}, {"type", "f32"}, {"count", kCount}}}},
              {"args", {{{"type", "f32"}, {"value", a}}, {{"buffer", "x"}}, {{"buffer", "y"}}, {{"type", "u32"}, {"value", kCount}}}},
              {"launch", {{"workgroup_size", {64}}, {"global_size", {kCount}}}},
              {"verify", {{{"buffer", "y"}, {"expected", expected_spec}, {"rtol", 1e-6}, {"atol", 1e-6}}}}};
    return parse_manifest(m, dir);
  }

  json verify(const Manifest& m, const std::string& backend = "host",
              std::function<BufferContents(const lrrt::Device&)> elsewhere = {}) const {
    VerifyInputs in;
    in.manifest = &m;
    in.initial = &initial;
    in.outputs = &outputs;
    in.grid = {(kCount + 63) / 64, 1, 1};
    in.block = {64, 1, 1};
    in.backend = backend;
    in.run_elsewhere = std::move(elsewhere);
    return verify_outputs(in, true);
  }

  // One element of the outputs made wrong; returns its index.
  uint32_t poison() {
    const uint32_t i = std::uniform_int_distribution<uint32_t>(0, kCount - 1)(gen);
    float bad = expected[i] + 1.0f;
    std::memcpy(outputs[1].data() + 4 * i, &bad, 4);
    return i;
  }
};

void check_result(const json& v, const char* status, int64_t bad_index = -1) {
  INFO(v.dump());
  CHECK(v["status"] == status);
  REQUIRE(v["checks"].size() == 1);
  const json& c = v["checks"][0];
  CHECK(c["status"] == status);
  CHECK(c["compared"] == kCount);
  if (bad_index >= 0) {
    CHECK(c["mismatches"] == 1);
    CHECK(c["first_mismatches"][0]["index"] == bad_index);
  } else {
    CHECK(c["mismatches"] == 0);
  }
}

}  // namespace

TEST_CASE("verify: inline values, raw and npy files") {
  Fixture f;
  json values = json::array();
  for (float e : f.expected) values.push_back(e);
  std::ofstream(f.dir / "y.raw", std::ios::binary)
      .write(reinterpret_cast<const char*>(f.expected.data()), std::streamsize(f.expected.size() * 4));
  std::ofstream(f.dir / "y.npy", std::ios::binary)
      << npy_bytes(DType::f32, {kCount}, reinterpret_cast<const std::byte*>(f.expected.data()));
  const Manifest by_values = f.manifest({{"values", values}});
  const Manifest by_raw = f.manifest({{"raw", "y.raw"}});
  const Manifest by_npy = f.manifest({{"npy", "y.npy"}});
  check_result(f.verify(by_values), "passed");
  check_result(f.verify(by_raw), "passed");
  check_result(f.verify(by_npy), "passed");
  const uint32_t bad = f.poison();
  check_result(f.verify(by_values), "failed", bad);
  check_result(f.verify(by_raw), "failed", bad);
  check_result(f.verify(by_npy), "failed", bad);

  // A file of the wrong size names the field.
  std::ofstream(f.dir / "short.raw") << "abc";
  CHECK_THROWS_WITH_AS(f.verify(f.manifest({{"raw", "short.raw"}})), doctest::Contains("/verify/0/expected/raw"),
                       ManifestError);
}

TEST_CASE("verify: a built-in reference computed from the initial contents") {
  Fixture f;
  const Manifest m = f.manifest({{"reference", "saxpy"}});
  check_result(f.verify(m), "passed");
  const uint32_t bad = f.poison();
  check_result(f.verify(m), "failed", bad);
}

TEST_CASE("verify: a reference the tool does not have is an input error naming the field, before any run") {
  Fixture f;
  // parse_manifest (the bundle) accepts any name; the tool checks it.
  const Manifest gemm = f.manifest({{"reference", "gemm"}});
  try {
    check_references(gemm);
    FAIL("expected an error");
  } catch (const ManifestError& e) {
    CHECK(e.pointer() == "/verify/0/expected/reference");
    CHECK(std::string(e.what()).find("saxpy") != std::string::npos);  // the available ones
    CHECK(e.exit_code() == kExitInputError);
  }
  CHECK_NOTHROW(check_references(f.manifest({{"reference", "saxpy"}})));
}

TEST_CASE("verify: another backend's run, once per backend, the backend under test is skipped") {
  lrrt::Runtime runtime;
  Fixture f;
  const Manifest m = f.manifest({{"reference_backend", "host"}});
  int runs = 0;
  auto elsewhere = [&](const lrrt::Device& device) {
    ++runs;
    CHECK(device.backend() == "host");
    BufferContents out = f.initial;
    out[1] = Fixture::bytes_of(f.expected);
    return out;
  };
  // Verifying an (imagined) cuda run against host.
  check_result(f.verify(m, "cuda", elsewhere), "passed");
  CHECK(runs == 1);
  const uint32_t bad = f.poison();
  check_result(f.verify(m, "cuda", elsewhere), "failed", bad);

  json same = f.verify(m, "host", elsewhere);
  CHECK(same["status"] == "skipped");
  CHECK(same["checks"][0]["status"] == "skipped");
  CHECK(same["reason"] == "no check was independent of the backend under test");
  CHECK(runs == 2);  // not run for the skipped check
}

TEST_CASE("verify: disabled, or nothing declared, is skipped with the reason") {
  Fixture f;
  const Manifest m = f.manifest({{"reference", "saxpy"}});
  VerifyInputs in;
  in.manifest = &m;
  in.initial = &f.initial;
  in.outputs = &f.outputs;
  json off = verify_outputs(in, false);
  CHECK(off["status"] == "skipped");
  CHECK(off["reason"] == "verification disabled (--no-verify)");
  CHECK(off["checks"].empty());
}

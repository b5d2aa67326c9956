// verify_outputs: the five strategies of "expected" (npy, raw, inline values,
// a built-in reference, another backend) on fresh random data, each passing
// on right outputs and failing, at the right element, on a poisoned one.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "lrrt/lrrt.hpp"
#include "tool/bundle.hpp"
#include "tool/runner.hpp"
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
              // x and y hold random values (the constructor's), not poison.
              {"buffers",
               {{{"name", "x"}, {"type", "f32"}, {"count", kCount}, {"init", "random"}},
                {{"name", "y"}, {"type", "f32"}, {"count", kCount}, {"init", "random"}}}},
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

// ---- Issue 25: what verification may call "passed" -------------------------

namespace {

// vector_add_f32 on `count`-element buffers with n = `n`; a random, b
// random unless `b_poisoned`, c poisoned; the check's expected values from
// `expected_spec`.
struct VectorAdd {
  fs::path dir = fs::temp_directory_path() / ("lrrt-verify-va-" + std::to_string(::getpid()));
  std::mt19937 gen{std::random_device{}()};
  uint32_t count, n;
  BufferContents initial{3}, outputs{3};
  std::vector<float> sums;

  VectorAdd(uint32_t count_, uint32_t n_, bool b_poisoned = false) : count(count_), n(n_) {
    std::uniform_real_distribution<float> d(-50, 50);
    std::vector<float> a(count), b(count);
    for (auto& v : a) v = d(gen);
    for (auto& v : b) v = d(gen);
    if (b_poisoned) std::fill(b.begin(), b.end(), std::numeric_limits<float>::quiet_NaN());
    initial[0] = Fixture::bytes_of(a);
    initial[1] = Fixture::bytes_of(b);
    initial[2].resize(count * 4);
    fill_poison(DType::f32, initial[2].data(), count);
    // What a correct kernel leaves: c[i] = a[i] + b[i] for i < n, poison after.
    outputs[2] = initial[2];
    for (uint32_t i = 0; i < n; ++i) {
      const float c = a[i] + b[i];
      std::memcpy(outputs[2].data() + 4 * i, &c, 4);
    }
  }

  Manifest manifest(const json& expected, bool equal_nan, bool b_poisoned = false, double tol = 0) const {
    json m = {{"lrrt_manifest", 1},
              {"code_object", "k.so"},
              {"kernel", "vector_add_f32"},
              {"buffers",
               {{{"name", "a"}, {"type", "f32"}, {"count", count}, {"init", "random"}},
                {{"name", "b"}, {"type", "f32"}, {"count", count}, {"init", b_poisoned ? json("poison") : json("random")}},
                {{"name", "c"}, {"type", "f32"}, {"count", count}}}},
              {"args", {{{"buffer", "a"}}, {{"buffer", "b"}}, {{"buffer", "c"}}, {{"type", "u32"}, {"value", n}}}},
              {"launch", {{"workgroup_size", {count}}, {"global_size", {count}}}},
              {"verify", {{{"buffer", "c"}, {"expected", expected}, {"rtol", tol}, {"atol", tol}, {"equal_nan", equal_nan}}}}};
    return parse_manifest(m, dir);
  }

  json verify(const Manifest& m) const {
    VerifyInputs in;
    in.manifest = &m;
    in.initial = &initial;
    in.outputs = &outputs;
    in.grid = {1, 1, 1};
    in.block = {count, 1, 1};
    in.backend = "host";
    return verify_outputs(in, true);
  }

  void set(uint32_t i, uint32_t bits) { std::memcpy(outputs[2].data() + 4 * i, &bits, 4); }
};

}  // namespace

TEST_CASE("verify: untouched poison equals the reference's untouched poison bit for bit, whatever equal_nan says") {
  VectorAdd f(8, 6);
  for (const bool equal_nan : {false, true}) {
    const json v = f.verify(f.manifest({{"reference", "vector_add_f32"}}, equal_nan));
    INFO(v.dump());
    CHECK(v["status"] == "passed");
    CHECK(v["checks"][0]["mismatches"] == 0);
    CHECK(v["checks"][0]["untouched"] == 2);
  }
  // A kernel that writes an element the reference leaves untouched fails
  // there: a number, or a NaN of another payload, even with equal_nan.
  for (const uint32_t bits : {0x3f800000u, 0x7fc00001u}) {
    VectorAdd g(8, 6);
    const uint32_t i = std::uniform_int_distribution<uint32_t>(6, 7)(g.gen);
    g.set(i, bits);
    const json v = g.verify(g.manifest({{"reference", "vector_add_f32"}}, true));
    INFO(v.dump());
    CHECK(v["status"] == "failed");
    CHECK(v["checks"][0]["mismatches"] == 1);
    CHECK(v["checks"][0]["first_mismatches"][0]["index"] == i);
  }
  // And an element it should have written but did not is a mismatch too.
  VectorAdd h(8, 6);
  const uint32_t i = std::uniform_int_distribution<uint32_t>(0, 5)(h.gen);
  h.set(i, 0x7fc00000u);  // the poison
  const json v = h.verify(h.manifest({{"reference", "vector_add_f32"}}, true));
  CHECK(v["status"] == "failed");
  CHECK(v["checks"][0]["first_mismatches"][0]["index"] == i);
}

TEST_CASE("verify: expected values from poisoned inputs, or NaN over a NaN-poisoned buffer, are vacuous and fail") {
  // b is poison: every expected c[i] = a[i] + NaN is NaN, like the output's
  // poison, so with equal_nan an unwritten c would pass. The kernel wrote one element.
  VectorAdd f(1024, 1024, true);
  std::fill(f.outputs[2].begin(), f.outputs[2].end(), std::byte{0});
  fill_poison(DType::f32, f.outputs[2].data(), 1024);
  json v = f.verify(f.manifest({{"reference", "vector_add_f32"}}, true, true));
  INFO(v.dump());
  CHECK(v["status"] == "failed");
  CHECK(v["checks"][0]["status"] == "failed");
  CHECK(v["checks"][0]["vacuous"] == true);
  CHECK(v["checks"][0]["from_poison"] == 1024);
  CHECK(v["checks"][0]["reason"].get<std::string>().find("\"b\"") != std::string::npos);

  // Inline values, all NaN, over c (poisoned: NaN): nothing can tell a written c from an unwritten one.
  VectorAdd g(64, 0);
  v = g.verify(g.manifest({{"values", std::vector<std::string>(64, "nan")}}, true));
  CHECK(v["status"] == "failed");
  CHECK(v["checks"][0]["vacuous"] == true);
  // One informative value is enough to make the check a check again.
  json values = std::vector<std::string>(64, "nan");
  values[5] = 1.5;
  g.set(5, 0x3fc00000u);  // 1.5f
  v = g.verify(g.manifest({{"values", values}}, true));
  CHECK(v["status"] == "passed");
  CHECK_FALSE(v["checks"][0].contains("vacuous"));
}

TEST_CASE("verify: inline values are rounded to the buffer's type (f16, bf16, f32), so rtol = atol = 0 is bit-exact") {
  std::mt19937 gen{std::random_device{}()};
  std::uniform_real_distribution<double> d(-100, 100);
  for (const DType t : {DType::f16, DType::bf16, DType::f32}) {
    json values = json::array();
    std::vector<std::byte> out(kCount * dtype_size(t));
    for (uint32_t i = 0; i < kCount; ++i) {
      const double x = i == 0 ? 0.1 : d(gen);
      values.push_back(x);
      store_element(t, out.data(), i, x);  // what a correct kernel stores: x rounded to nearest even
    }
    json m = {{"lrrt_manifest", 1},
              {"code_object", "k.so"},
              {"kernel", "k"},
              {"buffers", {{{"name", "y"}, {"type", std::string(dtype_name(t))}, {"count", kCount}}}},
              {"args", {{{"buffer", "y"}}}},
              {"launch", {{"workgroup_size", {1}}, {"global_size", {1}}}},
              {"verify", {{{"buffer", "y"}, {"expected", {{"values", values}}}, {"rtol", 0}, {"atol", 0}}}}};
    const Manifest man = parse_manifest(m, ".");
    BufferContents initial{std::vector<std::byte>(out.size())}, outputs{out};
    fill_poison(t, initial[0].data(), kCount);
    VerifyInputs in;
    in.manifest = &man;
    in.initial = &initial;
    in.outputs = &outputs;
    in.backend = "host";
    json v = verify_outputs(in, true);
    INFO(dtype_name(t), ": ", v.dump());
    CHECK(v["status"] == "passed");
    // One unit in the last place off still fails.
    const uint32_t i = std::uniform_int_distribution<uint32_t>(0, kCount - 1)(gen);
    const size_t es = dtype_size(t);
    uint32_t bits = 0;
    std::memcpy(&bits, outputs[0].data() + i * es, es);
    ++bits;
    std::memcpy(outputs[0].data() + i * es, &bits, es);
    v = verify_outputs(in, true);
    CHECK(v["checks"][0]["mismatches"] == 1);
    CHECK(v["checks"][0]["first_mismatches"][0]["index"] == i);
  }
}

TEST_CASE("verify: mismatch reports print 64-bit integers exactly") {
  CHECK(number_json(18446744073709551615.0L).is_number_unsigned());
  CHECK(number_json(18446744073709551615.0L).get<uint64_t>() == UINT64_MAX);
  CHECK(number_json(18446744073709551614.0L).get<uint64_t>() == UINT64_MAX - 1);
  CHECK(number_json(-9223372036854775808.0L).is_number_integer());
  CHECK(number_json(-9223372036854775808.0L).get<int64_t>() == INT64_MIN);
  CHECK(number_json(9223372036854775808.0L).get<uint64_t>() == (uint64_t(1) << 63));
  CHECK(number_json(0.5L).is_number_float());
  // u64 and i64 arrays compared: the report names both values exactly.
  std::mt19937_64 gen{std::random_device{}()};
  std::vector<uint64_t> got(kCount), expected(kCount);
  for (uint32_t i = 0; i < kCount; ++i) got[i] = expected[i] = gen() | (uint64_t(1) << 63);
  const uint32_t bad = std::uniform_int_distribution<uint32_t>(0, kCount - 1)(gen);
  expected[bad] = got[bad] ^ 1;
  for (const DType t : {DType::u64, DType::i64}) {
    const CompareResult r = compare_allclose(t, reinterpret_cast<const std::byte*>(got.data()), t,
                                             reinterpret_cast<const std::byte*>(expected.data()), kCount, 0, 0, false);
    REQUIRE(r.mismatches == 1);
    const json j = compare_result_json(r, {kCount});
    const json& m = j["first_mismatches"][0];
    CHECK(m["index"] == bad);
    if (t == DType::u64) {
      CHECK(m["got"].get<uint64_t>() == got[bad]);
      CHECK(m["expected"].get<uint64_t>() == expected[bad]);
    } else {
      CHECK(m["got"].get<int64_t>() == static_cast<int64_t>(got[bad]));
      CHECK(m["expected"].get<int64_t>() == static_cast<int64_t>(expected[bad]));
    }
    CHECK(m["got"] != m["expected"]);
    CHECK_FALSE(m["got"].is_number_float());
  }
}

namespace {

struct Folder {
  fs::path dir = fs::temp_directory_path() / ("lrrt-verify-io-" + std::to_string(std::random_device{}()));
  Folder() { fs::create_directories(dir / "sub"); }
  ~Folder() { fs::remove_all(dir); }
  void file(const std::string& name, size_t bytes) {
    std::vector<float> v(bytes / 4);
    std::ofstream(dir / name, std::ios::binary)
        << (name.ends_with(".npy") ? npy_bytes(DType::f32, {v.size()}, reinterpret_cast<const std::byte*>(v.data()))
                                   : std::string(bytes, '\0'));
  }
};

std::string save_error(const json& j, const fs::path& base, std::string& message) {
  try {
    check_saves(parse_manifest(j, base));
  } catch (const ManifestError& e) {
    message = e.what();
    return e.pointer();
  }
  return "";
}

}  // namespace

TEST_CASE("verify: a save onto a file the run reads (expected, init npy or raw) names both fields") {
  Folder f;
  f.file("golden.npy", 400);
  f.file("in.npy", 400);
  f.file("in.raw", 400);
  json j = {{"lrrt_manifest", 1}, {"code_object", "k.so"}, {"kernel", "k"},
            {"buffers", {{{"name", "x"}, {"type", "f32"}, {"count", 100}}}},
            {"args", {{{"buffer", "x"}}}}, {"launch", {{"workgroup_size", {1}}, {"global_size", {1}}}}};
  j["buffers"][0]["init"] = {{"npy", "in.npy"}};
  j["buffers"].push_back({{"name", "r"}, {"type", "f32"}, {"count", 100}, {"init", {{"raw", "sub/../in.raw"}}}});
  j["verify"] = {{{"buffer", "x"}, {"expected", {{"npy", "golden.npy"}}}}};
  std::string msg;
  CHECK(save_error(j, f.dir, msg).empty());  // nothing saved: fine
  struct Case {
    std::string save;
    std::string names;
  };
  fs::create_symlink(f.dir / "golden.npy", f.dir / "link.npy");
  fs::create_hard_link(f.dir / "in.npy", f.dir / "hard.npy");
  for (const Case& c : {Case{"golden.npy", "/verify/0/expected/npy"}, Case{"./golden.npy", "/verify/0/expected/npy"},
                        Case{"sub/../golden.npy", "/verify/0/expected/npy"}, Case{"link.npy", "/verify/0/expected/npy"},
                        Case{(f.dir / "in.npy").string(), "/buffers/0/init/npy"}, Case{"hard.npy", "/buffers/0/init/npy"},
                        Case{"in.raw", "/buffers/1/init/raw"}}) {
    j["save"] = {{{"buffer", "x"}, {"npy", "other.npy"}}, {{"buffer", "x"}, {"npy", c.save}}};
    INFO(c.save);
    CHECK(save_error(j, f.dir, msg) == "/save/1/npy");
    CHECK(msg.find(c.names) != std::string::npos);
  }
  j["save"] = {{{"buffer", "x"}, {"npy", "fresh.npy"}}};
  CHECK(save_error(j, f.dir, msg).empty());
}


// End to end: struct, complex and raw-bytes arguments on the host backend,
// with fresh random inputs written here, poisoned outputs and every output
// element checked here (not only by lrrt's own verification); the errors
// each names; and the fence a struct's pointer field makes in a sequence.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cli_support.hpp"

using namespace cli_test;

namespace {

std::mt19937_64 fresh_rng() {
  std::random_device rd;
  const uint64_t seed = (uint64_t(rd()) << 32) ^ rd();
  MESSAGE("seed " << seed);
  return std::mt19937_64(seed);
}

// The data of a .npy file lrrt saved.
std::string npy_data(const fs::path& p) {
  const std::string s = read_text(p);
  REQUIRE(s.size() > 10);
  const size_t header = static_cast<unsigned char>(s[8]) | static_cast<unsigned char>(s[9]) << 8;
  return s.substr(10 + header);
}

json struct_manifest() { return json::parse(read_text(kSource / "manifests" / "struct_args.json")); }

Result run_json(const TempDir& dir, const json& m, std::vector<std::string> extra = {}) {
  write_text(dir / "m.json", m.dump());
  return run_manifest(dir, dir / "m.json", std::move(extra));
}

}  // namespace

TEST_CASE("struct args: every output element of the struct kernel, from fresh inputs, checked here") {
  auto rng = fresh_rng();
  std::uniform_real_distribution<float> u(-4, 4);
  const size_t n = 10007;
  std::vector<float> x(n);
  for (auto& v : x) v = u(rng);
  const float bias = u(rng);
  const double scale = u(rng);
  TempDir dir;
  write_npy(dir / "x.npy", "<f4", n, x.data(), n * 4);
  json m = struct_manifest();
  m["buffers"][0] = {{"name", "x"}, {"type", "f32"}, {"count", n}, {"init", {{"npy", "x.npy"}}}, {"access", "read"}};
  m["buffers"][1]["count"] = n;  // y: no init, so poisoned (NaN)
  m["args"][0]["struct"][2]["value"] = bias;
  m["args"][0]["struct"][3]["struct"][0]["value"] = scale;
  m["save"] = json::array({{{"buffer", "y"}, {"npy", "y.npy"}}});
  Result r = run_json(dir, m);
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const std::string y = npy_data(dir / "y.npy");
  REQUIRE(y.size() == n * 4);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    float got;
    std::memcpy(&got, y.data() + i * 4, 4);
    const float want = static_cast<float>(x[i] * scale) + bias;
    bad += !(got == want);
  }
  CHECK(bad == 0);
  const json doc = json::parse(read_text(dir / "out.json"));
  CHECK(doc["runs"][0]["verification"]["checks"][0]["compared"] == n);
  CHECK(doc["runs"][0]["kernargs"]["bytes"] == 40);
  CHECK(doc["runs"][0]["kernargs"]["layout_checked"] == true);

  // The check can fail: a kernel that skips the last element leaves it
  // poisoned, and the reference (which reads the struct's n from its bytes)
  // then expects it untouched; expected values that differ fail.
  json wrong = m;
  wrong.erase("save");
  std::vector<float> expect(n);
  for (size_t i = 0; i < n; ++i) expect[i] = static_cast<float>(x[i] * scale) + bias;
  expect[rng() % n] += 1.0f;
  write_npy(dir / "e.npy", "<f4", n, expect.data(), n * 4);
  wrong["verify"] = json::array({{{"buffer", "y"}, {"expected", {{"npy", "e.npy"}}}, {"rtol", 0}, {"atol", 0}}});
  Result f = run_json(dir, wrong);
  CHECK(f.rc == 1);
  CHECK(json::parse(read_text(dir / "out.json"))["runs"][0]["verification"]["checks"][0]["mismatches"] == 1);
}

TEST_CASE("complex args: axpy_c64 and axpy_c128, both parts of every element checked here") {
  auto rng = fresh_rng();
  std::uniform_real_distribution<double> u(-1, 1);
  for (const std::string type : {"c64", "c128"}) {
    CAPTURE(type);
    const bool single = type == "c64";
    const size_t n = 4099, esize = single ? 8 : 16;
    std::vector<std::complex<double>> x(n), y(n);
    for (auto& v : x) v = {u(rng), u(rng)};
    for (auto& v : y) v = {u(rng), u(rng)};
    const std::complex<double> a(u(rng), u(rng));
    auto bytes_of = [&](const std::vector<std::complex<double>>& v) {
      std::string out(n * esize, '\0');
      for (size_t i = 0; i < n; ++i) {
        if (single) {
          const std::complex<float> f(float(v[i].real()), float(v[i].imag()));
          std::memcpy(out.data() + i * 8, &f, 8);
        } else {
          std::memcpy(out.data() + i * 16, &v[i], 16);
        }
      }
      return out;
    };
    TempDir dir;
    const std::string xb = bytes_of(x), yb = bytes_of(y);
    write_npy(dir / "x.npy", single ? "<c8" : "<c16", n, xb.data(), xb.size());
    write_npy(dir / "y.npy", single ? "<c8" : "<c16", n, yb.data(), yb.size());
    json m = json::parse(read_text(kSource / "manifests" / ("axpy_" + type + ".json")));
    m["buffers"][0]["count"] = n;
    m["buffers"][0]["init"] = {{"npy", "x.npy"}};
    m["buffers"][1]["count"] = n;
    m["buffers"][1]["init"] = {{"npy", "y.npy"}};
    m["args"][0]["value"] = {a.real(), a.imag()};
    m["save"] = json::array({{{"buffer", "y"}, {"npy", "out.npy"}}});
    Result r = run_json(dir, m);
    INFO(r.err);
    REQUIRE(r.rc == 0);
    const std::string got = npy_data(dir / "out.npy");
    REQUIRE(got.size() == n * esize);
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) {
      std::complex<double> g;
      std::complex<double> xi = x[i], yi = y[i], ai = a;
      if (single) {
        std::complex<float> f;
        std::memcpy(&f, got.data() + i * 8, 8);
        g = {f.real(), f.imag()};
        // The inputs as the kernel saw them: rounded to float.
        xi = {float(xi.real()), float(xi.imag())};
        yi = {float(yi.real()), float(yi.imag())};
        ai = {float(ai.real()), float(ai.imag())};
      } else {
        std::memcpy(&g, got.data() + i * 16, 16);
      }
      const std::complex<double> want = ai * xi + yi;
      const double tol = single ? 1e-5 : 1e-13;
      bad += !(std::fabs(g.real() - want.real()) <= tol && std::fabs(g.imag() - want.imag()) <= tol);
    }
    CHECK(bad == 0);
    // lrrt's own check (the built-in reference) compared every element too.
    CHECK(json::parse(read_text(dir / "out.json"))["runs"][0]["verification"]["checks"][0]["compared"] == n);
  }
}

TEST_CASE("bytes args: a c64 scalar given as hex and as a file runs like the typed scalar") {
  auto rng = fresh_rng();
  std::uniform_real_distribution<float> u(-1, 1);
  const size_t n = 1000;
  std::vector<std::complex<float>> x(n), y(n);
  for (auto& v : x) v = {u(rng), u(rng)};
  for (auto& v : y) v = {u(rng), u(rng)};
  const std::complex<float> a(u(rng), u(rng));
  TempDir dir;
  write_npy(dir / "x.npy", "<c8", n, x.data(), n * 8);
  write_npy(dir / "y.npy", "<c8", n, y.data(), n * 8);
  json m = json::parse(read_text(kSource / "manifests" / "axpy_c64.json"));
  m["buffers"][0]["count"] = n;
  m["buffers"][0]["init"] = {{"npy", "x.npy"}};
  m["buffers"][1]["count"] = n;
  m["buffers"][1]["init"] = {{"npy", "y.npy"}};
  m["args"][0]["value"] = {a.real(), a.imag()};
  m["save"] = json::array({{{"buffer", "y"}, {"npy", "typed.npy"}}});
  Result typed = run_json(dir, m);
  INFO(typed.err);
  REQUIRE(typed.rc == 0);  // checked against the built-in reference
  std::string hex;
  const auto* p = reinterpret_cast<const unsigned char*>(&a);
  for (int i = 0; i < 8; ++i) {
    static const char* digits = "0123456789abcdef";
    hex += digits[p[i] >> 4];
    hex += digits[p[i] & 15];
  }
  write_text(dir / "a.bin", std::string(reinterpret_cast<const char*>(&a), 8));
  for (const json& arg : {json{{"name", "a"}, {"bytes", hex}}, json{{"name", "a"}, {"bytes_file", "a.bin"}}}) {
    CAPTURE(arg.dump());
    json b = m;
    b["args"][0] = arg;
    b["verify"] = json::array({{{"buffer", "y"}, {"expected", {{"npy", "typed.npy"}}}, {"rtol", 0}, {"atol", 0}}});
    b["save"] = json::array({{{"buffer", "y"}, {"npy", "bytes.npy"}}});
    Result r = run_json(dir, b);
    INFO(r.err);
    REQUIRE(r.rc == 0);
    CHECK(npy_data(dir / "bytes.npy") == npy_data(dir / "typed.npy"));
    CHECK(npy_data(dir / "bytes.npy") != std::string(reinterpret_cast<const char*>(y.data()), n * 8));
  }
}

TEST_CASE("struct args: errors exit 2 naming the field") {
  struct Case {
    const char* what;
    std::function<void(json&)> edit;
    const char* message;
  };
  auto S = [](json& m) -> json& { return m["args"][0]["struct"]; };
  const std::vector<Case> cases = {
      {"wider than the kernel's argument", [&](json& m) { S(m).push_back({{"pad", 8}}); },
       "/args/0: args[0] 'p' is a struct of 48 bytes but the kernel's argument 0 is 40 bytes (wider)"},
      {"narrower than the kernel's argument", [&](json& m) { S(m)[3]["struct"].erase(1); },
       "/args/0: args[0] 'p' is a struct of 32 bytes but the kernel's argument 0 is 40 bytes (narrower)"},
      {"a misaligned explicit offset", [&](json& m) { S(m)[2]["offset"] = 18; },
       "/args/0/struct/2/offset: args[0] 'p'.struct[2] 'bias': offset 18 is not a multiple of the field's alignment 4"},
      {"an unknown field type", [&](json& m) { S(m)[2]["type"] = "f24"; },
       "/args/0/struct/2/type: args[0] 'p'.struct[2] 'bias': unknown field type \"f24\""},
      {"hex of the wrong length", [&](json& m) { m["args"][0] = {{"bytes", std::string(78, '0')}}; },
       "/args/0: args[0] is a bytes argument of 39 bytes but the kernel's argument 0 is 40 bytes (narrower)"},
      {"an odd number of hex digits", [&](json& m) { m["args"][0] = {{"bytes", std::string(79, '0')}}; },
       "/args/0/bytes: args[0]: 79 hex digits is not a whole number of bytes"},
      {"a bad hex digit", [&](json& m) { m["args"][0] = {{"bytes", std::string(40, '0') + "0x" + std::string(38, '0')}}; },
       "/args/0/bytes: args[0]: \"x\" at character 41 is not a hex digit"},
      {"two fields of one name", [&](json& m) { S(m)[1]["name"] = "x"; },
       "/args/0/struct/1/name: args[0] 'p'.struct[1]: the name 'x' is already struct[0]'s"},
      {"a missing bytes_file", [&](json& m) { m["args"][0] = {{"bytes_file", "missing.bin"}}; }, "/args/0/bytes_file"},
      {"structs nested too deep",
       [&](json& m) {
         json deep = {{"type", "u8"}, {"value", 1}};
         for (int i = 0; i < 20; ++i) deep = {{"struct", json::array({deep})}};
         S(m)[3] = deep;
       },
       "structs nest deeper than 16 levels"},
  };
  for (const auto& c : cases) {
    SUBCASE(c.what) {
      TempDir dir;
      json m = struct_manifest();
      c.edit(m);
      // A bytes argument passes no buffer: the check of y would be refused first.
      if (m["args"][0].contains("bytes") || m["args"][0].contains("bytes_file")) m["verify"] = {{"skip", "bytes"}};
      Result r = run_json(dir, m);
      INFO(r.err);
      CHECK(r.rc == 2);
      CHECK(r.err.find(c.message) != std::string::npos);
      CHECK(!fs::exists(dir / "out.json"));
    }
  }
}

TEST_CASE("struct args: a sequence's fence comes from a struct's pointer field") {
  TempDir dir;
  const fs::path seq = kSource / "manifests" / "struct_args_sequence.json";
  auto edges = [&](const fs::path& manifest) {
    Result r = run_lrrt(dir, {"plan", "--backend", "host", "--kernel-dir", kKernels.string(), "--format", "json",
                              manifest.string()});
    INFO(r.err);
    REQUIRE(r.rc == 0);
    return json::parse(r.out)["plans"][0]["plan"]["edges"];
  };
  // The only link between the steps is y, written through the struct's p.y.
  const json with_field = edges(seq);
  REQUIRE(with_field.size() == 1);
  CHECK(with_field[0]["from"] == 0);
  CHECK(with_field[0]["to"] == 1);
  CHECK(with_field[0]["hazards"] == json::array({"RAW"}));
  // Negative control: the same step with the field's access made a read
  // loses the edge, so the edge above came from the struct's field.
  json m = json::parse(read_text(seq));
  m["sequence"][0]["args"][0]["struct"][1]["access"] = "read";
  m["verify"] = json::array({{{"buffer", "z"}, {"expected", {{"reference", "sequence"}}}, {"allow_unwritten", true}}});
  m.erase("patch");
  write_text(dir / "readonly.json", m.dump());
  CHECK(edges(dir / "readonly.json").empty());
  // And the sequence runs and verifies eagerly, replayed and patched (p.bias).
  Result r = run_manifest(dir, seq);
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json run = json::parse(read_text(dir / "out.json"))["runs"][0];
  REQUIRE(run["ways"].size() == 3);
  for (const auto& w : run["ways"]) CHECK(w["verification"]["status"] == "passed");
  CHECK(run["sequence"]["patch"]["arg"] == "p.bias");
  CHECK(run["sequence"]["patch"]["offset"] == 16);
}

TEST_CASE("init: a struct argument by value becomes its size in zero bytes, and the manifest runs") {
  TempDir dir;
  Result r = run_lrrt(dir, {"init", (kKernels / "struct_args.host.so").string(), "-o", (dir / "m.json").string()});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const json m = json::parse(read_text(dir / "m.json"));
  CHECK(m["args"][0]["bytes"] == std::string(80, '0'));
  Result run = run_manifest(dir, dir / "m.json");
  INFO(run.err);
  CHECK(run.rc == 0);
  CHECK(json::parse(read_text(dir / "out.json"))["runs"][0]["kernargs"]["layout_checked"] == true);
}

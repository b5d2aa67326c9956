// Complex element types (c64, c128): scalars, fill / random / poison of
// both parts, .npy complex64/complex128 round trips, and verification of
// each part with the isclose tolerance.
#include <doctest/doctest.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "tool/bundle.hpp"
#include "tool/verify.hpp"

using nlohmann::json;
using namespace lrrt::tool;

namespace {

Manifest one_buffer(const std::string& type, const json& init, uint64_t count = 257) {
  json m = json::parse(R"({"lrrt_manifest": 1, "code_object": "k.so", "kernel": "k", "args": [],
                           "launch": {"workgroup_size": [1], "global_size": [1]}})");
  m["buffers"] = json::array({{{"name", "z"}, {"type", type}, {"count", count}, {"init", init}}});
  return parse_manifest(m, ".");
}

std::span<const std::byte> as_bytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

}  // namespace

TEST_CASE("complex: types, sizes, alignment, npy descr") {
  CHECK(parse_dtype("c64") == DType::c64);
  CHECK(dtype_size(DType::c64) == sizeof(std::complex<float>));
  CHECK(dtype_align(DType::c64) == alignof(std::complex<float>));
  CHECK(dtype_size(DType::c128) == sizeof(std::complex<double>));
  CHECK(dtype_align(DType::c128) == alignof(std::complex<double>));
  CHECK(dtype_npy_descr(DType::c64) == "<c8");
  CHECK(dtype_from_npy_descr("<c16") == DType::c128);
  CHECK(dtype_is_complex(DType::c64));
  CHECK(!dtype_is_complex(DType::f64));
}

TEST_CASE("complex: fill [re, im], random both parts, poison both parts") {
  Manifest f = one_buffer("c128", {{"fill", {1.25, -3.5}}});
  auto c = initial_contents(f).contents[0];
  std::complex<double> v[257];
  std::memcpy(v, c.data(), sizeof(v));
  for (const auto& e : v) CHECK(e == std::complex<double>(1.25, -3.5));

  Manifest r = one_buffer("c64", {{"random", {{"min", -2}, {"max", 2}}}});
  auto rc = initial_contents(r).contents[0];
  std::complex<float> w[257];
  std::memcpy(w, rc.data(), sizeof(w));
  bool imag_nonzero = false;
  for (const auto& e : w) {
    CHECK(e.real() >= -2);
    CHECK(e.real() < 2);
    CHECK(e.imag() >= -2);
    CHECK(e.imag() < 2);
    imag_nonzero |= e.imag() != 0;
  }
  CHECK(imag_nonzero);

  Manifest p = one_buffer("c64", "poison");
  auto pc = initial_contents(p).contents[0];
  std::memcpy(w, pc.data(), sizeof(w));
  for (const auto& e : w) CHECK((std::isnan(e.real()) && std::isnan(e.imag())));
}

TEST_CASE("complex: scalar arguments take [re, im], and a part out of range names it") {
  json m = json::parse(R"({"lrrt_manifest": 1, "code_object": "k.so", "kernel": "k",
    "args": [{"type": "c64", "value": [0.5, -1.25]}, {"type": "c128", "value": 2}],
    "launch": {"workgroup_size": [1], "global_size": [1]}})");
  Manifest p = parse_manifest(m, ".");
  std::complex<float> a;
  std::memcpy(&a, p.args[0].bytes.data(), sizeof(a));
  CHECK(a == std::complex<float>(0.5f, -1.25f));
  CHECK(p.args[0].size() == 8);
  CHECK(p.args[0].align() == 4);
  std::complex<double> b;
  std::memcpy(&b, p.args[1].bytes.data(), sizeof(b));
  CHECK(b == std::complex<double>(2, 0));
  CHECK(p.args[1].size() == 16);
  CHECK(p.args[1].align() == 8);
  m["args"][0]["value"] = {0, 1e39};
  CHECK_THROWS_WITH_AS(parse_manifest(m, "."), doctest::Contains("/args/0/value/1"), ManifestError);
  m["args"][0]["value"] = {1, 2, 3};
  CHECK_THROWS_WITH_AS(parse_manifest(m, "."), doctest::Contains("[real, imaginary]"), ManifestError);
}

TEST_CASE("complex: .npy complex64 and complex128 round trip") {
  std::random_device rd;
  std::mt19937_64 rng((uint64_t(rd()) << 32) ^ rd());
  std::uniform_real_distribution<double> u(-10, 10);
  std::vector<std::complex<double>> d(37);
  for (auto& e : d) e = {u(rng), u(rng)};
  std::string file = npy_bytes(DType::c128, {37}, reinterpret_cast<const std::byte*>(d.data()));
  CHECK(file.find("'descr': '<c16'") != std::string::npos);
  NpyArray a = parse_npy(as_bytes(file), "mem");
  CHECK(a.type == DType::c128);
  REQUIRE(a.data.size() == d.size() * 16);
  CHECK(std::memcmp(a.data.data(), d.data(), a.data.size()) == 0);
  std::vector<std::complex<float>> f(5);
  for (auto& e : f) e = {float(u(rng)), float(u(rng))};
  NpyArray b = parse_npy(as_bytes(npy_bytes(DType::c64, {5}, reinterpret_cast<const std::byte*>(f.data()))), "mem");
  CHECK(b.type == DType::c64);
  CHECK(std::memcmp(b.data.data(), f.data(), 40) == 0);
}

TEST_CASE("complex: verification checks both parts of every element") {
  std::random_device rd;
  std::mt19937_64 rng((uint64_t(rd()) << 32) ^ rd());
  std::uniform_real_distribution<double> u(-1, 1);
  const size_t n = 1000;
  std::vector<std::complex<double>> expected(n);
  for (auto& e : expected) e = {u(rng), u(rng)};
  auto compare = [&](const std::vector<std::complex<double>>& got) {
    return compare_allclose(DType::c128, reinterpret_cast<const std::byte*>(got.data()), DType::c128,
                            reinterpret_cast<const std::byte*>(expected.data()), n, 1e-9, 1e-12, false);
  };
  CHECK(compare(expected).passed());
  // One part of one element off: exactly that element fails, reported with both parts.
  for (int part = 0; part < 2; ++part) {
    auto got = expected;
    const size_t k = rng() % n;
    if (part == 0) got[k] = {got[k].real() + 1e-3, got[k].imag()};
    else got[k] = {got[k].real(), got[k].imag() - 1e-3};
    const CompareResult r = compare(got);
    CHECK(r.mismatches == 1);
    REQUIRE(r.first.size() == 1);
    CHECK(r.first[0].index == k);
    CHECK(r.first[0].complex);
    CHECK(r.first[0].got_imag == doctest::Approx(got[k].imag()));
    const json j = compare_result_json(r, {n});
    CHECK(j["first_mismatches"][0]["got"].size() == 2);
  }
  // Within tolerance on both parts passes; NaN needs equal_nan.
  auto near = expected;
  for (auto& e : near) e = {e.real() * (1 + 1e-12), e.imag() * (1 - 1e-12)};
  CHECK(compare(near).passed());
  auto nan = expected;
  nan[3] = {expected[3].real(), NAN};
  CHECK(compare(nan).mismatches == 1);
  // A c64 output against c128 expected values: compared by parts.
  std::vector<std::complex<float>> got32(n);
  for (size_t i = 0; i < n; ++i) got32[i] = {float(expected[i].real()), float(expected[i].imag())};
  CHECK(compare_allclose(DType::c64, reinterpret_cast<const std::byte*>(got32.data()), DType::c128,
                         reinterpret_cast<const std::byte*>(expected.data()), n, 1e-6, 1e-7, false)
            .passed());
}

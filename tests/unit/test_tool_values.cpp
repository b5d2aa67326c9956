// dtype conversions (f16/bf16 round-to-nearest-even), kernarg packing and
// layout checks, allclose semantics, fills.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "tool/bundle.hpp"
#include "tool/reference_ops.hpp"
#include "tool/verify.hpp"

using namespace lrrt::tool;
using nlohmann::json;

TEST_CASE("dtype: names, sizes, npy descrs") {
  CHECK(parse_dtype("bf16") == DType::bf16);
  CHECK_FALSE(parse_dtype("float").has_value());
  CHECK(dtype_size(DType::i64) == 8);
  CHECK(dtype_size(DType::f16) == 2);
  CHECK(dtype_npy_descr(DType::f32) == "<f4");
  CHECK(dtype_from_npy_descr("<i4") == DType::i32);
  CHECK(dtype_from_npy_descr("|u1") == DType::u8);
  CHECK(dtype_from_npy_descr("<u1") == DType::u8);
  CHECK_FALSE(dtype_from_npy_descr(">f4").has_value());
  // Complex numbers are c64 / c128; numpy's other complex and float sizes are not lrrt types.
  CHECK(dtype_from_npy_descr("<c8") == DType::c64);
  CHECK(dtype_from_npy_descr("<c16") == DType::c128);
  CHECK_FALSE(dtype_from_npy_descr("<c32").has_value());
  CHECK_FALSE(dtype_from_npy_descr(">c8").has_value());
  CHECK_FALSE(dtype_from_npy_descr("<f16").has_value());
}

TEST_CASE("f16: exact values, rounding to nearest even, subnormals, overflow, NaN") {
  CHECK(double_to_f16_bits(1.0) == 0x3C00);
  CHECK(double_to_f16_bits(-2.0) == 0xC000);
  CHECK(double_to_f16_bits(65504.0) == 0x7BFF);          // largest finite
  CHECK(double_to_f16_bits(65519.99) == 0x7BFF);         // rounds down to max
  CHECK(double_to_f16_bits(65520.0) == 0x7C00);          // halfway to 2^16: ties to even → inf
  CHECK(double_to_f16_bits(1e10) == 0x7C00);
  CHECK(double_to_f16_bits(-INFINITY) == 0xFC00);
  CHECK((double_to_f16_bits(NAN) & 0x7C00) == 0x7C00);
  CHECK((double_to_f16_bits(NAN) & 0x03FF) != 0);
  CHECK(double_to_f16_bits(0.0) == 0x0000);
  CHECK(double_to_f16_bits(-0.0) == 0x8000);
  CHECK(double_to_f16_bits(std::ldexp(1.0, -24)) == 0x0001);       // smallest subnormal
  CHECK(double_to_f16_bits(std::ldexp(1.0, -25)) == 0x0000);       // half of it: ties to even → 0
  CHECK(double_to_f16_bits(std::ldexp(1.5, -24)) == 0x0002);       // 1.5 quanta: ties to even → 2
  CHECK(double_to_f16_bits(std::ldexp(1.0, -14)) == 0x0400);       // smallest normal
  CHECK(double_to_f16_bits(std::ldexp(1023.5, -24)) == 0x0400);    // subnormal rounding up into the normals
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1.0).
  CHECK(double_to_f16_bits(1.0 + std::ldexp(1.0, -11)) == 0x3C00);
  // 1 + 3*2^-11 is halfway between 1+2^-10 (odd) and 1+2^-9 (even).
  CHECK(double_to_f16_bits(1.0 + 3 * std::ldexp(1.0, -11)) == 0x3C02);
  CHECK(double_to_f16_bits(1.0 + std::ldexp(1.0, -11) + 1e-9) == 0x3C01);  // above halfway
  CHECK(double_to_f16_bits(2047.0 / 1024 + std::ldexp(1.0, -11)) == 0x4000);  // carries into the exponent
  // Round trip of every finite pattern.
  for (uint32_t b = 0; b < 0x10000; ++b) {
    double d = f16_bits_to_double(static_cast<uint16_t>(b));
    if (std::isnan(d)) continue;
    CHECK_MESSAGE(double_to_f16_bits(d) == b, b);
  }
  CHECK(f16_bits_to_double(0x3555) == doctest::Approx(0.333251953125));
}

TEST_CASE("bf16: rounding and round trips") {
  CHECK(double_to_bf16_bits(1.0) == 0x3F80);
  CHECK(double_to_bf16_bits(-1.0) == 0xBF80);
  CHECK(double_to_bf16_bits(1.0 + std::ldexp(1.0, -8)) == 0x3F80);      // tie → even
  CHECK(double_to_bf16_bits(1.0 + 3 * std::ldexp(1.0, -8)) == 0x3F82);  // tie → even (up)
  CHECK(double_to_bf16_bits(3.0e38) == 0x7F62);
  CHECK(double_to_bf16_bits(3.4e38) == 0x7F80);  // above the largest finite bf16 (3.39e38) → inf
  CHECK(double_to_bf16_bits(std::ldexp(1.0, -133)) == 0x0001);  // smallest subnormal
  for (uint32_t b = 0; b < 0x10000; ++b) {
    double d = bf16_bits_to_double(static_cast<uint16_t>(b));
    if (std::isnan(d)) continue;
    CHECK_MESSAGE(double_to_bf16_bits(d) == b, b);
  }
  // Same answer as truncating float32 bits with RNE for ordinary values.
  float f = 3.14159f;
  uint32_t fb;
  std::memcpy(&fb, &f, 4);
  uint32_t rne = (fb + 0x7FFF + ((fb >> 16) & 1)) >> 16;
  CHECK(double_to_bf16_bits(f) == rne);
}

TEST_CASE("dtype: integer ranges and element access") {
  CHECK(integer_fits(DType::u8, 255));
  CHECK_FALSE(integer_fits(DType::u8, 256));
  CHECK_FALSE(integer_fits(DType::u32, -1));
  CHECK(integer_fits(DType::i64, static_cast<long double>(INT64_MIN)));
  CHECK(integer_fits(DType::u64, static_cast<long double>(UINT64_MAX)));
  CHECK_FALSE(integer_fits(DType::i32, 1.5));
  std::byte buf[16];
  store_element(DType::u64, buf, 0, static_cast<long double>(UINT64_MAX));
  CHECK(load_element(DType::u64, buf, 0) == static_cast<long double>(UINT64_MAX));
  store_element(DType::i16, buf, 3, -7);
  CHECK(load_element(DType::i16, buf, 3) == -7);
}

namespace {
ArgSpec scalar(DType t, long double v) {
  ArgSpec a;
  a.kind = ArgSpec::Kind::Scalar;
  a.type = t;
  a.value = v;
  store_element(t, a.bytes.data(), 0, v);
  return a;
}
ArgSpec buffer(size_t i) {
  ArgSpec a;
  a.kind = ArgSpec::Kind::Buffer;
  a.buffer = i;
  return a;
}
}  // namespace

TEST_CASE("kernargs: natural alignment") {
  // (f32 a, ptr x, ptr y, u32 n) → 0, 8, 16, 24; size 32 (like the C struct).
  std::vector<ArgSpec> args = {scalar(DType::f32, 2.5), buffer(0), buffer(1), scalar(DType::u32, 7)};
  KernargLayout L = layout_kernargs(args);
  REQUIRE(L.slots.size() == 4);
  CHECK(L.slots[0].offset == 0);
  CHECK(L.slots[1].offset == 8);
  CHECK(L.slots[2].offset == 16);
  CHECK(L.slots[3].offset == 24);
  CHECK(L.size == 32);
  CHECK(L.align == 8);
  // u8, u16, f16, i64, u8 → 0, 2, 4, 8, 16; size 24.
  std::vector<ArgSpec> mixed = {scalar(DType::u8, 1), scalar(DType::u16, 2), scalar(DType::f16, 1.5), scalar(DType::i64, -1),
                                scalar(DType::u8, 3)};
  KernargLayout M = layout_kernargs(mixed);
  CHECK(M.slots[1].offset == 2);
  CHECK(M.slots[2].offset == 4);
  CHECK(M.slots[3].offset == 8);
  CHECK(M.slots[4].offset == 16);
  CHECK(M.size == 24);

  auto bytes = pack_kernargs(args, L, {0x1000, 0x2000});
  REQUIRE(bytes.size() == 32);
  float a;
  uint64_t x, y;
  uint32_t n;
  std::memcpy(&a, bytes.data(), 4);
  std::memcpy(&x, bytes.data() + 8, 8);
  std::memcpy(&y, bytes.data() + 16, 8);
  std::memcpy(&n, bytes.data() + 24, 4);
  CHECK(a == 2.5f);
  CHECK(x == 0x1000);
  CHECK(y == 0x2000);
  CHECK(n == 7);
  auto m_bytes = pack_kernargs(mixed, M, {});
  uint16_t h;
  std::memcpy(&h, m_bytes.data() + 4, 2);
  CHECK(h == 0x3E00);  // 1.5 in f16
  CHECK(pack_kernargs(args, L, {1, 2}, 48).size() == 48);
}

TEST_CASE("kernargs: explicit offsets, misalignment, overlap") {
  std::vector<ArgSpec> args = {scalar(DType::u32, 1), scalar(DType::u32, 2)};
  args[1].offset = 12;
  KernargLayout L = layout_kernargs(args);
  CHECK(L.slots[1].offset == 12);
  CHECK(L.size == 16);
  args[1].offset = 6;
  args[1].pointer = "/args/1";
  try {
    layout_kernargs(args);
    FAIL("expected an error");
  } catch (const ManifestError& e) {
    CHECK(e.pointer() == "/args/1/offset");
  }
  args[1].offset = 0;
  CHECK_THROWS_WITH_AS(layout_kernargs(args), doctest::Contains("overlap"), ManifestError);
}

TEST_CASE("kernargs: checked against the kernel's layout") {
  std::vector<ArgSpec> args = {scalar(DType::f32, 2.5), buffer(0), buffer(1), scalar(DType::u32, 7)};
  for (size_t i = 0; i < args.size(); ++i) args[i].pointer = "/args/" + std::to_string(i);
  std::vector<KernelArg> k = {{0, 4, false, "a"}, {8, 8, true, "x"}, {16, 8, true, "y"}, {24, 4, false, "n"}};
  CHECK_NOTHROW(check_kernargs(args, layout_kernargs(args), k, "saxpy"));
  auto err = [&](std::vector<ArgSpec> a) -> std::pair<std::string, std::string> {
    try {
      check_kernargs(a, layout_kernargs(a), k, "saxpy");
    } catch (const ManifestError& e) {
      return {e.pointer(), e.what()};
    }
    return {"", ""};
  };
  auto few = args;
  few.pop_back();
  auto [p1, m1] = err(few);
  CHECK(p1 == "/args");
  CHECK(m1.find("too few") != std::string::npos);
  CHECK(m1.find("(3) n: offset 24, 4 bytes, value") != std::string::npos);
  auto many = args;
  many.push_back(scalar(DType::u32, 1));
  CHECK(err(many).second.find("too many") != std::string::npos);
  auto kind = args;
  kind[0] = buffer(0);
  kind[0].pointer = "/args/0";
  CHECK(err(kind).first == "/args/0");
  auto size = args;
  size[3] = scalar(DType::u64, 7);
  size[3].pointer = "/args/3";
  CHECK(err(size).first == "/args/3");
  auto off = args;
  off[3].offset = 28;
  CHECK(err(off).second.find("offset 28") != std::string::npos);
}

TEST_CASE("verify: numpy allclose semantics") {
  CHECK(isclose(1.0, 1.0, 0, 0, false));
  CHECK(isclose(1.0 + 1e-6, 1.0, 1e-5, 0, false));
  CHECK_FALSE(isclose(1.0 + 1e-4, 1.0, 1e-5, 1e-8, false));
  CHECK(isclose(1e-9, 0.0, 1e-5, 1e-8, false));  // atol matters near zero
  CHECK_FALSE(isclose(1e-7, 0.0, 1e-5, 1e-8, false));
  // Tolerance is relative to the expected value (asymmetric, like numpy).
  CHECK(isclose(110, 100, 0.1, 0, false));
  CHECK_FALSE(isclose(100, 110, 0.09, 0, false));
  CHECK_FALSE(isclose(NAN, NAN, 1, 1, false));
  CHECK(isclose(NAN, NAN, 0, 0, true));
  CHECK_FALSE(isclose(NAN, 1.0, 1, 1, true));
  CHECK(isclose(INFINITY, INFINITY, 0, 0, false));
  CHECK_FALSE(isclose(INFINITY, -INFINITY, 1, 1, false));
  CHECK_FALSE(isclose(1e308, INFINITY, 1, 1, false));
}

TEST_CASE("verify: mismatch report with count, first indices, max errors") {
  std::vector<float> got = {1, 2, 3, NAN, 5, 6};
  std::vector<double> exp = {1, 2.5, 3, 4, 5, 0};
  auto r = compare_allclose(DType::f32, reinterpret_cast<std::byte*>(got.data()), DType::f64,
                            reinterpret_cast<std::byte*>(exp.data()), 6, 1e-5, 1e-8, false, 2);
  CHECK_FALSE(r.passed());
  CHECK(r.compared == 6);
  CHECK(r.mismatches == 3);
  REQUIRE(r.first.size() == 2);
  CHECK(r.first[0].index == 1);
  CHECK(r.first[1].index == 3);
  CHECK(r.max_abs_error == 6);
  CHECK(static_cast<double>(r.max_rel_error) == doctest::Approx(0.2));
  json j = compare_result_json(r, {2, 3});
  CHECK(j["mismatches"] == 3);
  CHECK(j["first_mismatches"][1]["got"] == "nan");
  CHECK(j["first_mismatches"][1]["coords"] == json::array({1, 0}));
  // Integers compare exactly even beyond 2^53.
  std::vector<int64_t> a = {(int64_t(1) << 60) + 1}, b = {int64_t(1) << 60};
  CHECK(compare_allclose(DType::i64, reinterpret_cast<std::byte*>(a.data()), DType::i64, reinterpret_cast<std::byte*>(b.data()),
                         1, 0, 0, false)
            .mismatches == 1);
}

TEST_CASE("fill: zeros, fill, iota, seeded random, poison") {
  BufferSpec b;
  b.name = "b";
  b.type = DType::f32;
  b.count = 1000;
  b.bytes = 4000;
  std::vector<float> v(1000);
  auto* out = reinterpret_cast<std::byte*>(v.data());
  b.init.kind = BufferInit::Kind::Iota;
  b.init.start = 5;
  b.init.step = 0.5;
  fill_buffer(b, out);
  CHECK(v[0] == 5);
  CHECK(v[10] == 10);
  b.init.kind = BufferInit::Kind::Fill;
  b.init.fill = -3;
  fill_buffer(b, out);
  CHECK(v[999] == -3);
  b.init.kind = BufferInit::Kind::Poison;
  fill_buffer(b, out);
  CHECK(std::isnan(v[500]));
  b.init.kind = BufferInit::Kind::Random;
  b.init.min = -2;
  b.init.max = 2;
  b.init.seed = 42;
  CHECK(fill_buffer(b, out) == 42u);
  std::vector<float> again(1000);
  fill_buffer(b, reinterpret_cast<std::byte*>(again.data()));
  CHECK(v == again);  // same seed, same values
  std::set<float> distinct(v.begin(), v.end());
  CHECK(distinct.size() > 900);
  for (float f : v) CHECK((f >= -2 && f <= 2));
  b.init.seed.reset();
  auto s1 = fill_buffer(b, out);
  auto s2 = fill_buffer(b, reinterpret_cast<std::byte*>(again.data()));
  CHECK(s1 != s2);  // fresh seeds
  CHECK(v != again);

  BufferSpec i;
  i.type = DType::i8;
  i.count = 4096;
  i.bytes = 4096;
  i.init.kind = BufferInit::Kind::Random;
  i.init.min = -3;
  i.init.max = 3;
  i.init.seed = 1;
  std::vector<int8_t> iv(4096);
  fill_buffer(i, reinterpret_cast<std::byte*>(iv.data()));
  std::set<int> seen(iv.begin(), iv.end());
  CHECK(seen.size() == 7);  // every value of the inclusive range
  CHECK(*seen.begin() == -3);
  CHECK(*seen.rbegin() == 3);
  i.init.kind = BufferInit::Kind::Poison;
  fill_buffer(i, reinterpret_cast<std::byte*>(iv.data()));
  CHECK(static_cast<uint8_t>(iv[7]) == 0xAB);
}

TEST_CASE("reference ops: saxpy and reduce from initial data, signature mismatches name the field") {
  json j = json::parse(R"({
    "lrrt_manifest": 1, "code_object": "k.so", "kernel": "saxpy",
    "buffers": [{"name": "x", "type": "f32", "count": 4}, {"name": "y", "type": "f32", "count": 4}],
    "args": [{"type": "f32", "value": 2}, {"buffer": "x"}, {"buffer": "y"}, {"type": "u32", "value": 3}],
    "launch": {"workgroup_size": [2], "global_size": [4]}
  })");
  Manifest m = parse_manifest(j, ".");
  std::vector<float> x = {1, 2, 3, 4}, y = {10, 20, 30, 40};
  std::vector<std::vector<std::byte>> initial(2);
  initial[0].assign(reinterpret_cast<std::byte*>(x.data()), reinterpret_cast<std::byte*>(x.data()) + 16);
  initial[1].assign(reinterpret_cast<std::byte*>(y.data()), reinterpret_cast<std::byte*>(y.data()) + 16);
  ReferenceInputs in{&m, &initial, {2, 1, 1}, {2, 1, 1}};
  auto out = compute_reference("saxpy", in, 1, "/verify/0");
  std::vector<float> r(4);
  std::memcpy(r.data(), out.values.data(), 16);
  CHECK(r == std::vector<float>{12, 24, 36, 40});  // element 3 is past n: keeps its initial value
  // ... and says so; x has no init, so what is computed from it came from poison.
  CHECK(out.origin == std::vector<Origin>{Origin::FromPoison, Origin::FromPoison, Origin::FromPoison, Origin::Untouched});
  CHECK_THROWS_WITH_AS(compute_reference("saxpy", in, 0, "/verify/0"), doctest::Contains("can only check buffer \"y\""), ManifestError);
  CHECK_THROWS_WITH_AS(compute_reference("vector_add_f32", in, 1, "/verify/0"), doctest::Contains("/verify/0/expected/reference"),
                       ManifestError);

  json rj = json::parse(R"({
    "lrrt_manifest": 1, "code_object": "k.so", "kernel": "reduce_sum_f32",
    "buffers": [{"name": "in", "type": "f32", "count": 5}, {"name": "p", "type": "f32", "count": 3}],
    "args": [{"buffer": "in"}, {"buffer": "p"}, {"type": "u32", "value": 5}],
    "launch": {"workgroup_size": [2], "global_size": [5]}
  })");
  Manifest rm = parse_manifest(rj, ".");
  std::vector<float> src = {1, 2, 3, 4, 5}, p = {0, 0, 0};
  std::vector<std::vector<std::byte>> rin(2);
  rin[0].assign(reinterpret_cast<std::byte*>(src.data()), reinterpret_cast<std::byte*>(src.data()) + 20);
  rin[1].assign(reinterpret_cast<std::byte*>(p.data()), reinterpret_cast<std::byte*>(p.data()) + 12);
  ReferenceInputs ri{&rm, &rin, {3, 1, 1}, {2, 1, 1}};
  auto ro = compute_reference("reduce_sum_f32", ri, 1, "/verify/0");
  std::memcpy(p.data(), ro.values.data(), 12);
  CHECK(p == std::vector<float>{3, 7, 5});
}

// Struct and bytes arguments: C layout (against offsetof of real C structs,
// and a layout computed independently for random field combinations),
// pointer fields as buffer uses, patch by dotted name, raw bytes, and the
// errors that name the field.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "lrrt/bundle.hpp"
#include "lrrt/formats/nvidia.hpp"

using nlohmann::json;
using namespace lrrt::bundle;
namespace fs = std::filesystem;

namespace {

json with_args(const json& args) {
  json m = json::parse(R"({
    "lrrt_manifest": 1, "code_object": "k.so", "kernel": "k",
    "buffers": [{"name": "x", "type": "f32", "count": 64, "init": "zeros"},
                {"name": "y", "type": "f32", "count": 64, "init": "zeros"}],
    "launch": {"workgroup_size": [32], "global_size": [64]}
  })");
  m["args"] = args;
  return m;
}

Manifest parse_in(const json& j, const fs::path& dir = ".") { return parse_manifest(j, dir); }

std::string error_of(const json& j, const fs::path& dir = ".") {
  try {
    parse_in(j, dir);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

template <typename T>
T at(const ArgSpec& a, size_t offset) {
  T v;
  std::memcpy(&v, a.blob.data() + offset, sizeof(T));
  return v;
}

// The C structs the fixed cases mirror.
struct Inner {
  double scale;
  uint32_t n;
};
struct Outer {
  const float* x;
  float* y;
  float bias;
  Inner inner;
  int8_t tag;
};
#pragma pack(push, 2)
struct Packed {
  int8_t a;
  double b;
  int16_t c;
};
#pragma pack(pop)
struct alignas(32) Over {
  int32_t a;
};
struct WithComplex {
  int8_t a;
  float c64[2];
  int8_t b;
  double c128[2];
};

}  // namespace

TEST_CASE("struct args: a nested struct is laid out like the C struct (offsetof, sizeof, alignof)") {
  Manifest m = parse_in(with_args(json::parse(R"([{"name": "p", "struct": [
      {"name": "x", "buffer": "x"}, {"name": "y", "buffer": "y"},
      {"name": "bias", "type": "f32", "value": 0.75},
      {"name": "inner", "struct": [{"name": "scale", "type": "f64", "value": -1.5}, {"name": "n", "type": "u32", "value": 64}]},
      {"name": "tag", "type": "i8", "value": -3}]}])")));
  const ArgSpec& a = m.args.at(0);
  REQUIRE(a.kind == ArgSpec::Kind::Bytes);
  CHECK(a.is_struct);
  CHECK(a.size() == sizeof(Outer));
  CHECK(a.align() == alignof(Outer));
  REQUIRE(a.pointer_fields.size() == 2);
  CHECK(a.pointer_fields[0].offset == offsetof(Outer, x));
  CHECK(a.pointer_fields[1].offset == offsetof(Outer, y));
  CHECK(a.pointer_fields[1].path == "p.y");
  CHECK(at<float>(a, offsetof(Outer, bias)) == 0.75f);
  CHECK(at<double>(a, offsetof(Outer, inner) + offsetof(Inner, scale)) == -1.5);
  CHECK(at<uint32_t>(a, offsetof(Outer, inner) + offsetof(Inner, n)) == 64);
  CHECK(at<int8_t>(a, offsetof(Outer, tag)) == -3);
  // Named scalars are patchable by their dotted names.
  std::vector<std::string> paths;
  for (const auto& f : a.scalar_fields) paths.push_back(f.path);
  CHECK(paths == std::vector<std::string>{"p.bias", "p.inner.scale", "p.inner.n", "p.tag"});
  // Pointer fields are buffer uses, as buffer arguments are.
  const auto uses = buffer_uses(m.args);
  REQUIRE(uses.size() == 2);
  CHECK(uses[1].buffer == 1);
  CHECK(uses[1].field);
  // Packing writes each buffer's address at its field.
  const KernargLayout L = layout_kernargs(m.args);
  CHECK(L.size == sizeof(Outer));
  const auto bytes = pack_kernargs(m.args, L, {0x1000, 0x2000});
  Outer o;
  std::memcpy(&o, bytes.data(), sizeof(o));
  CHECK(reinterpret_cast<uintptr_t>(o.x) == 0x1000);
  CHECK(reinterpret_cast<uintptr_t>(o.y) == 0x2000);
  CHECK(o.bias == 0.75f);
  CHECK(o.inner.n == 64);
}

TEST_CASE("struct args: packed, over-aligned, complex fields, explicit offsets, size") {
  Manifest m = parse_in(with_args(json::parse(R"([
      {"struct": [{"type": "i8", "value": 1}, {"type": "f64", "value": 2}, {"type": "i16", "value": 3}], "align": 2},
      {"struct": [{"type": "i32", "value": 4}], "align": 32},
      {"struct": [{"type": "i8", "value": 1}, {"type": "c64", "value": [1.5, -2]}, {"type": "i8", "value": 2},
                  {"type": "c128", "value": [3, 4]}]},
      {"struct": [{"type": "u8", "value": 9, "offset": 4}, {"pad": 3}, {"type": "u32", "value": 7, "offset": 12}], "size": 24}])")));
  CHECK(m.args[0].size() == sizeof(Packed));
  CHECK(m.args[0].align() == alignof(Packed));
  CHECK(at<double>(m.args[0], offsetof(Packed, b)) == 2);
  CHECK(at<int16_t>(m.args[0], offsetof(Packed, c)) == 3);
  CHECK(m.args[1].size() == sizeof(Over));
  CHECK(m.args[1].align() == alignof(Over));
  CHECK(m.args[2].size() == sizeof(WithComplex));
  CHECK(m.args[2].align() == alignof(WithComplex));
  CHECK(at<float>(m.args[2], offsetof(WithComplex, c64) + 4) == -2.0f);
  CHECK(at<double>(m.args[2], offsetof(WithComplex, c128)) == 3.0);
  CHECK(m.args[3].size() == 24);
  CHECK(m.args[3].align() == 4);
  CHECK(at<uint8_t>(m.args[3], 4) == 9);
  CHECK(at<uint32_t>(m.args[3], 12) == 7);
  // The kernarg segment places each struct at its own alignment.
  const KernargLayout L = layout_kernargs(m.args);
  CHECK(L.slots[1].offset % 32 == 0);
  CHECK(L.slots[2].offset % 8 == 0);
}

TEST_CASE("struct args: random field combinations match an independently computed C layout") {
  std::random_device rd;
  const uint64_t seed = (uint64_t(rd()) << 32) ^ rd();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  struct Kind {
    const char* type;
    size_t size, align;
  };
  const Kind kinds[] = {{"i8", 1, 1},  {"u16", 2, 2}, {"i32", 4, 4},  {"u64", 8, 8}, {"f16", 2, 2},
                        {"f32", 4, 4}, {"f64", 8, 8}, {"c64", 8, 4}, {"c128", 16, 8}, {nullptr, 8, 8}};
  for (int round = 0; round < 200; ++round) {
    // Expected layout: a plain reading of the C rules, kept apart from the parser.
    json fields = json::array();
    std::vector<std::pair<size_t, uint64_t>> expect;  // offset, integer marker written there
    size_t cursor = 0, align = 1;
    const int nfields = 1 + static_cast<int>(rng() % 8);
    std::vector<bool> is_pointer;
    for (int k = 0; k < nfields; ++k) {
      const Kind& kd = kinds[rng() % std::size(kinds)];
      const size_t off = (cursor + kd.align - 1) / kd.align * kd.align;
      if (!kd.type) {
        fields.push_back({{"buffer", "x"}});
        is_pointer.push_back(true);
      } else {
        const uint64_t marker = 1 + rng() % 100;
        if (std::string(kd.type)[0] == 'c') fields.push_back({{"type", kd.type}, {"value", {double(marker), 0}}});
        else fields.push_back({{"type", kd.type}, {"value", marker}});
        expect.emplace_back(off, marker);
        is_pointer.push_back(false);
      }
      fields.back()["offset_expected"] = off;  // removed below; kept for the message
      cursor = off + kd.size;
      align = std::max(align, kd.align);
      if (rng() % 4 == 0) {
        const size_t pad = 1 + rng() % 7;
        fields.push_back({{"pad", pad}});
        cursor += pad;
        is_pointer.push_back(false);
      }
    }
    const size_t size = (cursor + align - 1) / align * align;
    json clean = fields;
    std::vector<size_t> field_offsets;
    for (auto& f : clean) {
      if (f.contains("offset_expected")) field_offsets.push_back(f["offset_expected"]);
      f.erase("offset_expected");
    }
    INFO(clean.dump());
    Manifest m = parse_in(with_args(json::array({{{"struct", clean}}})));
    const ArgSpec& a = m.args[0];
    CHECK(a.size() == size);
    CHECK(a.align() == align);
    size_t pi = 0;
    for (size_t k = 0, fo = 0; k < clean.size(); ++k) {
      if (clean[k].contains("pad")) continue;
      if (clean[k].contains("buffer")) CHECK(a.pointer_fields.at(pi++).offset == field_offsets[fo]);
      ++fo;
    }
    // The parser's bytes hold each scalar at the expected offset.
    size_t e = 0;
    for (size_t k = 0, fo = 0; k < clean.size(); ++k) {
      if (clean[k].contains("pad")) continue;
      const size_t off = field_offsets[fo++];
      if (clean[k].contains("buffer")) continue;
      const DType t = *parse_dtype(clean[k]["type"].get<std::string>());
      CHECK(load_element(dtype_part(t), a.blob.data() + off, 0) == static_cast<long double>(expect[e++].second));
    }
  }
}

TEST_CASE("struct args: a struct's size is checked against the kernel's by-value argument") {
  Manifest m = parse_in(with_args(json::parse(R"([{"name": "p", "struct": [{"buffer": "x"}, {"type": "f32", "value": 1}]}])")));
  const KernargLayout L = layout_kernargs(m.args);
  CHECK_NOTHROW(check_kernargs(m.args, L, {KernelArg{0, 16, false, "p"}}, "k"));
  for (uint32_t kernel_size : {8u, 24u}) {
    try {
      check_kernargs(m.args, L, {KernelArg{0, kernel_size, false, "p"}}, "k");
      FAIL("no error for a kernel argument of " << kernel_size);
    } catch (const ManifestError& e) {
      CHECK(e.pointer() == "/args/0");
      CHECK(std::string(e.what()).find("args[0] 'p' is a struct of 16 bytes") != std::string::npos);
      CHECK(std::string(e.what()).find(kernel_size < 16 ? "wider" : "narrower") != std::string::npos);
    }
  }
}

TEST_CASE("struct args: errors name the field") {
  auto err = [](const char* args) { return error_of(with_args(json::parse(args))); };
  CHECK(err(R"([{"struct": [{"type": "u8", "value": 1}, {"name": "bias", "type": "f32", "value": 1, "offset": 6}]}])")
            .find("/args/0/struct/1/offset: args[0].struct[1] 'bias': offset 6 is not a multiple of the field's alignment 4") !=
        std::string::npos);
  CHECK(err(R"([{"struct": [{"name": "q", "type": "f33", "value": 1}]}])").find("args[0].struct[0] 'q': unknown field type") !=
        std::string::npos);
  CHECK(err(R"([{"struct": [{"type": "u32", "value": 1}], "size": 2}])").find("size 2 is smaller") != std::string::npos);
  CHECK(err(R"([{"struct": [{"type": "u32", "value": 1}], "align": 3}])").find("not a power of two") != std::string::npos);
  CHECK(err(R"([{"struct": [{"type": "u32", "value": 1, "buffer": "x"}]}])").find("exactly one of") != std::string::npos);
  CHECK(err(R"([{"struct": []}])").find("non-empty array") != std::string::npos);
  // Two fields of one name: "p.x" would be ambiguous. The same name in
  // sibling structs is fine.
  CHECK(err(R"([{"name": "p", "struct": [{"name": "x", "type": "u32", "value": 1}, {"name": "x", "type": "f32", "value": 2}]}])")
            .find("/args/0/struct/1/name: args[0] 'p'.struct[1]: the name 'x' is already struct[0]'s") != std::string::npos);
  CHECK(err(R"([{"struct": [{"name": "a", "struct": [{"name": "x", "type": "u32", "value": 1}]},
                            {"name": "b", "struct": [{"name": "x", "type": "u32", "value": 1}]}]}])") == "");
  CHECK(err(R"([{"struct": [{"buffer": "x", "access": "read"}]}])").find("only sequence steps") != std::string::npos);
  // Nesting deeper than the limit is an error, not a deep recursion.
  json deep = {{"type", "u8"}, {"value", 1}};
  for (int i = 0; i < 40; ++i) deep = {{"struct", json::array({deep})}};
  const std::string e = error_of(with_args(json::array({deep})));
  CHECK(e.find("structs nest deeper than 16 levels") != std::string::npos);
  json ok = {{"type", "u8"}, {"value", 1}};
  for (int i = 0; i < 16; ++i) ok = {{"struct", json::array({ok})}};
  CHECK(error_of(with_args(json::array({ok}))) == "");
}

TEST_CASE("bytes args: hex and a file, alignment, and their errors") {
  Manifest m = parse_in(with_args(json::parse(R"([{"bytes": "00ff10Ab"}, {"bytes": "0102030405060708090a0b0c"}, {"bytes": "01", "align": 8}])")));
  CHECK(m.args[0].blob == std::vector<std::byte>{std::byte{0}, std::byte{0xff}, std::byte{0x10}, std::byte{0xab}});
  CHECK(m.args[0].align() == 4);
  CHECK(m.args[1].align() == 4);
  CHECK(m.args[2].align() == 8);
  CHECK(!m.args[0].is_struct);
  auto err = [](const char* args) { return error_of(with_args(json::parse(args))); };
  CHECK(err(R"([{"bytes": "abc"}])").find("3 hex digits is not a whole number of bytes") != std::string::npos);
  CHECK(err(R"([{"bytes": "0g"}])").find("\"g\" at character 1 is not a hex digit") != std::string::npos);
  CHECK(err(R"([{"bytes": "00", "size": 2}])").find("has 1 bytes, \"size\" says 2") != std::string::npos);
  // bytes_file: relative to the manifest's folder; a missing one names the field.
  const fs::path dir = fs::temp_directory_path() / ("lrrt-bytes-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "arg.bin", std::ios::binary).write("\x01\x02\x03\x04\x05\x06\x07\x08", 8);
  Manifest f = parse_in(with_args(json::parse(R"([{"bytes_file": "arg.bin"}])")), dir);
  CHECK(f.args[0].blob.size() == 8);
  CHECK(f.args[0].blob[7] == std::byte{8});
  const std::string missing = error_of(with_args(json::parse(R"([{"bytes_file": "nope.bin"}])")), dir);
  CHECK(missing.find("/args/0/bytes_file") != std::string::npos);
  CHECK(missing.find("nope.bin") != std::string::npos);
  fs::remove_all(dir);
  // A bytes argument of the wrong length for the kernel.
  Manifest w = parse_in(with_args(json::parse(R"([{"bytes": "000102"}])")));
  CHECK_THROWS_WITH_AS(check_kernargs(w.args, layout_kernargs(w.args), {KernelArg{0, 4, false, "b"}}, "k"),
                       doctest::Contains("is a bytes argument of 3 bytes but the kernel's argument 0 is 4 bytes"), ManifestError);
}

TEST_CASE("struct args: a sequence patches a struct's scalar by dotted name") {
  json j = json::parse(R"({
    "lrrt_manifest": 1,
    "kernels": {"k": {"code_object": "k.so"}},
    "buffers": [{"name": "x", "type": "f32", "count": 64, "init": "zeros"}, {"name": "y", "type": "f32", "count": 64}],
    "sequence": [{"name": "s", "kernel": "k",
      "args": [{"name": "p", "struct": [{"name": "x", "buffer": "x", "access": "read"}, {"name": "y", "buffer": "y", "access": "write"},
               {"name": "in", "struct": [{"type": "u8", "value": 1}, {"name": "bias", "type": "f32", "value": 1}]}]}],
      "launch": {"workgroup_size": [32], "global_size": [64]}}],
    "patch": {"step": "s", "arg": "p.in.bias", "values": [2.5, -1]},
    "verify": [{"buffer": "y", "expected": {"reference": "sequence"}}]
  })");
  Manifest m = parse_in(j);
  const SequencePatch& p = *m.sequence->patch;
  CHECK(p.field == "p.in.bias");
  CHECK(p.field_offset == 20);
  CHECK(p.type == DType::f32);
  ArgSpec a = m.sequence->steps[0].args[0];
  p.apply(a, 0);
  CHECK(at<float>(a, 20) == 2.5f);
  const auto uses = buffer_uses(m.sequence->steps[0].args);
  REQUIRE(uses.size() == 2);
  CHECK(uses[1].access == Access::Write);
  j["patch"]["arg"] = "p.in.nope";
  CHECK(error_of(j).find("has no named scalar field \"p.in.nope\"") != std::string::npos);
  j["patch"]["arg"] = "p";
  CHECK(error_of(j).find("is a struct or bytes; only scalars can be patched") != std::string::npos);
}

TEST_CASE("struct args: a PTX `.param .align A .b8 name[N]` alignment is compared with the struct's") {
  // A kernel taking (struct{...} aligned to 8, 16 bytes), then an
  // unaligned 16-byte aggregate, as nvcc writes them.
  const std::string ptx = R"(.version 8.4
.target sm_90
.address_size 64
.visible .entry k(
	.param .align 8 .b8 k_param_0[16],
	.param .b8 k_param_1[16]
)
{
	ret;
}
)";
  const auto info = lrrt::formats::nvidia::parse_ptx(ptx);
  REQUIRE(info.kernels.size() == 1);
  std::vector<KernelArg> declared;
  for (const auto& p : info.kernels[0].params)
    declared.push_back({p.offset, p.size, false, p.name, false, lrrt::formats::nvidia::ptx_param_type_name(p)});
  REQUIRE(declared.size() == 2);
  CHECK(declared[0].type_name == ".align 8 .b8[16]");
  CHECK(declared[1].type_name == ".b8[16]");  // no written alignment: nothing to compare
  CHECK(declared_alignment(declared[0].type_name) == 8);
  CHECK(declared_alignment(declared[1].type_name) == 0);
  CHECK(declared_alignment(".align x .b8[4]") == 0);
  CHECK(declared_alignment(".align 99999999999 .b8[4]") == 0);

  auto check = [&](const char* first, const char* second) {
    Manifest m = parse_in(with_args(json::array({json::parse(first), json::parse(second)})));
    m.args = at_kernel_offsets(m.args, declared);
    check_kernargs(m.args, layout_kernargs(m.args), declared, "k");
  };
  const char* four_i32 = R"({"name": "s", "struct": [{"type": "i32", "value": 1}, {"type": "i32", "value": 2},
                                                     {"type": "i32", "value": 3}, {"type": "i32", "value": 4}]})";
  const char* other = R"({"name": "t", "struct": [{"type": "u8", "value": 1, "offset": 15}]})";
  // Natural alignment 4 against `.align 8`: refused, naming the argument and both numbers.
  try {
    check(four_i32, other);
    FAIL("a 4-aligned struct accepted for `.align 8`");
  } catch (const ManifestError& e) {
    CHECK(e.pointer() == "/args/0");
    const std::string what = e.what();
    CHECK(what.find("args[0] 's' is a struct aligned to 4 bytes") != std::string::npos);
    CHECK(what.find("declared aligned to 8 (`.align 8 .b8[16]`)") != std::string::npos);
  }
  // Explicit "align": 8, or a field that makes it 8 naturally: accepted.
  json aligned = json::parse(four_i32);
  aligned["align"] = 8;
  CHECK_NOTHROW(check(aligned.dump().c_str(), other));
  CHECK_NOTHROW(check(R"({"name": "s", "struct": [{"type": "f64", "value": 1}, {"type": "i32", "value": 2}]})", other));
  // Wider than declared (16): refused too.
  aligned["align"] = 16;
  CHECK_THROWS_WITH_AS(check(aligned.dump().c_str(), other), doctest::Contains("aligned to 16 bytes"), ManifestError);
  // The unaligned aggregate takes any struct of its size (nothing written to compare with).
  CHECK_NOTHROW(check(R"({"name": "s", "struct": [{"type": "f64", "value": 1}, {"type": "i32", "value": 2}]})",
                      R"({"name": "t", "struct": [{"type": "i64", "value": 1}, {"type": "i64", "value": 2}]})"));
}

// lrrt_formats' AMDGPU readers on the code objects clang-19 builds
// (build/kernels/*.hsaco, *.bundle.hsaco): metadata (v4/v5/v6), target IDs,
// kernarg layout facts, offload bundles and entry selection; malformed and
// lying inputs. Metadata against llvm-readelf: tests/hsa/compare_readelf.py.
#include <doctest/doctest.h>

#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>

#include "formats_test_util.hpp"
#include "lrrt/formats/amdgpu.hpp"
#include "lrrt/formats/container.hpp"
#include "lrrt/formats/format.hpp"
#include "lrrt/formats/inspect.hpp"
#include "lrrt/formats/offload_bundle.hpp"

using namespace lrrt::formats;
using namespace lrrt::formats::amdgpu;
using namespace formats_test;

namespace {

const KernelArgInfo* arg(const KernelInfo& k, std::string_view vk) {
  for (const auto& a : k.args)
    if (a.value_kind == vk) return &a;
  return nullptr;
}

std::string error_of_bundle(const std::vector<std::byte>& b) {
  return error_of([&] { parse_offload_bundle(b); });
}

// A bundle header with `count` entries of (offset, size, id).
std::vector<std::byte> bundle(const std::vector<std::tuple<uint64_t, uint64_t, std::string>>& entries,
                              uint64_t count) {
  std::vector<std::byte> b = bytes_of("__CLANG_OFFLOAD_BUNDLE__");
  append<uint64_t>(b, count);
  for (const auto& [offset, size, id] : entries) {
    append<uint64_t>(b, offset);
    append<uint64_t>(b, size);
    append<uint64_t>(b, id.size());
    auto i = bytes_of(id);
    b.insert(b.end(), i.begin(), i.end());
  }
  return b;
}

// Just enough of a msgpack writer for metadata notes.
struct Msgpack {
  std::string bytes;
  Msgpack& map(uint8_t n) { bytes += char(0x80 | n); return *this; }
  Msgpack& array(uint8_t n) { bytes += char(0x90 | n); return *this; }
  Msgpack& str(std::string_view s) { bytes += char(0xa0 | s.size()); bytes += s; return *this; }
  Msgpack& uint(uint32_t v) {
    bytes += char(0xce);
    for (int i = 3; i >= 0; --i) bytes += char(v >> (8 * i));
    return *this;
  }
  Msgpack& raw(std::string_view s) { bytes += s; return *this; }
};

// An AMDGPU ELF whose metadata note holds `metadata`.
std::vector<std::byte> hsaco_with_metadata(const std::string& metadata) {
  ElfWriter w;
  w.machine = 224;
  w.osabi = 64;        // ELFOSABI_AMDGPU_HSA
  w.abi_version = 3;  // code object v5
  w.flags = 0x41;     // gfx1100
  w.add({".note", SHT_NOTE, note("AMDGPU", 32, metadata), 0, 0, 0, 0, 4});
  return w.build().bytes;
}

// {"amdhsa.target": ..., "amdhsa.kernels": [{".name": "k", ".kernarg_segment_size": kernarg,
//   ".args": [{".offset": offset, ".size": size, ".value_kind": "by_value"}]}]}
std::string one_kernel(uint32_t kernarg, uint32_t offset, uint32_t size) {
  Msgpack m;
  m.map(2).str("amdhsa.target").str("amdgcn-amd-amdhsa--gfx1100");
  m.str("amdhsa.kernels").array(1).map(3).str(".name").str("k");
  m.str(".kernarg_segment_size").uint(kernarg);
  m.str(".args").array(1).map(3).str(".offset").uint(offset).str(".size").uint(size);
  m.str(".value_kind").str("by_value");
  return m.bytes;
}

std::string error_of_code_object(const std::vector<std::byte>& image) {
  return error_of([&] { parse_code_object(image); });
}

}  // namespace

TEST_CASE("formats amdgpu: metadata that lies is a FormatError") {
  if (!can_read_metadata()) {
    CHECK(error_of_code_object(hsaco_with_metadata(one_kernel(8, 0, 4))).find("without msgpack") != std::string::npos);
    return;
  }
  auto ok = parse_code_object(hsaco_with_metadata(one_kernel(8, 0, 4)));
  CHECK(ok.target == "amdgcn-amd-amdhsa--gfx1100");
  CHECK(ok.code_object_version == 5);
  REQUIRE(ok.kernels.size() == 1);
  CHECK(ok.kernels[0].args.at(0).size == 4);
  // An argument past the kernarg segment, also where offset + size wraps in 32 bits.
  CHECK(error_of_code_object(hsaco_with_metadata(one_kernel(8, 6, 4))).find("exceeds the 8-byte kernarg segment") !=
        std::string::npos);
  CHECK(error_of_code_object(hsaco_with_metadata(one_kernel(8, 8, 0xfffffffcu))).find("exceeds") != std::string::npos);
  // Headers that claim 2^32 elements: refused from the note's size, nothing allocated.
  // (msgpack-c says "array size overflow" when its limit stops it; without the
  // limit it would try to allocate 2^32 objects first.)
  CHECK(error_of_code_object(hsaco_with_metadata(std::string("\xdd\xff\xff\xff\xff", 5))).find("array size overflow") !=
        std::string::npos);
  CHECK(error_of_code_object(hsaco_with_metadata(std::string("\xdf\xff\xff\xff\xff", 5))).find("map size overflow") !=
        std::string::npos);
  for (std::string claim : {std::string("\xdb\xff\xff\xff\xff", 5), std::string("\xc6\xff\xff\xff\xff", 5)})
    CHECK(error_of_code_object(hsaco_with_metadata(claim)).find("not valid msgpack") != std::string::npos);
  // Nesting deeper than any metadata: refused.
  CHECK(error_of_code_object(hsaco_with_metadata(std::string(200, '\x91') + '\xc0')).find("depth size overflow") !=
        std::string::npos);
  // Wrong types where a map, an array or an integer belongs.
  CHECK(error_of_code_object(hsaco_with_metadata(Msgpack().array(0).bytes)).find("not a msgpack map") != std::string::npos);
  CHECK(error_of_code_object(hsaco_with_metadata(Msgpack().map(1).str("amdhsa.kernels").uint(3).bytes))
            .find("amdhsa.kernels is not an array") != std::string::npos);
  CHECK(error_of_code_object(
            hsaco_with_metadata(Msgpack().map(1).str("amdhsa.kernels").array(1).map(2).str(".name").str("k")
                                    .str(".kernarg_segment_size").str("big").bytes))
            .find(".kernarg_segment_size is not a non-negative integer") != std::string::npos);
  CHECK(error_of_code_object(
            hsaco_with_metadata(Msgpack().map(1).str("amdhsa.kernels").array(1).map(1).str(".name").raw(std::string_view("\xcf\x01\0\0\0\0\0\0\0", 9))
                                    .bytes))
            .find("no .name") != std::string::npos);
  CHECK(error_of_code_object(hsaco_with_metadata("\xc1")).find("not valid msgpack") != std::string::npos);
  // No metadata note at all.
  ElfWriter bare;
  bare.machine = 224;
  CHECK(error_of_code_object(bare.build().bytes).find("no NT_AMDGPU_METADATA note") != std::string::npos);
}

TEST_CASE("formats amdgpu: target ids") {
  auto t = parse_target_id("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-");
  CHECK(t.processor == "gfx90a");
  CHECK(t.sramecc == '+');
  CHECK(t.xnack == '-');
  CHECK(t.str() == "gfx90a:sramecc+:xnack-");
  CHECK(target_compatible(parse_target_id("gfx90a"), t));
  CHECK(target_compatible(parse_target_id("gfx90a:xnack-"), t));
  CHECK_FALSE(target_compatible(parse_target_id("gfx90a:xnack+"), t));
  CHECK_FALSE(target_compatible(parse_target_id("gfx1100"), t));
  CHECK(target_match_score(parse_target_id("gfx90a:xnack-"), t) >
        target_match_score(parse_target_id("gfx90a"), t));
  CHECK(target_match_score(parse_target_id("gfx942"), t) == -1);
  CHECK(processor_from_e_flags(0x541) == "gfx1100");
  CHECK(arg_kind_from_value_kind("hidden_block_count_x") == ArgKind::Hidden);
  CHECK(arg_kind_from_value_kind("dynamic_shared_pointer") == ArgKind::DynamicShared);
  CHECK(arg_kind_from_value_kind("image") == ArgKind::Other);
}

TEST_CASE("formats amdgpu: kernarg layout facts") {
  KernelInfo k;
  k.name = "k";
  k.kernarg_size = 96;
  k.kernarg_align = 8;
  k.args = {{0, 4, ArgKind::ByValue, "by_value"},
            {8, 8, ArgKind::GlobalBuffer, "global_buffer"},
            {16, 4, ArgKind::ByValue, "by_value"},
            {24, 4, ArgKind::Hidden, "hidden_block_count_x"},
            {28, 2, ArgKind::Hidden, "hidden_group_size_x"}};
  CHECK(k.explicit_arg_count() == 3);
  CHECK(k.explicit_kernarg_size() == 20);
  CHECK(hidden_args_offset(k) == 24);
  CHECK(max_explicit_args_size(k) == 24);
  std::vector<std::byte> segment(96, std::byte{0});
  put<uint32_t>(segment, 24, 77);
  put<uint16_t>(segment, 28, 256);
  uint64_t v = 0;
  CHECK(read_hidden_arg(k, segment, "hidden_block_count_x", &v));
  CHECK(v == 77);
  CHECK(read_hidden_arg(k, segment, "hidden_group_size_x", &v));
  CHECK(v == 256);
  CHECK_FALSE(read_hidden_arg(k, segment, "hidden_grid_dims", &v));
  // An argument past the bytes given is not read.
  CHECK_FALSE(read_hidden_arg(k, std::span(segment).first(26), "hidden_block_count_x", &v));
  // No hidden block: the explicit size rounded up to the alignment.
  k.args.resize(3);
  k.kernarg_size = 20;
  CHECK(hidden_args_offset(k) == 20);
  CHECK(max_explicit_args_size(k) == 24);
}

TEST_CASE("formats amdgpu: offload bundles that lie are FormatErrors") {
  std::vector<std::byte> junk(100, std::byte{0x7f});
  CHECK_THROWS_AS(parse_offload_bundle(junk), FormatError);
  // Three entries promised, none present.
  CHECK(error_of_bundle(bundle({}, 3)).find("entry offset") != std::string::npos);
  CHECK(error_of_bundle(bundle({}, 1u << 20)).find("implausible entry count") != std::string::npos);
  const std::string id = "hipv4-amdgcn-amd-amdhsa--gfx1100";
  // Entry offsets and sizes near 2^64: offset + size wraps to a small number.
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  for (auto [offset, size] : {std::pair{kMax - 7, uint64_t(16)}, std::pair{uint64_t(8), kMax - 4},
                              std::pair{kMax, kMax}, std::pair{uint64_t(0), uint64_t(4096)}}) {
    auto b = bundle({{offset, size, id}}, 1);
    CAPTURE(offset);
    std::string m = error_of_bundle(b);
    CHECK(m.find("invalid clang offload bundle") == 0);
    CHECK(m.find("entry 0 (" + id + ")") != std::string::npos);
  }
  // An id length that runs past the end, or near 2^64.
  for (uint64_t id_length : {uint64_t(200), uint64_t(4096), kMax - 2}) {
    auto b = bundle({{0, 0, id}}, 1);
    put<uint64_t>(b, 24 + 8 + 16, id_length);
    CHECK_THROWS_AS(parse_offload_bundle(b), FormatError);
  }
  // A truthful one parses: the entry covers the header's first 8 bytes.
  auto ok = parse_offload_bundle(bundle({{0, 8, id}}, 1));
  REQUIRE(ok.size() == 1);
  CHECK(ok[0].target == "gfx1100");
  CHECK(ok[0].triple == "amdgcn-amd-amdhsa");
  CHECK(ok[0].kind == "hipv4");
  CHECK(ok[0].image.size() == 8);
  // A compressed bundle whose stream is no zstd frame is refused with a
  // sentence (tests/unit/test_formats_containers.cpp reads real ones).
  auto ccob = bytes_of("CCOB\x01\x00\x01\x00 and more");
  CHECK(detect_format(ccob) == Format::CompressedOffloadBundle);
  CHECK(error_of([&] { code_object_entries(ccob); }).find("compressed bundle") != std::string::npos);
  // No entry for the agent: the message lists what is there.
  try {
    select_bundle_entry(ok, parse_target_id("gfx90a"));
    FAIL("no throw");
  } catch (const FormatError& e) {
    CHECK(std::string(e.what()).find("gfx90a") != std::string::npos);
    CHECK(std::string(e.what()).find("gfx1100") != std::string::npos);
  }
}

#if defined(LRRT_TEST_AMD_KERNELS)
TEST_CASE("formats amdgpu: truncated and corrupted code objects are FormatErrors") {
  REQUIRE(can_read_metadata());
  auto full = read_kernel("saxpy.gfx1100.hsaco");
  REQUIRE(full.size() > 1000);
  for (size_t len = 0; len < full.size(); len += 37) {
    CAPTURE(len);
    std::span<const std::byte> part(full.data(), len);
    try {
      parse_code_object(part);
    } catch (const FormatError&) {
    }
  }
  // Every byte of the ELF header, the program headers and the section
  // headers set to 0xff in turn: a FormatError or a parse, never a crash.
  Elf64_Ehdr h = get<Elf64_Ehdr>(full, 0);
  std::vector<std::pair<uint64_t, uint64_t>> ranges = {
      {0, sizeof(Elf64_Ehdr)},
      {h.e_phoff, uint64_t(h.e_phnum) * sizeof(Elf64_Phdr)},
      {h.e_shoff, uint64_t(h.e_shnum) * sizeof(Elf64_Shdr)}};
  int rejected = 0;
  for (auto [begin, length] : ranges)
    for (uint64_t i = begin; i < begin + length && i < full.size(); ++i) {
      auto copy = full;
      copy[i] = std::byte{0xff};
      try {
        parse_code_object(copy);
      } catch (const FormatError&) {
        ++rejected;
      }
    }
  CHECK(rejected > 0);
}

TEST_CASE("formats amdgpu: saxpy v5 metadata") {
  auto image = read_kernel("saxpy.gfx1100.hsaco");
  CHECK(detect_format(image) == Format::Hsaco);
  auto co = parse_code_object(image);
  CHECK(co.target == "amdgcn-amd-amdhsa--gfx1100");
  CHECK(co.code_object_version == 5);
  CHECK(processor_from_e_flags(co.e_flags) == "gfx1100");
  REQUIRE(co.kernels.size() == 1);
  const auto& k = co.kernels[0];
  CHECK(k.name == "saxpy");
  CHECK(k.symbol == "saxpy.kd");
  CHECK(k.wavefront_size == 32);
  CHECK(k.kernarg_align == 8);
  CHECK(k.explicit_arg_count() == 4);
  CHECK(k.explicit_kernarg_size() == 28);
  CHECK(k.args[0].kind == ArgKind::ByValue);
  CHECK(k.args[1].kind == ArgKind::GlobalBuffer);
  CHECK(k.args[1].address_space == "global");
  CHECK(k.args[1].offset == 8);
  REQUIRE(arg(k, "hidden_block_count_x"));
  CHECK(arg(k, "hidden_block_count_x")->kind == ArgKind::Hidden);
  CHECK(arg(k, "hidden_group_size_x")->size == 2);
  CHECK(hidden_args_offset(k) == 32);
  CHECK(max_explicit_args_size(k) == 32);
  CHECK(k.kernarg_size >= 32 + 64);
}

TEST_CASE("formats amdgpu: .access and .actual_access of each buffer argument") {
  if (!can_read_metadata()) return;
  // Four buffers: .actual_access only, both (.actual_access wins), .access
  // only, and a word lrrt does not know (no proof: read-write by default).
  Msgpack m;
  m.map(2).str("amdhsa.target").str("amdgcn-amd-amdhsa--gfx1100");
  m.str("amdhsa.kernels").array(1).map(3).str(".name").str("k");
  m.str(".kernarg_segment_size").uint(32);
  m.str(".args").array(4);
  m.map(4).str(".offset").uint(0).str(".size").uint(8).str(".value_kind").str("global_buffer");
  m.str(".actual_access").str("read_only");
  m.map(5).str(".offset").uint(8).str(".size").uint(8).str(".value_kind").str("global_buffer");
  m.str(".access").str("read_write").str(".actual_access").str("write_only");
  m.map(4).str(".offset").uint(16).str(".size").uint(8).str(".value_kind").str("global_buffer");
  m.str(".access").str("read_only");
  m.map(4).str(".offset").uint(24).str(".size").uint(8).str(".value_kind").str("global_buffer");
  m.str(".access").str("default");
  const auto co = parse_code_object(hsaco_with_metadata(m.bytes));
  REQUIRE(co.kernels.size() == 1);
  const auto& a = co.kernels[0].args;
  REQUIRE(a.size() == 4);
  CHECK(a[0].actual_access == "read_only");
  CHECK(a[1].access == "read_write");
  CHECK(a[1].actual_access == "write_only");
  CHECK(a[2].access == "read_only");
  auto derived = [&](size_t i) { return std::make_pair(derived_access(a[i]).mode, derived_access(a[i]).source); };
  CHECK(derived(0) == std::make_pair(AccessMode::Read, AccessSource::ActualAccess));
  CHECK(derived(1) == std::make_pair(AccessMode::Write, AccessSource::ActualAccess));
  CHECK(derived(2) == std::make_pair(AccessMode::Read, AccessSource::Access));
  CHECK(derived(3) == std::make_pair(AccessMode::ReadWrite, AccessSource::Default));
  // A by-value argument has no access, whatever its metadata says.
  KernelArgInfo by_value = a[0];
  by_value.kind = ArgKind::ByValue;
  CHECK(derived_access(by_value).source == AccessSource::Default);
}

TEST_CASE("formats amdgpu: v4 and v6") {
  auto v4 = parse_code_object(read_kernel("saxpy.gfx1100.v4.hsaco"));
  CHECK(v4.code_object_version == 4);
  CHECK(v4.metadata_version == std::vector<uint64_t>{1, 1});
  REQUIRE(v4.kernels.size() == 1);
  CHECK(v4.kernels[0].explicit_kernarg_size() == 28);
  // v4 has no block counts: workgroup sizes come from the packet.
  CHECK(arg(v4.kernels[0], "hidden_block_count_x") == nullptr);
  auto v6 = parse_code_object(read_kernel("saxpy.gfx1100.v6.hsaco"));
  CHECK(v6.code_object_version == 6);
  REQUIRE(v6.kernels.size() == 1);
  CHECK(arg(v6.kernels[0], "hidden_group_size_x") != nullptr);
}

TEST_CASE("formats amdgpu: every built target parses") {
  for (const char* src : {"saxpy", "vector_add", "transpose", "reduce", "empty"})
    for (const char* arch : {"gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1201"}) {
      CAPTURE(src);
      CAPTURE(arch);
      auto co = parse_code_object(read_kernel(std::string(src) + "." + arch + ".hsaco"));
      CHECK(co.target_id.processor == arch);
      CHECK(processor_from_e_flags(co.e_flags) == arch);
      CHECK(!co.kernels.empty());
      for (const auto& k : co.kernels)
        CHECK(k.wavefront_size == (std::string(arch).substr(0, 4) == "gfx9" ? 64u : 32u));
    }
  auto vadd = parse_code_object(read_kernel("vector_add.gfx1100.hsaco"));
  CHECK(vadd.kernels.size() == 2);
  auto reduce = parse_code_object(read_kernel("reduce.gfx1100.hsaco"));
  CHECK(reduce.kernels[0].group_segment_size == 4096);  // float scratch[1024]
}

#if defined(LRRT_TEST_AMD_BUNDLES)
TEST_CASE("formats amdgpu: offload bundle entries and selection") {
  auto image = read_kernel("saxpy.bundle.hsaco");
  CHECK(detect_format(image) == Format::OffloadBundle);
  auto entries = parse_offload_bundle(image);
  int amd = 0;
  for (const auto& e : entries) {
    amd += e.is_amdgpu();
    // Each entry's bytes lie inside the file where the header says.
    CHECK(e.image.data() == image.data() + e.offset);
  }
  CHECK(amd == 3);
  const auto& x_on = select_bundle_entry(entries, parse_target_id("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack+"));
  CHECK(x_on.target == "gfx90a:xnack+");
  CHECK(parse_code_object(x_on.image).target_id.xnack == '+');
  const auto& x_off = select_bundle_entry(entries, parse_target_id("gfx90a:xnack-"));
  CHECK(x_off.target == "gfx90a:xnack-");
  CHECK(select_bundle_entry(entries, parse_target_id("gfx1100")).target == "gfx1100");
  try {
    select_bundle_entry(entries, parse_target_id("gfx942"));
    FAIL("no throw");
  } catch (const FormatError& e) {
    std::string m = e.what();
    CHECK(m.find("gfx942") != std::string::npos);
    CHECK(m.find("gfx90a:xnack+") != std::string::npos);
    CHECK(m.find("gfx1100") != std::string::npos);
  }
  // The container layer yields the same entries, formats detected.
  auto listed = code_object_entries(image);
  REQUIRE(listed.size() == entries.size());
  int hsaco = 0;
  for (size_t i = 0; i < listed.size(); ++i) {
    CHECK(listed[i].container == Format::OffloadBundle);
    CHECK(listed[i].id == entries[i].id);
    CHECK(listed[i].offset == entries[i].offset);
    if (entries[i].is_amdgpu()) {
      CHECK(listed[i].format == Format::Hsaco);
      CHECK(listed[i].target == entries[i].target);
      ++hsaco;
    }
  }
  CHECK(hsaco == 3);
}
#endif
#endif

TEST_CASE("formats amdgpu: bundle entries naming one image are read once, overlapping ones are refused") {
  const auto image = read_kernel("saxpy.gfx1100.hsaco");
  std::mt19937 rng(std::random_device{}());
  const size_t n = std::uniform_int_distribution<size_t>(2, 64)(rng);
  CAPTURE(n);
  auto make = [&](bool overlap) {
    std::vector<std::string> ids;
    for (size_t i = 0; i < n; ++i) ids.push_back("hipv4-amdgcn-amd-amdhsa--gfx1100:e" + std::to_string(i));
    uint64_t header = 24 + 8;
    for (const auto& id : ids) header += 24 + id.size();
    const uint64_t at = (header + 4095) / 4096 * 4096;
    std::vector<std::tuple<uint64_t, uint64_t, std::string>> entries;
    for (size_t i = 0; i < n; ++i)
      entries.emplace_back(at + (overlap && i == n - 1 ? 8 : 0), image.size() - (overlap && i == n - 1 ? 8 : 0), ids[i]);
    auto b = bundle(entries, n);
    b.resize(at);
    b.insert(b.end(), image.begin(), image.end());
    return b;
  };
  const Inspection one = lrrt::formats::inspect_code_object(make(false));
  REQUIRE(one.targets.size() == n);
  CHECK(!one.targets[0].kernels.empty());
  for (size_t i = 1; i < n; ++i) {
    CHECK(one.targets[i].kernels.empty());
    CHECK(one.targets[i].note.find("same bytes as entry " + one.targets[0].entry) != std::string::npos);
  }
  CHECK_THROWS_WITH_AS(lrrt::formats::inspect_code_object(make(true)), doctest::Contains("overlap"), FormatError);
}

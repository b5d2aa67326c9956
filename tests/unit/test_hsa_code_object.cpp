// AMDGPU code objects built by clang-19 (build/kernels/*.hsaco): metadata
// parsing (v4/v5/v6), offload bundles and target selection, kernarg and
// hidden-argument packing against the metadata; malformed inputs.
#if defined(LRRT_HAVE_AMDGPU_CODE_OBJECTS)
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "error.hpp"
#include "hsa/code_object.hpp"
#include "hsa/kernargs.hpp"
#include "hsa/offload_bundle.hpp"

using namespace lrrt::rt;
using namespace lrrt::rt::amdgpu;

namespace {
std::vector<std::byte> read_kernel(const std::string& name) {
  std::ifstream f(std::string(LRRT_TEST_KERNEL_DIR) + "/" + name, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(f)), {});
  std::vector<std::byte> b(c.size());
  std::memcpy(b.data(), c.data(), c.size());
  return b;
}
const KernelArgInfo* arg(const KernelInfo& k, std::string_view vk) {
  for (const auto& a : k.args)
    if (a.value_kind == vk) return &a;
  return nullptr;
}
template <typename T>
T at(const std::vector<std::byte>& b, uint32_t off) {
  T v;
  std::memcpy(&v, b.data() + off, sizeof v);
  return v;
}
}  // namespace

TEST_CASE("hsa code object: target ids") {
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
}

TEST_CASE("hsa code object: malformed images are errors, not crashes") {
  std::vector<std::byte> junk(100, std::byte{0x7f});
  CHECK_THROWS_AS(parse_code_object(junk), Error);
  CHECK_THROWS_AS(parse_offload_bundle(junk), Error);
  std::string b = "__CLANG_OFFLOAD_BUNDLE__";
  std::vector<std::byte> bundle(b.size() + 8);
  std::memcpy(bundle.data(), b.data(), b.size());
  uint64_t n = 3;  // three entries promised, none present
  std::memcpy(bundle.data() + b.size(), &n, 8);
  try {
    parse_offload_bundle(bundle);
    FAIL("no throw");
  } catch (const Error& e) {
    CHECK(e.status() == LR_ERROR_INVALID_IMAGE);
  }
#if defined(LRRT_TEST_HSA_KERNELS)
  // Every truncation of a real code object is rejected cleanly.
  auto full = read_kernel("saxpy.gfx1100.hsaco");
  REQUIRE(!full.empty());
  for (size_t len = 0; len < full.size(); len += 97) {
    std::span<const std::byte> part(full.data(), len);
    try {
      parse_code_object(part);
    } catch (const Error& e) {
      CHECK(e.status() == LR_ERROR_INVALID_IMAGE);
    }
  }
#endif
}

#if defined(LRRT_TEST_HSA_KERNELS)
TEST_CASE("hsa code object: saxpy v5 metadata") {
  auto image = read_kernel("saxpy.gfx1100.hsaco");
  REQUIRE(!image.empty());
  auto co = parse_code_object(image);
  CHECK(co.target == "amdgcn-amd-amdhsa--gfx1100");
  CHECK(co.code_object_version == 5);
  REQUIRE(co.kernels.size() == 1);
  const auto& k = co.kernels[0];
  CHECK(k.name == "saxpy");
  CHECK(k.symbol == "saxpy.kd");
  CHECK(k.wavefront_size == 32);
  CHECK(k.kernarg_align == 8);
  CHECK(k.explicit_arg_count() == 4);
  CHECK(k.explicit_kernarg_size() == 28);
  CHECK(k.args[0].kind == LR_ARG_BY_VALUE);
  CHECK(k.args[1].kind == LR_ARG_GLOBAL_BUFFER);
  CHECK(k.args[1].address_space == "global");
  CHECK(k.args[1].offset == 8);
  REQUIRE(arg(k, "hidden_block_count_x"));
  CHECK(arg(k, "hidden_block_count_x")->kind == LR_ARG_HIDDEN);
  CHECK(arg(k, "hidden_group_size_x")->size == 2);
  CHECK(hidden_args_offset(k) == 32);
  CHECK(k.kernarg_size >= 32 + 64);
}

TEST_CASE("hsa code object: v4 and v6") {
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

TEST_CASE("hsa code object: every built target parses") {
  for (const char* src : {"saxpy", "vector_add", "transpose", "reduce", "empty"})
    for (const char* arch : {"gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1201"}) {
      CAPTURE(src);
      CAPTURE(arch);
      auto co = parse_code_object(read_kernel(std::string(src) + "." + arch + ".hsaco"));
      CHECK(co.target_id.processor == arch);
      CHECK(!co.kernels.empty());
      for (const auto& k : co.kernels) CHECK(k.wavefront_size == (std::string(arch).substr(0, 4) == "gfx9" ? 64u : 32u));
    }
  auto vadd = parse_code_object(read_kernel("vector_add.gfx1100.hsaco"));
  CHECK(vadd.kernels.size() == 2);
  auto reduce = parse_code_object(read_kernel("reduce.gfx1100.hsaco"));
  CHECK(reduce.kernels[0].group_segment_size == 4096);  // float scratch[1024]
}

#if defined(LRRT_TEST_HSA_BUNDLES)
TEST_CASE("hsa code object: offload bundle entries and selection") {
  auto image = read_kernel("saxpy.bundle.hsaco");
  auto entries = parse_offload_bundle(image);
  int amd = 0;
  for (const auto& e : entries) amd += e.is_amdgpu();
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
  } catch (const Error& e) {
    CHECK(e.status() == LR_ERROR_INVALID_IMAGE);
    std::string m = e.what();
    CHECK(m.find("gfx942") != std::string::npos);
    CHECK(m.find("gfx90a:xnack+") != std::string::npos);
    CHECK(m.find("gfx1100") != std::string::npos);
  }
}

#endif

TEST_CASE("hsa kernargs: explicit and hidden packing against the metadata") {
  for (const char* file : {"saxpy.gfx1100.hsaco", "saxpy.gfx90a.hsaco", "saxpy.gfx1100.v6.hsaco",
                           "saxpy.gfx1100.v4.hsaco"}) {
    INFO(file);
    auto co = parse_code_object(read_kernel(file));
    const auto& k = co.kernels[0];
    struct {
      float a;
      uint32_t pad;
      uint64_t x, y;
      uint32_t n;
    } args{2.5f, 0, 0x1111222233334444ull, 0x5555666677778888ull, 1000};
    LaunchConfig c;
    c.grid = {4, 2, 1};
    c.block = {256, 1, 1};
    c.dynamic_shared_bytes = 128;
    std::vector<std::byte> out(std::max<size_t>(k.kernarg_size, 32), std::byte{0xee});
    pack_kernargs(k, c, std::as_bytes(std::span(&args, 1)).first(28), out);
    CHECK(at<float>(out, 0) == 2.5f);
    CHECK(at<uint64_t>(out, 8) == 0x1111222233334444ull);
    CHECK(at<uint64_t>(out, 16) == 0x5555666677778888ull);
    CHECK(at<uint32_t>(out, 24) == 1000);
    if (k.kernarg_size > 28) CHECK(at<uint32_t>(out, 28) == 0);  // padding zeroed
    for (const auto& a : k.args) {
      if (a.kind != LR_ARG_HIDDEN) continue;
      uint64_t v = 0;
      std::memcpy(&v, out.data() + a.offset, a.size);
      CAPTURE(a.value_kind);
      if (a.value_kind == "hidden_block_count_x") CHECK(v == 4);
      else if (a.value_kind == "hidden_block_count_y") CHECK(v == 2);
      else if (a.value_kind == "hidden_block_count_z") CHECK(v == 1);
      else if (a.value_kind == "hidden_group_size_x") CHECK(v == 256);
      else if (a.value_kind == "hidden_group_size_y") CHECK(v == 1);
      else if (a.value_kind == "hidden_group_size_z") CHECK(v == 1);
      else if (a.value_kind == "hidden_grid_dims") CHECK(v == 2);
      else if (a.value_kind == "hidden_dynamic_lds_size") CHECK(v == 128);
      else CHECK(v == 0);  // remainders, global offsets, unused
    }
    // Everything not an argument is zero too.
    uint64_t bc;
    if (read_hidden_arg(k, out, "hidden_block_count_x", &bc)) CHECK(bc == 4);

    CHECK_NOTHROW(check_explicit_args(k, 28));
    CHECK_NOTHROW(check_explicit_args(k, 32));  // padded to the hidden block
    try {
      check_explicit_args(k, 24);
      FAIL("no throw");
    } catch (const Error& e) {
      CHECK(e.status() == LR_ERROR_INVALID_ARGUMENT);
      std::string m = e.what();
      CHECK(m.find("saxpy") != std::string::npos);
      CHECK(m.find("28") != std::string::npos);
      CHECK(m.find("24") != std::string::npos);
    }
  }
}
#endif
#endif

// The hsa backend's kernarg packing (src/runtime/hsa/kernargs.*) against the
// metadata of clang-built code objects: explicit arguments, padding and every
// hidden argument of v4/v5/v6 code objects.
#if defined(LRRT_TEST_HSA) && defined(LRRT_TEST_AMD_KERNELS)
#include <doctest/doctest.h>

#include <cstring>
#include <random>

#include "error.hpp"
#include "formats_test_util.hpp"
#include "hsa/kernargs.hpp"
#include "lrrt/formats/amdgpu.hpp"

using namespace lrrt::rt;
using lrrt::Error;
using namespace formats_test;

TEST_CASE("hsa kernargs: explicit and hidden packing against the metadata") {
  std::mt19937_64 rng(std::random_device{}());
  for (const char* file : {"saxpy.gfx1100.hsaco", "saxpy.gfx90a.hsaco", "saxpy.gfx1100.v6.hsaco",
                           "saxpy.gfx1100.v4.hsaco"}) {
    INFO(file);
    auto co = lrrt::formats::amdgpu::parse_code_object(read_kernel(file));
    const auto& k = co.kernels[0];
    struct {
      float a;
      uint32_t pad;
      uint64_t x, y;
      uint32_t n;
    } args{float(rng() % 1000) / 4, 0, rng(), rng(), uint32_t(rng())};
    LaunchConfig c;
    c.grid = {uint32_t(1 + rng() % 100), uint32_t(1 + rng() % 100), 1};
    c.block = {uint32_t(1 + rng() % 1024), 1, 1};
    c.dynamic_shared_bytes = uint32_t(rng() % 65536);
    std::vector<std::byte> out(std::max<size_t>(k.kernarg_size, 32), std::byte{0xee});
    hsa::pack_kernargs(k, c, std::as_bytes(std::span(&args, 1)).first(28), out);
    CHECK(get<float>(out, 0) == args.a);
    CHECK(get<uint64_t>(out, 8) == args.x);
    CHECK(get<uint64_t>(out, 16) == args.y);
    CHECK(get<uint32_t>(out, 24) == args.n);
    if (k.kernarg_size > 28) CHECK(get<uint32_t>(out, 28) == 0);  // padding zeroed
    std::vector<bool> covered(out.size(), false);
    for (size_t i = 0; i < 28; ++i) covered[i] = true;
    for (const auto& a : k.args) {
      if (a.kind != ArgKind::Hidden) continue;
      uint64_t v = 0;
      std::memcpy(&v, out.data() + a.offset, a.size);
      for (size_t i = a.offset; i < a.offset + a.size; ++i) covered[i] = true;
      CAPTURE(a.value_kind);
      if (a.value_kind == "hidden_block_count_x") CHECK(v == c.grid.x);
      else if (a.value_kind == "hidden_block_count_y") CHECK(v == c.grid.y);
      else if (a.value_kind == "hidden_block_count_z") CHECK(v == 1);
      else if (a.value_kind == "hidden_group_size_x") CHECK(v == c.block.x);
      else if (a.value_kind == "hidden_group_size_y") CHECK(v == 1);
      else if (a.value_kind == "hidden_group_size_z") CHECK(v == 1);
      else if (a.value_kind == "hidden_grid_dims") CHECK(v == (c.grid.y > 1 ? 2 : 1));
      else if (a.value_kind == "hidden_dynamic_lds_size") CHECK(v == c.dynamic_shared_bytes);
      else CHECK(v == 0);  // remainders, global offsets, unused
      uint64_t back = 0;
      CHECK(lrrt::formats::amdgpu::read_hidden_arg(k, out, a.value_kind, &back));
      CHECK(back == v);
    }
    // Everything that is no argument is zero (the 0xee poison is gone).
    for (size_t i = 28; i < k.kernarg_size; ++i)
      if (!covered[i]) CHECK(out[i] == std::byte{0});

    CHECK_NOTHROW(hsa::check_explicit_args(k, 28));
    CHECK_NOTHROW(hsa::check_explicit_args(k, 32));  // padded to the hidden block
    try {
      hsa::check_explicit_args(k, 24);
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

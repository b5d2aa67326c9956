// Shared memory: a launch gets the dynamic shared bytes it asks for, private
// to each workgroup, up to the device's limit (lr_device_properties_t
// max_shared_memory_per_workgroup, less the kernel's static shared memory);
// asking for more fails at launch, naming the limit. Static shared memory
// (reduce) and dynamic (transpose) in ordinary kernels.
#include <cmath>

#include "cts.hpp"

namespace lrrt::cts {

TEST_SUITE("shared_memory") {

TEST_CASE("every workgroup gets the whole dynamic shared region it asks for, up to the device's limit") {
  Session s;
  CTS_RANDOM(rng);
  auto module = s.load_test_kernels("shared_memory_kernels");
  auto kernel = module.kernel("shared_reverse_u32");
  const auto props = s.device().properties();
  const uint64_t limit = props.max_shared_memory_per_workgroup - kernel.properties().group_segment_size;
  REQUIRE(limit >= 1024);
  MESSAGE("dynamic shared memory limit for shared_reverse_u32: ", limit, " bytes");
  const uint32_t groups = 6, block = std::min<uint32_t>(256, props.max_workgroup_size);
  // 48 KiB is CUDA's limit before a kernel opts in to more; the largest is the limit itself.
  for (uint64_t bytes : {uint64_t(4), uint64_t(1000), uint64_t(48) << 10, (uint64_t(48) << 10) + 4, limit & ~uint64_t(3)}) {
    if (bytes > limit) continue;
    CAPTURE(bytes);
    const uint32_t words = static_cast<uint32_t>(bytes / 4);
    auto in = rng.words(size_t(groups) * words);
    auto din = upload(s.device(), in);
    auto dout = poisoned(s.device(), in.size() * 4);
    Args args;
    args.add(din.data()).add(dout.data()).add(words);
    lrrt::launch(kernel, lr_launch_config_t{{groups, 1, 1}, {block, 1, 1}, uint32_t(bytes)}, args.bytes());
    auto out = download<uint32_t>(dout, in.size());
    check_every(std::span<const uint32_t>(out),
                [&](size_t i) {
                  size_t g = i / words, k = i % words;
                  return in[g * words + (words - 1 - k)];
                },
                "each workgroup's slice reversed through shared memory");
  }
  // One byte more than the device has: refused at launch, naming the limit.
  Args args;
  args.add(static_cast<const void*>(nullptr)).add(static_cast<void*>(nullptr)).add(uint32_t{0});
  const lr_launch_config_t too_much{{1, 1, 1}, {block, 1, 1}, uint32_t(props.max_shared_memory_per_workgroup + 1)};
  CTS_FAILS(lr_launch(kernel.get(), &too_much, args.data(), args.size()), LR_ERROR_INVALID_ARGUMENT,
            std::to_string(props.max_shared_memory_per_workgroup));
  s.device().synchronize();
}

TEST_CASE("a 2-D transpose through a dynamic shared tile") {
  Session s;
  CTS_RANDOM(rng);
  auto module = s.load("transpose");
  auto kernel = module.kernel("transpose_f32");
  // Neither side a multiple of the tile.
  const uint32_t rows = 67, cols = 130, tile = 16;
  auto in = rng.floats(size_t(rows) * cols);
  auto din = upload(s.device(), in);
  auto dout = poisoned(s.device(), in.size() * 4);
  Args args;
  args.add(din.data()).add(dout.data()).add(rows).add(cols);
  const lr_launch_config_t cfg{{(cols + tile - 1) / tile, (rows + tile - 1) / tile, 1}, {tile, tile, 1},
                               tile * (tile + 1) * 4};
  lrrt::launch(kernel, cfg, args.bytes());
  auto out = download<float>(dout, in.size());
  check_every(std::span<const float>(out),
              [&](size_t i) {
                size_t c = i / rows, r = i % rows;  // out is cols x rows
                return in[r * cols + c];
              },
              "out[c][r] = in[r][c]");
}

TEST_CASE("per-workgroup sums through static shared memory") {
  Session s;
  CTS_RANDOM(rng);
  auto module = s.load("reduce");
  auto kernel = module.kernel("reduce_sum_f32");
  const uint32_t n = 100'003, block = 256, groups = (n + block - 1) / block;
  auto in = rng.floats(n);
  auto din = upload(s.device(), in);
  auto dpartial = poisoned(s.device(), size_t(groups) * 4);
  Args args;
  args.add(din.data()).add(dpartial.data()).add(n);
  lrrt::launch(kernel, config_1d(n, block), args.bytes());
  auto partial = download<float>(dpartial, groups);
  // The tree sums in another order than this loop: compare within rounding.
  size_t wrong = 0, first = 0;
  for (uint32_t g = 0; g < groups; ++g) {
    double sum = 0, magnitude = 0;
    for (uint32_t i = g * block; i < std::min(n, (g + 1) * block); ++i) sum += in[i], magnitude += std::fabs(in[i]);
    if (!(std::fabs(partial[g] - sum) <= 1e-5 * magnitude + 1e-5) && wrong++ == 0) first = g;
  }
  CHECK_MESSAGE(wrong == 0, wrong, " of ", groups, " sums wrong; first is workgroup ", first);
}

}  // TEST_SUITE

}  // namespace lrrt::cts

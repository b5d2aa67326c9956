// Dispatch: kernels compute the right thing on random inputs at sizes that
// are not multiples of the workgroup, kernels describe their explicit
// arguments the same way everywhere, and bad launches are refused before
// anything runs.
#include <cmath>
#include <cstring>
#include <vector>

#include "cts.hpp"

namespace lrrt::cts {

TEST_SUITE("dispatch") {

TEST_CASE("saxpy on random inputs: every element, sizes that are not multiples of the workgroup") {
  Session s;
  CTS_RANDOM(rng);
  auto module = s.load("saxpy");
  auto kernel = module.kernel("saxpy");
  for (uint32_t n : {1u, 255u, 4096u, 100'003u}) {
    for (uint32_t block : {64u, 256u}) {
      CAPTURE(n);
      CAPTURE(block);
      auto x = rng.floats(n), y = rng.floats(n);
      const float a = rng.uniform(-3, 3);
      auto dx = upload(s.device(), x), dy = upload(s.device(), y);
      Args args;
      args.add(a).add(dx.data()).add(dy.data()).add(n);
      CHECK(args.size() == 28);
      lrrt::launch(kernel, config_1d(n, block), args.bytes());
      auto out = download<float>(dy, n);  // lr_memcpy waits for the launch
      // A GPU compiler may fuse the multiply-add: either rounding is right.
      size_t wrong = 0, first = 0;
      for (uint32_t i = 0; i < n; ++i)
        if (out[i] != std::fma(a, x[i], y[i]) && out[i] != a * x[i] + y[i] && wrong++ == 0) first = i;
      CHECK_MESSAGE(wrong == 0, wrong, " of ", n, " wrong; first at ", first, ": ", out[first]);
    }
  }
}

TEST_CASE("vector_add in float and in wrapping 32-bit integers") {
  Session s;
  CTS_RANDOM(rng);
  auto module = s.load("vector_add");
  const uint32_t n = 300'001;
  auto ai = rng.ints(n), bi = rng.ints(n);
  auto af = rng.floats(n, -100, 100), bf = rng.floats(n, -100, 100);
  auto dai = upload(s.device(), ai), dbi = upload(s.device(), bi);
  auto daf = upload(s.device(), af), dbf = upload(s.device(), bf);
  // One guard element past the end stays poisoned.
  auto dci = poisoned(s.device(), size_t(n + 1) * 4), dcf = poisoned(s.device(), size_t(n + 1) * 4);
  Args iargs, fargs;
  iargs.add(dai.data()).add(dbi.data()).add(dci.data()).add(n);
  fargs.add(daf.data()).add(dbf.data()).add(dcf.data()).add(n);
  lrrt::launch(module.kernel("vector_add_i32"), config_1d(n, 128), iargs.bytes());
  lrrt::launch(module.kernel("vector_add_f32"), config_1d(n, 128), fargs.bytes());
  auto ci = download<int32_t>(dci, n + 1);
  auto cf = download<float>(dcf, n + 1);
  check_every(std::span<const int32_t>(ci).first(n), [&](size_t i) { return add_i32(ai[i], bi[i]); }, "i32");
  check_every(std::span<const float>(cf).first(n), [&](size_t i) { return af[i] + bf[i]; }, "f32");
  CHECK(uint32_t(ci[n]) == kPoisonWord);
  uint32_t guard;
  std::memcpy(&guard, &cf[n], 4);
  CHECK(guard == kPoisonWord);
}

TEST_CASE("a kernel describes its explicit arguments: offsets and sizes as packed") {
  Session s;
  auto module = s.load("saxpy");
  auto kernel = module.kernel("saxpy");
  auto props = kernel.properties();
  CHECK(std::string(props.name) == "saxpy");
  CHECK(props.has_arg_layout == 1);
  CHECK(props.explicit_arg_count == 4);
  CHECK(props.explicit_kernarg_size == 28);
  CHECK(props.arg_count >= 4);  // hidden arguments follow on hsa
  auto args = kernel.args();
  REQUIRE(args.size() >= 4);
  const uint32_t offsets[] = {0, 8, 16, 24}, sizes[] = {4, 8, 8, 4};
  for (int i = 0; i < 4; ++i) {
    CAPTURE(i);
    CHECK(args[i].offset == offsets[i]);
    CHECK(args[i].size == sizes[i]);
  }
  const auto expect = backend().expectations();
  const lr_arg_kind_t kinds[] = {LR_ARG_BY_VALUE, LR_ARG_GLOBAL_BUFFER, LR_ARG_GLOBAL_BUFFER, LR_ARG_BY_VALUE};
  const std::string names[] = {"a", "x", "y", "n"};
  for (int i = 0; i < 4; ++i) {
    CAPTURE(i);
    if (expect.args_have_kinds) CHECK(args[i].kind == kinds[i]);
    if (expect.args_have_names) CHECK(std::string(args[i].name) == names[i]);
  }
  lr_kernel_arg_t arg{};
  CTS_FAILS(lr_kernel_get_arg(kernel.get(), props.arg_count, &arg), LR_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("bad launches are refused before anything runs") {
  Session s;
  CTS_RANDOM(rng);
  auto module = s.load("saxpy");
  auto kernel = module.kernel("saxpy");
  const uint32_t n = 64;
  auto y = rng.floats(n);
  auto dx = upload(s.device(), rng.floats(n)), dy = upload(s.device(), y);
  Args args;
  args.add(2.f).add(dx.data()).add(dy.data()).add(n);
  const auto cfg = config_1d(n, 64);
  CTS_FAILS(lr_launch(kernel.get(), nullptr, args.data(), args.size()), LR_ERROR_INVALID_ARGUMENT, "config");
  const lr_launch_config_t zero{{0, 1, 1}, {64, 1, 1}, 0};
  CTS_FAILS(lr_launch(kernel.get(), &zero, args.data(), args.size()), LR_ERROR_INVALID_ARGUMENT, "grid");
  CTS_FAILS(lr_launch(kernel.get(), &cfg, args.data(), 8), LR_ERROR_INVALID_ARGUMENT, "28");
  CTS_FAILS(lr_launch(kernel.get(), &cfg, nullptr, args.size()), LR_ERROR_INVALID_ARGUMENT, "args");
  const uint32_t too_wide = s.device().properties().max_workgroup_size + 1;
  const lr_launch_config_t wide{{1, 1, 1}, {too_wide, 1, 1}, 0};
  CTS_FAILS(lr_launch(kernel.get(), &wide, args.data(), args.size()), LR_ERROR_INVALID_ARGUMENT);
  CTS_FAILS(lr_launch(nullptr, &cfg, args.data(), args.size()), LR_ERROR_INVALID_ARGUMENT);
  // Nothing ran: y is as it was.
  auto out = download<float>(dy, n);
  check_every(std::span<const float>(out), [&](size_t i) { return y[i]; }, "y untouched");
}

TEST_CASE("lr_launch_block: the header and the arguments in one block, on the default queue and on a queue") {
  Session s;
  CTS_RANDOM(rng);
  auto module = s.load("saxpy");
  auto kernel = module.kernel("saxpy");
  lrrt::Queue queue(s.device());
  for (lr_queue_t* q : {static_cast<lr_queue_t*>(nullptr), queue.get()}) {
    CAPTURE(q != nullptr);
    const uint32_t n = 1000 + uint32_t(rng.uniform(0, 3000));
    auto x = rng.floats(n), y = rng.floats(n);
    const float a = rng.uniform(-3, 3);
    auto dx = upload(s.device(), x), dy = upload(s.device(), y);
    Args args;
    args.add(a).add(dx.data()).add(dy.data()).add(n);
    const auto cfg = config_1d(n, 64);
    std::vector<std::byte> block(sizeof(lr_launch_block_t) + args.size());
    const lr_launch_block_t header{kernel.get(), &cfg, q, args.size()};
    std::memcpy(block.data(), &header, sizeof header);
    std::memcpy(block.data() + sizeof header, args.data(), args.size());
    REQUIRE(lr_launch_block(reinterpret_cast<const lr_launch_block_t*>(block.data())) == LR_SUCCESS);
    if (q) REQUIRE(lr_queue_synchronize(q) == LR_SUCCESS);
    auto out = download<float>(dy, n);
    size_t wrong = 0;
    for (uint32_t i = 0; i < n; ++i) wrong += out[i] != std::fma(a, x[i], y[i]) && out[i] != a * x[i] + y[i];
    CHECK_MESSAGE(wrong == 0, wrong, " of ", n, " wrong");
  }
  // Refused before anything runs: no block, no kernel, no config, short arguments.
  CTS_FAILS(lr_launch_block(nullptr), LR_ERROR_INVALID_ARGUMENT, "block");
  const auto cfg = config_1d(64, 64);
  lr_launch_block_t bare{nullptr, &cfg, nullptr, 0};
  CTS_FAILS(lr_launch_block(&bare), LR_ERROR_INVALID_ARGUMENT);
  bare.kernel = kernel.get();
  bare.config = nullptr;
  CTS_FAILS(lr_launch_block(&bare), LR_ERROR_INVALID_ARGUMENT, "config");
  bare.config = &cfg;
  CTS_FAILS(lr_launch_block(&bare), LR_ERROR_INVALID_ARGUMENT, "28");
}

TEST_CASE("lr_launch_block: a block at any byte alignment is read, and garbage, swapped or stale handles are refused, never followed") {
  Session s;
  CTS_RANDOM(rng);
  auto module = s.load("saxpy");
  auto kernel = module.kernel("saxpy");
  lrrt::Queue queue(s.device());
  const uint32_t n = 500 + uint32_t(rng.uniform(0, 1000));
  auto x = rng.floats(n), y = rng.floats(n);
  const float a = rng.uniform(-3, 3);
  auto dx = upload(s.device(), x), dy = upload(s.device(), y);
  Args args;
  args.add(a).add(dx.data()).add(dy.data()).add(n);
  const auto cfg = config_1d(n, 64);
  // The block as a caller packs it into a byte buffer: at offsets 1 to 7 its
  // 8-byte fields are misaligned (UBSan's alignment check reads the header
  // in place as undefined). Each offset launches y = a * x + y once more.
  std::vector<std::byte> storage(8 + sizeof(lr_launch_block_t) + args.size());
  auto block_at = [&](size_t offset, const lr_launch_block_t& header) {
    std::byte* at = storage.data() + offset;
    std::memcpy(at, &header, sizeof header);
    std::memcpy(at + sizeof header, args.data(), args.size());
    return reinterpret_cast<const lr_launch_block_t*>(at);
  };
  std::vector<float> expect = y;
  for (size_t offset = 0; offset < 8; ++offset) {
    CAPTURE(offset);
    lr_queue_t* q = offset % 2 ? queue.get() : nullptr;
    REQUIRE(lr_launch_block(block_at(offset, {kernel.get(), &cfg, q, args.size()})) == LR_SUCCESS);
    if (q) REQUIRE(lr_queue_synchronize(q) == LR_SUCCESS);
    REQUIRE(lr_synchronize(s.get()) == LR_SUCCESS);
    for (uint32_t i = 0; i < n; ++i) expect[i] = a * x[i] + expect[i];
    auto out = download<float>(dy, n);
    size_t wrong = 0;
    for (uint32_t i = 0; i < n; ++i) wrong += std::fabs(out[i] - expect[i]) > 1e-4f * (1 + std::fabs(expect[i]));
    CHECK_MESSAGE(wrong == 0, wrong, " of ", n, " wrong");
    expect = out;  // the next launch adds to what this one wrote
  }
  // Handles are looked up, never dereferenced first: an address that is no
  // handle (unmapped, odd, another kind of handle) or one destroyed is
  // INVALID_ARGUMENT naming the kind, at any alignment of the block.
  auto* unmapped = reinterpret_cast<void*>(uintptr_t(0xdead0000beef0ull));
  lr_queue_t* destroyed_queue = nullptr;
  REQUIRE(lr_queue_create(s.get(), &destroyed_queue) == LR_SUCCESS);
  REQUIRE(lr_queue_destroy(destroyed_queue) == LR_SUCCESS);
  for (size_t offset : {size_t(0), size_t(3)}) {
    CAPTURE(offset);
    CTS_FAILS(lr_launch_block(block_at(offset, {static_cast<lr_kernel_t*>(unmapped), &cfg, nullptr, args.size()})),
              LR_ERROR_INVALID_ARGUMENT, "kernel handle");
    CTS_FAILS(lr_launch_block(block_at(offset, {reinterpret_cast<lr_kernel_t*>(queue.get()), &cfg, nullptr, args.size()})),
              LR_ERROR_INVALID_ARGUMENT, "kernel handle");
    CTS_FAILS(lr_launch_block(block_at(offset, {kernel.get(), &cfg, static_cast<lr_queue_t*>(unmapped), args.size()})),
              LR_ERROR_INVALID_ARGUMENT, "queue handle");
    CTS_FAILS(lr_launch_block(block_at(offset, {kernel.get(), &cfg, reinterpret_cast<lr_queue_t*>(kernel.get()), args.size()})),
              LR_ERROR_INVALID_ARGUMENT, "queue handle");
    CTS_FAILS(lr_launch_block(block_at(offset, {kernel.get(), &cfg, destroyed_queue, args.size()})), LR_ERROR_INVALID_ARGUMENT,
              "destroyed queue handle");
    // args_size past what the kernel takes (the block holds only 28 bytes):
    // refused before a byte past the header is read.
    for (uint64_t huge : {uint64_t(1) << 40, ~uint64_t(0)})
      CTS_FAILS(lr_launch_block(block_at(offset, {kernel.get(), &cfg, nullptr, huge})), LR_ERROR_INVALID_ARGUMENT, "28");
  }
  // Nothing above ran: y is what the last good launch left.
  REQUIRE(lr_synchronize(s.get()) == LR_SUCCESS);
  auto out = download<float>(dy, n);
  CHECK(out == expect);
}

}  // TEST_SUITE

}  // namespace lrrt::cts

// lrrt::PinnedHostDoubleBuffer: the CPU fills one pinned slot while the
// other slot's copy (on the copy queue) and the kernel of the round before
// (on the default queue) run. A slot handed out again before its last copy
// finished would send a later round's data in an earlier round's place, a
// kernel not ordered after its copy would read the last round's: every
// round's result is checked. A copy must not wait for the other slot's
// kernel (that is the overlap): a gate on the default queue shows it.
#include <cmath>

#include "cts.hpp"

namespace lrrt::cts {

TEST_SUITE("double_buffer") {

TEST_CASE("a double buffer streams rounds of fresh data through copies and launches") {
  Session s;
  CTS_RANDOM(rng);
  auto module = s.load("saxpy");
  auto saxpy = module.kernel("saxpy");
  const uint32_t n = 4099, rounds = 9;
  const size_t bytes = size_t(n) * 4;
  lrrt::PinnedHostDoubleBuffer db(s.device(), bytes);
  CHECK(db.slot_bytes() == bytes);
  lrrt::DeviceBuffer x(s.device(), bytes * rounds);
  std::vector<float> xs, ys, alphas;
  auto y_init = rng.floats(size_t(n) * rounds);
  auto y = upload(s.device(), y_init);
  for (uint32_t r = 0; r < rounds; ++r) {
    auto& slot = db.acquire();
    auto v = rng.floats(n);
    std::memcpy(slot.host.data(), v.data(), bytes);
    auto* x_r = static_cast<char*>(x.data()) + r * bytes;
    db.copy_to_device_async(slot, x_r, bytes);
    // y_r = a x_r + y_r, on the default queue after the copy.
    const float a = rng.uniform(-3, 3);
    Args args;
    args.add(a).add(static_cast<const void*>(x_r)).add(static_cast<void*>(static_cast<char*>(y.data()) + r * bytes)).add(n);
    db.launch_after_copy(slot, saxpy, config_1d(n, 128), args.bytes());
    db.mark_work_submitted(slot);
    xs.insert(xs.end(), v.begin(), v.end());
    alphas.push_back(a);
  }
  db.finish();
  auto x_out = download<float>(x, size_t(n) * rounds);
  check_every(std::span<const float>(x_out), [&](size_t i) { return xs[i]; }, "every round's copy");
  auto y_out = download<float>(y, size_t(n) * rounds);
  size_t wrong = 0, first = 0;
  for (size_t i = 0; i < y_out.size(); ++i) {
    const float a = alphas[i / n], fused = std::fma(a, xs[i], y_init[i]), plain = a * xs[i] + y_init[i];
    if (y_out[i] != fused && y_out[i] != plain && wrong++ == 0) first = i;
  }
  CHECK_MESSAGE(wrong == 0, wrong, " of ", y_out.size(), " saxpy results wrong; first at ", first);

  // A copy larger than a slot is refused before anything is enqueued.
  auto& slot = db.acquire();
  CHECK_THROWS_AS(db.copy_to_device_async(slot, x.data(), bytes + 1), lrrt::Error);
  db.finish();
}

TEST_CASE("a double buffer's copy does not wait for the other slot's kernel") {
  Session s;
  CTS_RANDOM(rng);
  auto module = s.load("saxpy");
  auto saxpy = module.kernel("saxpy");
  const uint32_t n = 2053;
  const size_t bytes = size_t(n) * 4;
  lrrt::PinnedHostDoubleBuffer db(s.device(), bytes);
  lrrt::DeviceBuffer x0(s.device(), bytes), x1(s.device(), bytes);
  auto y_init = rng.floats(n);
  auto y = upload(s.device(), y_init);
  auto v0 = rng.floats(n), v1 = rng.floats(n);
  const float a = rng.uniform(-3, 3);
  Gate gate(s);
  gate.close_on_default_queue();
  // Round 0: its kernel waits behind the gate.
  auto& s0 = db.acquire();
  std::memcpy(s0.host.data(), v0.data(), bytes);
  db.copy_to_device_async(s0, x0.data(), bytes);
  Args args;
  args.add(a).add(static_cast<const void*>(x0.data())).add(y.data()).add(n);
  db.launch_after_copy(s0, saxpy, config_1d(n, 128), args.bytes());
  db.mark_work_submitted(s0);
  // Round 1, the other slot: its copy completes while round 0's kernel is held.
  auto& s1 = db.acquire();
  CHECK(&s1 != &s0);
  std::memcpy(s1.host.data(), v1.data(), bytes);
  db.copy_to_device_async(s1, x1.data(), bytes);
  {
    WaitTimeout limit(20000);
    s1.copied.synchronize();
  }
  std::vector<float> got(n, 0);
  lrrt::check(lr_memcpy_async_with_dependencies(s.device().get(), got.data(), x1.data(), bytes,
                                                LR_MEMCPY_DEVICE_TO_HOST, nullptr, nullptr, 0),
              "lr_memcpy_async_with_dependencies");
  gate.open();
  db.finish();
  check_every(std::span<const float>(got), [&](size_t i) { return v1[i]; }, "round 1's copy, made while round 0's kernel waited");
  auto y_out = download<float>(y, n);
  check_every(std::span<const float>(y_out),
              [&](size_t i) {
                const float fused = std::fma(a, v0[i], y_init[i]);
                return y_out[i] == a * v0[i] + y_init[i] ? y_out[i] : fused;
              },
              "round 0's saxpy, after the gate");
}

}  // TEST_SUITE

}  // namespace lrrt::cts

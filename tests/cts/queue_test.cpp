// Queues, events and dependencies: in-order queues, waits that see all the
// work, events that hold back work on other queues and on the copy path,
// independence where no dependency was asked for, and event timing.
#include "cts.hpp"

namespace lrrt::cts {
namespace {

}  // namespace

TEST_SUITE("queues") {

TEST_CASE("a queue runs its work in order and a synchronize waits for all of it") {
  Session s;
  CTS_RANDOM(rng);
  VectorAddI32 add(s);
  const uint32_t n = backend().long_work_elements(), chain = 40;
  auto a = rng.ints(n), b = rng.ints(n);
  auto da = upload(s.device(), a), db = upload(s.device(), b);
  lrrt::DeviceBuffer dc(s.device(), size_t(n) * 4);
  auto out = poisoned_pinned(s.device(), size_t(n) * 4);
  lrrt::Queue queue(s.device());
  lrrt::Event copied(s.device());
  const auto cfg = config_1d(n, 256);
  // c = a + b, then c += b: the result depends on every launch, in order.
  const Args first = VectorAddI32::args(da.data(), db.data(), dc.data(), n);
  const Args next = VectorAddI32::args(dc.data(), db.data(), dc.data(), n);
  // A spin of 0 blocks at once; 20 us runs out while the work runs; the
  // default spins longer.
  for (uint64_t spin : {uint64_t(0), uint64_t(20), uint64_t(2000)}) {
    for (bool default_queue : {true, false}) {
      CAPTURE(spin);
      CAPTURE(default_queue);
      WaitSpin wait_spin(spin);
      std::memset(out.data(), 0xFF, size_t(n) * 4);
      if (default_queue) {
        lrrt::launch(add.kernel, cfg, first.bytes());
        for (uint32_t i = 1; i < chain; ++i) lrrt::launch(add.kernel, cfg, next.bytes());
        s.device().synchronize();
      } else {
        lrrt::launch(queue, add.kernel, cfg, first.bytes());
        for (uint32_t i = 1; i < chain; ++i) lrrt::launch(queue, add.kernel, cfg, next.bytes());
        queue.synchronize();
      }
      // The copy path has no dependency on the launches: it sees all their
      // results only if the synchronize above waited for every one.
      CTS_OK(lr_memcpy_async_with_dependencies(s.get(), out.data(), dc.data(), size_t(n) * 4,
                                               LR_MEMCPY_DEVICE_TO_HOST, copied.get(), nullptr, 0));
      copied.synchronize();
      const int32_t* c = out.as<int32_t>();
      check_every(std::span<const int32_t>(c, n),
                  [&](size_t i) { return static_cast<int32_t>(uint32_t(a[i]) + chain * uint32_t(b[i])); },
                  "c = a + 40 b");
    }
  }
}

TEST_CASE("an event recorded on one queue holds back dependent work on another") {
  Session s;
  CTS_RANDOM(rng);
  VectorAddI32 add(s);
  const uint32_t n = 1u << 16;
  auto a = rng.ints(n), b = rng.ints(n);
  auto da = upload(s.device(), a), db = upload(s.device(), b);
  lrrt::DeviceBuffer dd(s.device(), size_t(n) * 4);
  auto out = poisoned_pinned(s.device(), size_t(n) * 4);  // written by the kernel directly
  lrrt::Queue q1(s.device()), q2(s.device());
  lrrt::Event start(s.device()), d_ready(s.device()), end(s.device());
  const auto cfg = config_1d(n, 256);
  const Args d_args = VectorAddI32::args(da.data(), db.data(), dd.data(), n);
  const Args out_args = VectorAddI32::args(dd.data(), db.data(), out.data(), n);
  Gate gate(s);

  start.record(q1);
  gate.close_on(q1);
  lrrt::launch(q1, add.kernel, cfg, d_args.bytes());  // d = a + b, behind the gate
  d_ready.record(q1);
  end.record(q1);
  lr_event_t* deps[] = {d_ready.get()};
  CTS_OK(lr_launch_on_queue_with_dependencies(q2.get(), add.kernel.get(), &cfg, out_args.data(), out_args.size(),
                                              deps, 1));  // out = d + b
  check_untouched(out.data(), n, "out while q1 is held");
  gate.open();
  q2.synchronize();
  check_every(std::span<const int32_t>(out.as<int32_t>(), n), [&](size_t i) { return add_i32(add_i32(a[i], b[i]), b[i]); },
              "out = a + 2 b");
  end.synchronize();
  CHECK(end.elapsed_ns_since(start) > 0);
  q1.synchronize();
}

TEST_CASE("copies and launches wait for the events they list") {
  Session s;
  CTS_RANDOM(rng);
  VectorAddI32 add(s);
  const uint32_t n = 1u << 16;
  auto a = rng.ints(n), b = rng.ints(n);
  auto da = upload(s.device(), a), db = upload(s.device(), b);
  lrrt::DeviceBuffer dd(s.device(), size_t(n) * 4);
  auto copied_out = poisoned_pinned(s.device(), size_t(n) * 4);
  auto launched_out = poisoned_pinned(s.device(), size_t(n) * 4);
  lrrt::Queue q1(s.device());
  lrrt::Event d_ready(s.device()), copied(s.device());
  const auto cfg = config_1d(n, 256);
  const Args d_args = VectorAddI32::args(da.data(), db.data(), dd.data(), n);
  const Args out_args = VectorAddI32::args(dd.data(), db.data(), launched_out.data(), n);
  Gate gate(s);

  gate.close_on(q1);
  lrrt::launch(q1, add.kernel, cfg, d_args.bytes());  // d = a + b
  d_ready.record(q1);
  lr_event_t* deps[] = {d_ready.get()};
  // The copy path and the default queue, each after d_ready only.
  CTS_OK(lr_memcpy_async_with_dependencies(s.get(), copied_out.data(), dd.data(), size_t(n) * 4,
                                           LR_MEMCPY_DEVICE_TO_HOST, copied.get(), deps, 1));
  CTS_OK(lr_launch_with_dependencies(add.kernel.get(), &cfg, out_args.data(), out_args.size(), deps, 1));
  check_untouched(copied_out.data(), n, "the copy's destination while q1 is held");
  check_untouched(launched_out.data(), n, "the launch's output while q1 is held");
  gate.open();
  copied.synchronize();
  s.device().synchronize();
  check_every(std::span<const int32_t>(copied_out.as<int32_t>(), n), [&](size_t i) { return add_i32(a[i], b[i]); },
              "copied d = a + b");
  check_every(std::span<const int32_t>(launched_out.as<int32_t>(), n),
              [&](size_t i) { return add_i32(add_i32(a[i], b[i]), b[i]); }, "launched out = a + 2 b");
}

TEST_CASE("work without a dependency does not wait for a held queue") {
  Session s;
  CTS_RANDOM(rng);
  VectorAddI32 add(s);
  const uint32_t n = 1u << 16;
  auto a = rng.ints(n), b = rng.ints(n);
  auto da = upload(s.device(), a), db = upload(s.device(), b);
  auto out = poisoned_pinned(s.device(), size_t(n) * 4);
  auto pinned_a = poisoned_pinned(s.device(), size_t(n) * 4);
  std::memcpy(pinned_a.data(), a.data(), size_t(n) * 4);
  lrrt::DeviceBuffer dc(s.device(), size_t(n) * 4);
  auto copied_back = poisoned_pinned(s.device(), size_t(n) * 4);
  lrrt::Queue held(s.device()), free_queue(s.device());
  lrrt::Event up(s.device()), down(s.device());
  const auto cfg = config_1d(n, 256);
  const Args out_args = VectorAddI32::args(da.data(), db.data(), out.data(), n);
  // A broken independence fails here instead of hanging the suite.
  WaitTimeout bound(120'000);
  Gate gate(s);

  gate.close_on(held);
  gate.close_on_default_queue();
  // Another queue runs and finishes while `held` and the default queue spin.
  lrrt::launch(free_queue, add.kernel, cfg, out_args.bytes());
  free_queue.synchronize();
  check_every(std::span<const int32_t>(out.as<int32_t>(), n), [&](size_t i) { return add_i32(a[i], b[i]); },
              "out = a + b on the free queue");
  // So does the copy path, which has no implicit dependency on earlier launches.
  CTS_OK(lr_memcpy_async_with_dependencies(s.get(), dc.data(), pinned_a.data(), size_t(n) * 4,
                                           LR_MEMCPY_HOST_TO_DEVICE, up.get(), nullptr, 0));
  lr_event_t* after_up[] = {up.get()};
  CTS_OK(lr_memcpy_async_with_dependencies(s.get(), copied_back.data(), dc.data(), size_t(n) * 4,
                                           LR_MEMCPY_DEVICE_TO_HOST, down.get(), after_up, 1));
  down.synchronize();
  check_every(std::span<const int32_t>(copied_back.as<int32_t>(), n), [&](size_t i) { return a[i]; },
              "a through the copy path");
  gate.open();
  s.device().synchronize();
}

TEST_CASE("lr_memcpy_async follows earlier launches and precedes later ones on the default queue") {
  Session s;
  CTS_RANDOM(rng);
  VectorAddI32 add(s);
  const uint32_t n = 1u << 16;
  auto a = rng.ints(n), b = rng.ints(n), a2 = rng.ints(n);
  auto da = upload(s.device(), a), db = upload(s.device(), b);
  lrrt::DeviceBuffer dc(s.device(), size_t(n) * 4);
  auto out = poisoned_pinned(s.device(), size_t(n) * 4);
  auto new_a = poisoned_pinned(s.device(), size_t(n) * 4);
  std::memcpy(new_a.data(), a2.data(), size_t(n) * 4);
  lrrt::Event copied(s.device());
  const auto cfg = config_1d(n, 256);
  const Args c_args = VectorAddI32::args(da.data(), db.data(), dc.data(), n);
  Gate gate(s);

  gate.close_on_default_queue();
  lrrt::launch(add.kernel, cfg, c_args.bytes());  // c = a + b
  CTS_OK(lr_memcpy_async(s.get(), out.data(), dc.data(), size_t(n) * 4, LR_MEMCPY_DEVICE_TO_HOST, copied.get()));
  check_untouched(out.data(), n, "the copy's destination while the default queue is held");
  gate.open();
  copied.synchronize();
  check_every(std::span<const int32_t>(out.as<int32_t>(), n), [&](size_t i) { return add_i32(a[i], b[i]); },
              "c = a + b, copied after the launch");

  // A new a goes up, c = a + b runs on it, c comes back: each step after the last.
  std::memset(out.data(), 0xFF, size_t(n) * 4);
  CTS_OK(lr_memcpy_async(s.get(), da.data(), new_a.data(), size_t(n) * 4, LR_MEMCPY_HOST_TO_DEVICE, nullptr));
  lrrt::launch(add.kernel, cfg, c_args.bytes());
  CTS_OK(lr_memcpy_async(s.get(), out.data(), dc.data(), size_t(n) * 4, LR_MEMCPY_DEVICE_TO_HOST, copied.get()));
  copied.synchronize();
  check_every(std::span<const int32_t>(out.as<int32_t>(), n), [&](size_t i) { return add_i32(a2[i], b[i]); },
              "c = a' + b");
}

TEST_CASE("an event recorded again while its last record is pending completes after the later work") {
  Session s;
  CTS_RANDOM(rng);
  VectorAddI32 add(s);
  const uint32_t n = backend().long_work_elements();
  auto a = rng.ints(n), b = rng.ints(n);
  auto da = upload(s.device(), a), db = upload(s.device(), b);
  auto out = poisoned_pinned(s.device(), size_t(n) * 4);  // written by the kernel directly
  lrrt::Queue queue(s.device());
  lrrt::Event again(s.device()), after(s.device());
  Gate gate(s);

  const uint32_t chain = 20;  // out = a + b, then out += b: work that takes a while
  gate.close_on(queue);
  again.record(queue);  // pending behind the gate
  lrrt::launch(queue, add.kernel, config_1d(n, 256), VectorAddI32::args(da.data(), db.data(), out.data(), n).bytes());
  for (uint32_t i = 1; i < chain; ++i)
    lrrt::launch(queue, add.kernel, config_1d(n, 256), VectorAddI32::args(out.data(), db.data(), out.data(), n).bytes());
  again.record(queue);  // now it marks the end of the launches
  after.record(queue);  // a new marker after both
  gate.open();
  after.synchronize();
  // Read from the end: were `after` to complete early (with the first
  // record's packet), the launches would still be running.
  std::vector<int32_t> got(n);
  const volatile int32_t* written = out.as<int32_t>();
  for (size_t i = n; i-- > 0;) got[i] = written[i];
  check_every(std::span<const int32_t>(got),
              [&](size_t i) { return static_cast<int32_t>(uint32_t(a[i]) + chain * uint32_t(b[i])); },
              "out = a + 20 b, done before the marker after it");
  again.synchronize();
  queue.synchronize();
}

TEST_CASE("events time spans of work and single copies") {
  Session s;
  CTS_RANDOM(rng);
  VectorAddI32 add(s);
  const uint32_t n = 1u << 16;
  auto a = rng.ints(n), b = rng.ints(n);
  auto da = upload(s.device(), a), db = upload(s.device(), b);
  lrrt::DeviceBuffer dc(s.device(), size_t(n) * 4);
  auto out = poisoned_pinned(s.device(), size_t(n) * 4);
  lrrt::Queue queue(s.device());
  lrrt::Event start(s.device()), end(s.device()), copied(s.device()), never(s.device());
  const auto cfg = config_1d(n, 256);

  start.record(queue);
  lrrt::launch(queue, add.kernel, cfg, VectorAddI32::args(da.data(), db.data(), dc.data(), n).bytes());
  end.record(queue);
  end.synchronize();
  CHECK(end.elapsed_ns_since(start) > 0);
  // Re-recording an event that completed makes it pending again.
  end.record(queue);
  end.synchronize();
  CHECK(end.elapsed_ns_since(start) > 0);

  CTS_OK(lr_memcpy_async(s.get(), out.data(), dc.data(), size_t(n) * 4, LR_MEMCPY_DEVICE_TO_HOST, copied.get()));
  copied.synchronize();
  check_every(std::span<const int32_t>(out.as<int32_t>(), n), [&](size_t i) { return add_i32(a[i], b[i]); },
              "c = a + b");
  CHECK(copied.duration_ns() > 0);

  uint64_t ns = 0;
  lr_status_t marker = lr_event_duration_ns(start.get(), &ns);
  if (backend().expectations().marker_has_duration)
    CHECK_MESSAGE(marker == LR_SUCCESS, text(lr_status_string(marker)), ": ", text(lr_last_error_message()));
  else
    CTS_FAILS(lr_event_duration_ns(start.get(), &ns), LR_ERROR_NOT_SUPPORTED);

  // An event never recorded: nothing to wait for, nothing to time.
  CTS_OK(lr_event_synchronize(never.get()));
  CTS_FAILS(lr_event_elapsed_time_ns(start.get(), never.get(), &ns), LR_ERROR_INVALID_ARGUMENT, "recorded");
  CTS_FAILS(lr_event_duration_ns(never.get(), &ns), LR_ERROR_INVALID_ARGUMENT);
}

}  // TEST_SUITE

}  // namespace lrrt::cts

// The C ABI called from several threads at once (the contract in lrrt.h,
// "Threads"): waits that return only when the work they cover is done, even
// while another thread waits for the same work; handles destroyed by one
// thread while another drains the device; first copies racing for the
// device's copy queue; graph replays beside other threads' copies on the same
// queue; and a stress case that mixes everything, every result checked.
//
// Where a case needs one thread inside a wait before another starts, it
// sleeps to let it get there: the sleep only makes the old bug show, the
// checks never depend on it (with the runtime right they pass whatever the
// schedule).
#include <atomic>
#include <chrono>
#include <deque>
#include <latch>
#include <mutex>
#include <optional>
#include <thread>

#include "cts.hpp"

namespace lrrt::cts {
namespace {

// Failures seen on worker threads (doctest's REQUIRE cannot end a test from
// one), checked on the test's thread after the join.
class ThreadFailures {
 public:
  void add(std::string what) {
    std::lock_guard lock(mutex_);
    failures_.push_back(std::move(what));
  }
  // lr_* status checked; false (and the message kept) when it failed.
  bool ok(lr_status_t status, const char* call) {
    if (status == LR_SUCCESS) return true;
    add(std::string(call) + " -> " + lr_status_string(status) + ": " + text(lr_last_error_message()));
    return false;
  }
  void check() {
    std::lock_guard lock(mutex_);
    std::string first;
    for (size_t i = 0; i < failures_.size() && i < 5; ++i) first += "\n  " + failures_[i];
    CHECK_MESSAGE(failures_.empty(), failures_.size(), " failure(s) on worker threads:", first);
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> failures_;
};
#define THREADS_OK(failures, call) (failures).ok((call), #call)

// Every element of `got` is a[i] + b[i]; a failure message otherwise.
std::optional<std::string> threads_wrong_sum(const int32_t* got, const std::vector<int32_t>& a,
                                             const std::vector<int32_t>& b, const char* what) {
  size_t wrong = 0, first = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (got[i] != add_i32(a[i], b[i]) && wrong++ == 0) first = i;
  if (!wrong) return std::nullopt;
  return std::string(what) + ": " + std::to_string(wrong) + " of " + std::to_string(a.size()) +
         " elements wrong; first at " + std::to_string(first) + ": got " + std::to_string(got[first]) + ", want " +
         std::to_string(add_i32(a[first], b[first]));
}

void threads_settle() { std::this_thread::sleep_for(std::chrono::milliseconds(150)); }

enum class SecondWait { Device, Queue, Memcpy };

}  // namespace

TEST_SUITE("threads") {

TEST_CASE("a wait returns only after the work it covers, while another thread waits for the same work") {
  for (SecondWait how : {SecondWait::Device, SecondWait::Queue, SecondWait::Memcpy}) {
    CAPTURE(static_cast<int>(how));
    Session s;
    CTS_RANDOM(rng);
    VectorAddI32 add(s);
    const uint32_t n = 4096 + 3;
    auto a = rng.ints(n), b = rng.ints(n);
    auto da = upload(s.device(), a), db = upload(s.device(), b);
    auto dc = poisoned(s.device(), size_t(n) * 4);
    auto out = poisoned_pinned(s.device(), size_t(n) * 4);  // written by the kernel directly
    lrrt::Queue queue(s.device());
    Gate gate(s);
    const bool on_queue = how == SecondWait::Queue;
    const Args to_host = VectorAddI32::args(da.data(), db.data(), out.data(), n);
    const Args to_device = VectorAddI32::args(da.data(), db.data(), dc.data(), n);
    if (on_queue) {
      gate.close_on(queue);
      lrrt::launch(queue, add.kernel, config_1d(n, 64), to_host.bytes());
    } else {
      gate.close_on_default_queue();
      lrrt::launch(add.kernel, config_1d(n, 64), to_host.bytes());
      lrrt::launch(add.kernel, config_1d(n, 64), to_device.bytes());
    }
    auto wait = [&] { return on_queue ? lr_queue_synchronize(queue.get()) : lr_synchronize(s.get()); };
    // The first waiter gets into its wait; then the second one waits for
    // the same work and looks at the results as soon as it returns.
    std::atomic<lr_status_t> first_status{LR_ERROR_RUNTIME}, second_status{LR_ERROR_RUNTIME};
    std::vector<uint32_t> seen;
    std::vector<int32_t> copied(n, -1);
    std::thread first([&] { first_status = wait(); });
    threads_settle();
    std::thread second([&] {
      if (how == SecondWait::Memcpy)
        second_status = lr_memcpy(s.get(), copied.data(), dc.data(), size_t(n) * 4, LR_MEMCPY_DEVICE_TO_HOST);
      else
        second_status = wait();
      seen = snapshot(out.data(), n);
    });
    threads_settle();
    gate.open();
    first.join();
    second.join();
    CHECK(first_status.load() == LR_SUCCESS);
    CHECK(second_status.load() == LR_SUCCESS);
    check_every(std::span<const int32_t>(reinterpret_cast<const int32_t*>(seen.data()), n),
                [&](size_t i) { return add_i32(a[i], b[i]); }, "what the second waiter saw when it returned");
    if (how == SecondWait::Memcpy)
      check_every(std::span<const int32_t>(copied), [&](size_t i) { return add_i32(a[i], b[i]); },
                  "what lr_memcpy copied behind the gated launch");
  }
}

TEST_CASE("a queue and a graph exec destroyed while another thread's lr_synchronize waits") {
  Session s;
  CTS_RANDOM(rng);
  VectorAddI32 add(s);
  const uint32_t n = 2048 + 5;
  auto a = rng.ints(n), b = rng.ints(n);
  auto da = upload(s.device(), a), db = upload(s.device(), b);
  auto on_queue = poisoned(s.device(), size_t(n) * 4);
  auto by_graph = poisoned(s.device(), size_t(n) * 4);
  auto cfg = config_1d(n, 64);
  lr_graph_t* graph = nullptr;
  CTS_OK(lr_graph_create(s.get(), &graph));
  const Args graph_args = VectorAddI32::args(da.data(), db.data(), by_graph.data(), n);
  const lr_graph_access_t accesses[] = {lrrt::read_access(da), lrrt::read_access(db), lrrt::write_access(by_graph)};
  CTS_OK(lr_graph_add_kernel(graph, add.kernel.get(), &cfg, graph_args.data(), graph_args.size(), accesses, 3,
                             nullptr));
  lr_graph_exec_t* exec = nullptr;
  CTS_OK(lr_graph_instantiate(graph, nullptr, &exec));
  CTS_OK(lr_graph_destroy(graph));
  lr_queue_t* queue = nullptr;
  CTS_OK(lr_queue_create(s.get(), &queue));
  Gate gate(s);
  // The drain waits for the default queue first, held by the gate; the
  // queue and the exec have work it has not waited for yet.
  gate.close_on_default_queue();
  const Args queue_args = VectorAddI32::args(da.data(), db.data(), on_queue.data(), n);
  CTS_OK(lr_launch_on_queue(queue, add.kernel.get(), &cfg, queue_args.data(), queue_args.size()));
  CTS_OK(lr_graph_exec_launch(exec, queue));
  std::atomic<lr_status_t> drained{LR_ERROR_RUNTIME};
  std::string drain_message;
  std::thread drainer([&] {
    drained = lr_synchronize(s.get());
    drain_message = text(lr_last_error_message());
  });
  threads_settle();
  CTS_OK(lr_graph_exec_destroy(exec));
  CTS_OK(lr_queue_destroy(queue));
  // New handles may take the freed memory.
  for (int i = 0; i < 4; ++i) {
    lrrt::Queue other(s.device());
    lrrt::launch(other, add.kernel, cfg, queue_args.bytes());
  }
  gate.open();
  drainer.join();
  CHECK_MESSAGE(drained.load() == LR_SUCCESS, drain_message);
  auto got = download<int32_t>(on_queue, n);
  check_every(std::span<const int32_t>(got), [&](size_t i) { return add_i32(a[i], b[i]); }, "the queue's launch");
  got = download<int32_t>(by_graph, n);
  check_every(std::span<const int32_t>(got), [&](size_t i) { return add_i32(a[i], b[i]); }, "the replay");
}

TEST_CASE("first copies from several threads at once") {
  Session s;
  CTS_RANDOM(rng);
  constexpr int kThreads = 4;
  const uint32_t n = 16384 + 7;
  std::vector<std::vector<uint32_t>> inputs;
  for (int t = 0; t < kThreads; ++t) inputs.push_back(rng.words(n));
  ThreadFailures failures;
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        lrrt::PinnedHostBuffer in(s.device(), size_t(n) * 4), out(s.device(), size_t(n) * 4);
        std::memcpy(in.data(), inputs[t].data(), size_t(n) * 4);
        std::memset(out.data(), 0xFF, size_t(n) * 4);
        lrrt::DeviceBuffer x(s.device(), size_t(n) * 4), y(s.device(), size_t(n) * 4);
        std::vector<uint32_t> pageable(n, kPoisonWord);
        start.arrive_and_wait();
        // Pinned, device-to-device and pageable copies: the device's copy
        // queue and the staging path, made by whichever thread comes first.
        if (!THREADS_OK(failures, lr_memcpy(s.get(), x.data(), in.data(), size_t(n) * 4, LR_MEMCPY_HOST_TO_DEVICE)))
          return;
        if (!THREADS_OK(failures, lr_memcpy(s.get(), y.data(), x.data(), size_t(n) * 4, LR_MEMCPY_DEVICE_TO_DEVICE)))
          return;
        if (!THREADS_OK(failures, lr_memcpy(s.get(), out.data(), y.data(), size_t(n) * 4, LR_MEMCPY_DEVICE_TO_HOST)))
          return;
        if (!THREADS_OK(failures, lr_memcpy(s.get(), pageable.data(), y.data(), size_t(n) * 4,
                                            LR_MEMCPY_DEVICE_TO_HOST)))
          return;
        if (std::memcmp(out.data(), inputs[t].data(), size_t(n) * 4) != 0)
          failures.add("thread " + std::to_string(t) + ": the pinned round trip differs");
        if (pageable != inputs[t]) failures.add("thread " + std::to_string(t) + ": the pageable round trip differs");
      } catch (const std::exception& e) {
        failures.add(e.what());
      }
    });
  }
  for (auto& th : threads) th.join();
  failures.check();
}

TEST_CASE("graph replays with a copy, beside another thread's copies and launches on the same queue") {
  Session s;
  CTS_RANDOM(rng);
  VectorAddI32 add(s);
  const uint32_t n = 4096 + 9;
  const int rounds = 25;
  const auto cfg = config_1d(n, 64);
  // The graph: a root copy (pinned -> x), x + b -> z, z -> pinned out.
  auto b = rng.ints(n);
  auto db = upload(s.device(), b);
  lrrt::DeviceBuffer gx(s.device(), size_t(n) * 4), gz(s.device(), size_t(n) * 4);
  lrrt::PinnedHostBuffer gin(s.device(), size_t(n) * 4), gout(s.device(), size_t(n) * 4);
  lr_graph_t* graph = nullptr;
  CTS_OK(lr_graph_create(s.get(), &graph));
  lr_graph_node_t copy_in = 0, kernel = 0, copy_out = 0;
  CTS_OK(lr_graph_add_copy(graph, gx.data(), gin.data(), size_t(n) * 4, LR_MEMCPY_HOST_TO_DEVICE, &copy_in));
  const Args graph_args = VectorAddI32::args(gx.data(), db.data(), gz.data(), n);
  const lr_graph_access_t accesses[] = {lrrt::read_access(gx), lrrt::read_access(db), lrrt::write_access(gz)};
  CTS_OK(lr_graph_add_kernel(graph, add.kernel.get(), &cfg, graph_args.data(), graph_args.size(), accesses, 3,
                             &kernel));
  CTS_OK(lr_graph_add_copy(graph, gout.data(), gz.data(), size_t(n) * 4, LR_MEMCPY_DEVICE_TO_HOST, &copy_out));
  lr_graph_exec_t* exec = nullptr;
  CTS_OK(lr_graph_instantiate(graph, nullptr, &exec));
  CTS_OK(lr_graph_destroy(graph));
  std::vector<std::vector<int32_t>> graph_inputs, other_inputs;
  for (int r = 0; r < rounds; ++r) {
    graph_inputs.push_back(rng.ints(n));
    other_inputs.push_back(rng.ints(n));
  }
  ThreadFailures failures;
  std::thread replays([&] {
    for (int r = 0; r < rounds; ++r) {
      std::memcpy(gin.data(), graph_inputs[r].data(), size_t(n) * 4);
      std::memset(gout.data(), 0xFF, size_t(n) * 4);
      if (!THREADS_OK(failures, lr_graph_exec_launch(exec, nullptr))) return;
      if (!THREADS_OK(failures, lr_graph_exec_synchronize(exec))) return;
      if (auto bad = threads_wrong_sum(gout.as<int32_t>(), graph_inputs[r], b, "a replay")) return failures.add(*bad);
    }
  });
  std::thread others([&] {
    try {
      lrrt::DeviceBuffer p(s.device(), size_t(n) * 4), q(s.device(), size_t(n) * 4);
      lrrt::PinnedHostBuffer pin(s.device(), size_t(n) * 4), pout(s.device(), size_t(n) * 4);
      lrrt::Event done(s.device());
      const Args args = VectorAddI32::args(p.data(), db.data(), q.data(), n);
      for (int r = 0; r < rounds; ++r) {
        std::memcpy(pin.data(), other_inputs[r].data(), size_t(n) * 4);
        std::memset(pout.data(), 0xFF, size_t(n) * 4);
        if (!THREADS_OK(failures, lr_memcpy_async(s.get(), p.data(), pin.data(), size_t(n) * 4,
                                                  LR_MEMCPY_HOST_TO_DEVICE, nullptr)))
          return;
        if (!THREADS_OK(failures, lr_launch(add.kernel.get(), &cfg, args.data(), args.size()))) return;
        if (!THREADS_OK(failures, lr_memcpy_async(s.get(), pout.data(), q.data(), size_t(n) * 4,
                                                  LR_MEMCPY_DEVICE_TO_HOST, done.get())))
          return;
        if (!THREADS_OK(failures, lr_event_synchronize(done.get()))) return;
        if (auto bad = threads_wrong_sum(pout.as<int32_t>(), other_inputs[r], b, "the other thread's launch"))
          return failures.add(*bad);
      }
    } catch (const std::exception& e) {
      failures.add(e.what());
    }
  });
  replays.join();
  others.join();
  failures.check();
  CTS_OK(lr_graph_exec_destroy(exec));
}

TEST_CASE("stress: threads allocate, copy, load modules, launch, record, replay and destroy at once") {
  Session s;
  CTS_RANDOM(rng);
  constexpr int kThreads = 4;
  constexpr int kRounds = 8;
  const std::vector<std::byte> image = read_file(kernel_dir() + "/" + backend().kernel_file("vector_add"));
  // Work one thread started and another finishes: it synchronizes the queue,
  // checks the result and destroys everything.
  struct Handoff {
    int from = 0;
    lr_module_t* module = nullptr;
    lr_queue_t* queue = nullptr;
    lr_event_t* event = nullptr;
    lr_graph_exec_t* exec = nullptr;
    void* a = nullptr;
    void* b = nullptr;
    void* c = nullptr;
    std::vector<int32_t> ha, hb;
  };
  std::mutex mailbox_mutex;
  std::deque<Handoff> mailbox;
  std::vector<uint64_t> seeds;
  for (int t = 0; t < kThreads; ++t) seeds.push_back(rng.engine()());
  ThreadFailures failures;
  auto finish = [&](Handoff& h) {
    const size_t bytes = h.ha.size() * 4;
    bool ok = THREADS_OK(failures, lr_queue_synchronize(h.queue));
    std::vector<int32_t> got(h.ha.size(), -1);
    ok = ok && THREADS_OK(failures, lr_memcpy(s.get(), got.data(), h.c, bytes, LR_MEMCPY_DEVICE_TO_HOST));
    if (ok)
      if (auto bad = threads_wrong_sum(got.data(), h.ha, h.hb, "work finished by another thread")) failures.add(*bad);
    THREADS_OK(failures, lr_graph_exec_destroy(h.exec));
    THREADS_OK(failures, lr_event_destroy(h.event));
    THREADS_OK(failures, lr_queue_destroy(h.queue));
    THREADS_OK(failures, lr_module_destroy(h.module));
    for (void* p : {h.a, h.b, h.c}) THREADS_OK(failures, lr_free(s.get(), p));
  };
  auto worker = [&](int t) {
    std::mt19937_64 engine(seeds[t]);
    std::uniform_int_distribution<int32_t> value(INT32_MIN, INT32_MAX);
    for (int r = 0; r < kRounds; ++r) {
      const uint32_t n = 1000 + uint32_t(engine() % 4000);
      const size_t bytes = size_t(n) * 4;
      Handoff h;
      h.from = t;
      h.ha.resize(n);
      h.hb.resize(n);
      for (uint32_t i = 0; i < n; ++i) h.ha[i] = value(engine), h.hb[i] = value(engine);
      if (!THREADS_OK(failures, lr_module_load(s.get(), image.data(), image.size(), &h.module))) return;
      lr_kernel_t* kernel = nullptr;
      if (!THREADS_OK(failures, lr_kernel_get(h.module, "vector_add_i32", &kernel))) return;
      void *d = nullptr, *e = nullptr;
      for (void** p : {&h.a, &h.b, &h.c, &d, &e})
        if (!THREADS_OK(failures, lr_malloc(s.get(), bytes, p))) return;
      if (!THREADS_OK(failures, lr_memcpy(s.get(), h.a, h.ha.data(), bytes, LR_MEMCPY_HOST_TO_DEVICE))) return;
      if (!THREADS_OK(failures, lr_memcpy(s.get(), h.b, h.hb.data(), bytes, LR_MEMCPY_HOST_TO_DEVICE))) return;
      lr_memory_stats_t stats{};
      if (!THREADS_OK(failures, lr_get_memory_stats(s.get(), &stats))) return;
      // Other threads allocate and free meanwhile; these hold whatever they do.
      if (stats.live_bytes < 5 * bytes || stats.allocation_count < stats.free_count + 5 ||
          stats.total_allocated_bytes - stats.total_freed_bytes != stats.live_bytes)
        failures.add("memory statistics inconsistent: live " + std::to_string(stats.live_bytes) + ", allocated " +
                     std::to_string(stats.total_allocated_bytes) + ", freed " +
                     std::to_string(stats.total_freed_bytes));
      const auto cfg = config_1d(n, 64);
      const Args to_c = VectorAddI32::args(h.a, h.b, h.c, n);
      const Args to_d = VectorAddI32::args(h.a, h.b, d, n);
      const Args to_e = VectorAddI32::args(h.a, h.b, e, n);
      if (!THREADS_OK(failures, lr_queue_create(s.get(), &h.queue))) return;
      if (!THREADS_OK(failures, lr_event_create(s.get(), &h.event))) return;
      // d on the default queue, after an event recorded on the thread's own queue.
      if (!THREADS_OK(failures, lr_launch_on_queue(h.queue, kernel, &cfg, to_d.data(), to_d.size()))) return;
      if (!THREADS_OK(failures, lr_event_record_on_queue(h.event, h.queue))) return;
      if (!THREADS_OK(failures, lr_launch_with_dependencies(kernel, &cfg, to_d.data(), to_d.size(), &h.event, 1)))
        return;
      // e by a replay on the thread's queue.
      lr_graph_t* graph = nullptr;
      if (!THREADS_OK(failures, lr_graph_create(s.get(), &graph))) return;
      const lr_graph_access_t accesses[] = {lrrt::read_access(h.a), lrrt::read_access(h.b), lrrt::write_access(e)};
      bool built = THREADS_OK(failures, lr_graph_add_kernel(graph, kernel, &cfg, to_e.data(), to_e.size(), accesses,
                                                            3, nullptr)) &&
                   THREADS_OK(failures, lr_graph_instantiate(graph, nullptr, &h.exec));
      THREADS_OK(failures, lr_graph_destroy(graph));
      if (!built) return;
      if (!THREADS_OK(failures, lr_graph_exec_launch(h.exec, h.queue))) return;
      if (!THREADS_OK(failures, lr_synchronize(s.get()))) return;
      std::vector<int32_t> got(n, -1);
      for (auto [p, what] : {std::pair<void*, const char*>{d, "the default queue's launch"}, {e, "the replay"}}) {
        std::fill(got.begin(), got.end(), -1);
        if (!THREADS_OK(failures, lr_memcpy(s.get(), got.data(), p, bytes, LR_MEMCPY_DEVICE_TO_HOST))) return;
        if (auto bad = threads_wrong_sum(got.data(), h.ha, h.hb, what)) failures.add(*bad);
      }
      if (!THREADS_OK(failures, lr_free(s.get(), d)) || !THREADS_OK(failures, lr_free(s.get(), e))) return;
      // c is left running on the queue, for whichever thread takes it.
      if (!THREADS_OK(failures, lr_launch_on_queue(h.queue, kernel, &cfg, to_c.data(), to_c.size()))) return;
      std::optional<Handoff> taken;
      {
        std::lock_guard lock(mailbox_mutex);
        mailbox.push_back(std::move(h));
        if (mailbox.size() > 1) {
          taken = std::move(mailbox.front());
          mailbox.pop_front();
        }
      }
      if (taken) finish(*taken);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (auto& th : threads) th.join();
  for (auto& h : mailbox) finish(h);
  failures.check();
  lr_memory_stats_t stats{};
  CTS_OK(lr_get_memory_stats(s.get(), &stats));
  CHECK(stats.live_bytes == 0);
  CHECK(stats.allocation_count == stats.free_count);
}

}  // TEST_SUITE

}  // namespace lrrt::cts

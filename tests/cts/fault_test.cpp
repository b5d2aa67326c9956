// Kernels that fail and kernels that do not finish. ctest runs each suite in
// its own process: on cuda a fault loses the CUDA context for the process.
//  - faults: LR_ERROR_KERNEL_FAULT at the next synchronizing call, naming the
//    kernel; then either the device runs new work (the error is reported
//    once) or every later call fails, as the backend documents.
//  - hangs: a wait returns LR_ERROR_TIMEOUT once lr_set_wait_timeout_ms
//    passes, saying so; the work is not lost (nor the memory it may use:
//    lr_free times out too and keeps it), and when the kernel ends the
//    device carries on.
#include <cmath>

#include "cts.hpp"

namespace lrrt::cts {
namespace {

// saxpy on fresh inputs through `queue` (or the default queue), every element checked.
void check_saxpy_runs(const Session& s, Random& rng, const lrrt::Kernel& saxpy, const lrrt::Queue* queue) {
  const uint32_t n = 4096 + 17;
  auto x = rng.floats(n), y = rng.floats(n);
  auto dx = upload(s.device(), x), dy = upload(s.device(), y);
  const float a = rng.uniform(-3, 3);
  Args args;
  args.add(a).add(dx.data()).add(dy.data()).add(n);
  if (queue) {
    lrrt::launch(*queue, saxpy, config_1d(n, 64), args.bytes());
    queue->synchronize();
  } else {
    lrrt::launch(saxpy, config_1d(n, 64), args.bytes());
  }
  auto out = download<float>(dy, n);
  size_t wrong = 0;
  for (uint32_t i = 0; i < n; ++i) wrong += out[i] != std::fma(a, x[i], y[i]) && out[i] != a * x[i] + y[i];
  CHECK_MESSAGE(wrong == 0, wrong, " of ", n, " saxpy results wrong after the fault");
}

// Runs a faulting launch on `queue` (or the default queue) and checks how the
// next synchronizing call reports it.
void check_fault_reported(const Session& s, const lrrt::Queue* queue) {
  const auto expect = backend().expectations();
  auto fault = backend().faulting_launch(s);
  // Asynchronous: the launch itself succeeds.
  if (queue)
    CTS_OK(lr_launch_on_queue(queue->get(), fault.kernel.get(), &fault.config, fault.args.data(), fault.args.size()));
  else
    CTS_OK(lr_launch(fault.kernel.get(), &fault.config, fault.args.data(), fault.args.size()));
  const lr_status_t status = queue ? lr_queue_synchronize(queue->get()) : lr_synchronize(s.get());
  const std::string message = lr_last_error_message();
  if (fault.undo) fault.undo();
  CHECK_MESSAGE(status == LR_ERROR_KERNEL_FAULT, text(lr_status_string(status)), ": ", message);
  CHECK_MESSAGE(message.find("'" + fault.kernel_name + "'") != std::string::npos, "the message does not name '",
                fault.kernel_name, "': ", message);
  for (const auto& word : expect.fault_message_words)
    CHECK_MESSAGE(message.find(word) != std::string::npos, "the message does not mention '", word, "': ", message);
  MESSAGE(message);
}

}  // namespace

TEST_SUITE("faults") {

TEST_CASE("a faulting kernel is reported at the next synchronize, naming it") {
  Session s;
  CTS_RANDOM(rng);
  // Everything the checks after the fault need exists before it.
  auto module = s.load("saxpy");
  auto saxpy = module.kernel("saxpy");
  lrrt::Queue queue(s.device());
  check_fault_reported(s, nullptr);
  if (backend().expectations().device_usable_after_fault) {
    // Reported once; then the device, and a queue, run new work, and a
    // fault on a queue is that queue's to report.
    CTS_OK(lr_synchronize(s.get()));
    check_saxpy_runs(s, rng, saxpy, nullptr);
    check_saxpy_runs(s, rng, saxpy, &queue);
    check_fault_reported(s, &queue);
    CTS_OK(lr_queue_synchronize(queue.get()));
    CTS_OK(lr_synchronize(s.get()));
    check_saxpy_runs(s, rng, saxpy, &queue);
  } else {
    // The device is lost: later calls fail instead of hanging or succeeding,
    // and shutdown (the session's end) returns.
    const uint32_t n = 256;
    std::vector<float> host(n, 1.f);
    void* p = nullptr;
    lr_status_t malloc_status = lr_malloc(s.get(), n * 4, &p);
    lr_status_t copy_status = malloc_status == LR_SUCCESS
                                  ? lr_memcpy(s.get(), p, host.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE)
                                  : malloc_status;
    CHECK_MESSAGE(copy_status != LR_SUCCESS, "the device still copies after a fault");
    CHECK(lr_synchronize(s.get()) != LR_SUCCESS);
    MESSAGE("after the fault: ", text(lr_status_string(copy_status)), ": ", text(lr_last_error_message()));
    if (p) (void)lr_free(s.get(), p);
  }
}

TEST_CASE("faults one after another on the same worker thread are each reported"
          * doctest::skip(!backend().expectations().device_usable_after_fault)) {
  // One host worker thread, so every fault lands on the same one: its
  // recovery must leave its signal mask as it was, or the next fault kills
  // the process (host's sigsetjmp without the mask, seen under TSan).
  // Other backends ignore the variable.
  struct OneHostThread {
    OneHostThread() { ::setenv("LRRT_HOST_THREADS", "1", 1); }
    ~OneHostThread() { ::unsetenv("LRRT_HOST_THREADS"); }
  } one_thread;
  Session s;
  CTS_RANDOM(rng);
  auto module = s.load("saxpy");
  auto saxpy = module.kernel("saxpy");
  for (int i = 0; i < 3; ++i) {
    CAPTURE(i);
    check_fault_reported(s, nullptr);
    CTS_OK(lr_synchronize(s.get()));
    check_saxpy_runs(s, rng, saxpy, nullptr);
  }
}

}  // TEST_SUITE

TEST_SUITE("hangs") {

TEST_CASE("a kernel that does not finish times out after lr_set_wait_timeout_ms, the device works once it ends") {
  Session s;
  CTS_RANDOM(rng);
  const auto expect = backend().expectations();
  auto module = s.load("saxpy");
  auto saxpy = module.kernel("saxpy");
  lrrt::Queue queue(s.device());
  lrrt::Event after(s.device());
  void* buffer = nullptr;
  CTS_OK(lr_malloc(s.get(), 4096, &buffer));
  Gate gate(s);
  gate.close_on(queue);
  after.record(queue);
  {
    // The limit is only ever reached: the kernel spins until the gate opens.
    const uint64_t limit_ms = 300;
    WaitTimeout timeout(limit_ms);
    std::vector<std::string> words{std::to_string(limit_ms) + " ms"};
    if (expect.timeout_names_kernel) words.push_back("spin_forever");
    check_fails(lr_queue_synchronize(queue.get()), LR_ERROR_TIMEOUT, words, "lr_queue_synchronize");
    check_fails(lr_synchronize(s.get()), LR_ERROR_TIMEOUT, words, "lr_synchronize");
    check_fails(lr_event_synchronize(after.get()), LR_ERROR_TIMEOUT, {std::to_string(limit_ms) + " ms"},
                "lr_event_synchronize");
    // Work that did not finish may still use any memory of the device:
    // lr_free waits for it, times out, and the memory stays allocated.
    lr_memory_stats_t before{}, kept{};
    CTS_OK(lr_get_memory_stats(s.get(), &before));
    check_fails(lr_free(s.get(), buffer), LR_ERROR_TIMEOUT, words, "lr_free");
    CTS_OK(lr_get_memory_stats(s.get(), &kept));
    CHECK(kept.live_bytes == before.live_bytes);
    CHECK(kept.free_count == before.free_count);
  }
  // No limit again: the waits below return when the kernel has ended.
  gate.open();
  CTS_OK(lr_queue_synchronize(queue.get()));
  CTS_OK(lr_event_synchronize(after.get()));
  CTS_OK(lr_synchronize(s.get()));
  CTS_OK(lr_free(s.get(), buffer));  // still allocated: not "freed already"
  check_saxpy_runs(s, rng, saxpy, &queue);
  check_saxpy_runs(s, rng, saxpy, nullptr);
}

}  // TEST_SUITE

}  // namespace lrrt::cts

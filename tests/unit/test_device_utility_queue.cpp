// Device::utility_queue (the queue behind copy_sync's default implementation)
// is made once, whichever threads' first copies race for it (issue 26, bug 4:
// it was made without a lock, so racing first copies each made one and the
// last replaced, and destroyed, the others' queues while they copied on them).
// A device of the test's own makes its queue slowly, so that every racing
// thread is inside utility_queue() before the first one has a queue.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <latch>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "backend.hpp"

namespace {

using lrrt::rt::CopyKind;

// A queue whose copies are memmoves, counting them.
class CountingCopyQueue final : public lrrt::rt::Queue {
 public:
  explicit CountingCopyQueue(std::atomic<int>& live) : live_(live) { ++live_; }
  ~CountingCopyQueue() override { --live_; }
  void launch(lrrt::rt::Kernel&, const lrrt::rt::LaunchConfig&, std::span<const std::byte>, lrrt::rt::EventList,
              lrrt::rt::Event*) override {
    FAIL("not used");
  }
  void copy(void* dst, const void* src, size_t size, CopyKind, lrrt::rt::EventList, lrrt::rt::Event*) override {
    std::memmove(dst, src, size);
    copies.fetch_add(1);
  }
  void record(lrrt::rt::Event&) override { FAIL("not used"); }
  void synchronize() override {}
  std::atomic<int> copies{0};

 private:
  std::atomic<int>& live_;
};

class SlowQueueDevice final : public lrrt::rt::Device {
 public:
  ~SlowQueueDevice() override { release_utility_queue(); }
  const lrrt::rt::DeviceProperties& properties() const override { return properties_; }
  void* allocate(size_t) override { return nullptr; }
  void free(void*) override {}
  std::unique_ptr<lrrt::rt::Queue> create_queue() override {
    made.fetch_add(1);
    // Long enough for every racing thread to find no queue yet.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return std::make_unique<CountingCopyQueue>(live_queues);
  }
  std::unique_ptr<lrrt::rt::Event> create_event() override { return nullptr; }
  std::unique_ptr<lrrt::rt::Module> load_module(std::span<const std::byte>) override { return nullptr; }
  std::atomic<int> made{0}, live_queues{0};

 protected:
  void* do_allocate_host(size_t) override { return nullptr; }
  void do_free_host(void*) override {}

 private:
  lrrt::rt::DeviceProperties properties_;
};

}  // namespace

TEST_CASE("device: first copies from several threads at once make one utility queue, and every copy goes through it") {
  constexpr int kThreads = 4;
  constexpr size_t kWords = 4096 + 3;
  std::mt19937 rng(std::random_device{}());
  std::vector<std::vector<uint32_t>> inputs(kThreads), outputs(kThreads, std::vector<uint32_t>(kWords, 0xDEADBEEF));
  for (auto& in : inputs) {
    in.resize(kWords);
    for (auto& w : in) w = static_cast<uint32_t>(rng());
  }
  SlowQueueDevice device;
  std::vector<lrrt::rt::Queue*> got(kThreads, nullptr);
  {
    std::latch start(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        start.arrive_and_wait();
        device.copy_sync(outputs[t].data(), inputs[t].data(), kWords * 4, CopyKind::HostToDevice);
        got[t] = &device.utility_queue();
      });
    for (auto& th : threads) th.join();
  }
  CHECK(device.made.load() == 1);
  CHECK(device.live_queues.load() == 1);
  for (int t = 0; t < kThreads; ++t) {
    CAPTURE(t);
    CHECK(got[t] == got[0]);
    CHECK(outputs[t] == inputs[t]);
  }
  REQUIRE(got[0]);
  CHECK(static_cast<CountingCopyQueue*>(got[0])->copies.load() == kThreads);
}

// The host backend: a CPU device that runs kernels built for the host as
// shared objects (include/lrrt/host_kernel_abi.h), one workgroup per call, on
// a thread pool sized to the cores. Queues are in-order worker threads, so
// work runs asynchronously to the caller as on a GPU.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backend.hpp"
#include "machine.hpp"
#include "thread_pool.hpp"

namespace lrrt::rt::host {

uint64_t now_ns();

class HostEvent final : public Event {
 public:
  // Queue side: a new generation is armed when the operation is enqueued and
  // completed when it ran.
  uint64_t arm();
  void complete(uint64_t generation, uint64_t start_ns, uint64_t end_ns, std::exception_ptr error);
  // Blocks until `generation` completed; returns the error it completed with.
  std::exception_ptr wait(uint64_t generation);
  uint64_t armed_generation();

  void synchronize() override;
  bool query() override;
  uint64_t elapsed_ns_since(const Event& start) const override;
  uint64_t duration_ns() const override;

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  uint64_t armed_ = 0;
  uint64_t completed_ = 0;
  uint64_t start_ns_ = 0;
  uint64_t end_ns_ = 0;
  std::exception_ptr error_;
};

class HostDevice;

class HostQueue final : public Queue {
 public:
  explicit HostQueue(HostDevice& device);
  ~HostQueue() override;

  void launch(Kernel& kernel, const LaunchConfig& config, std::span<const std::byte> args,
              EventList wait_for, Event* signal) override;
  void copy(void* dst, const void* src, size_t size, CopyKind kind, EventList wait_for,
            Event* signal) override;
  void record(Event& event) override;
  void synchronize() override;

 private:
  struct Command {
    std::function<void()> run;  // empty for a marker
    std::vector<std::pair<HostEvent*, uint64_t>> waits;
    HostEvent* signal = nullptr;
    uint64_t signal_generation = 0;
  };
  void submit(std::function<void()> run, EventList wait_for, Event* signal);
  void worker_main();
  void execute(Command& command);

  HostDevice& device_;
  std::mutex mutex_;
  std::condition_variable work_cv_;
  std::condition_variable idle_cv_;
  std::deque<Command> pending_;
  bool busy_ = false;
  bool sleeping_ = false;
  bool stopping_ = false;
  std::exception_ptr error_;  // first failure since the last synchronize
  std::thread worker_;
};

class HostDevice final : public Device {
 public:
  HostDevice();
  ~HostDevice() override;

  const DeviceProperties& properties() const override { return properties_; }
  void* allocate(size_t size) override;
  void free(void* ptr) override;
  std::unique_ptr<Queue> create_queue() override;
  std::unique_ptr<Event> create_event() override;
  std::unique_ptr<Module> load_module(std::span<const std::byte> image) override;
  void copy_sync(void* dst, const void* src, size_t size, CopyKind kind) override;

  ThreadPool& pool() { return pool_; }

 protected:
  void* do_allocate_host(size_t size) override;
  void do_free_host(void* ptr) override;

 private:
  DeviceProperties properties_;
  ThreadPool pool_;
};

}  // namespace lrrt::rt::host

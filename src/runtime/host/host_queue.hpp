// A host queue: an in-order worker thread, so work runs asynchronously to the
// caller as on a GPU. A launch runs its workgroups on the device's thread
// pool; a kernel's fault (a signal in kernel code, a non-zero return code)
// fails the operation and everything after it until the next synchronize.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "backend.hpp"
#include "host_event.hpp"

namespace lrrt::rt::host {

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

  // Enqueues host work as one operation of the queue, in order with the
  // rest: it runs after the waits, and what it throws fails it (and the
  // queue's later work until synchronize) like a kernel fault. A replayed
  // graph (host_graph.hpp) runs its whole DAG as one such operation.
  void submit(std::function<void()> run, EventList wait_for, Event* signal);

 private:
  struct Command {
    std::function<void()> run;  // empty for a marker
    std::vector<std::pair<HostEvent*, uint64_t>> waits;
    HostEvent* signal = nullptr;
    uint64_t signal_generation = 0;
  };
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

}  // namespace lrrt::rt::host

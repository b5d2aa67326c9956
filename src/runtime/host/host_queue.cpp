#include "host_queue.hpp"

#include <cstring>
#include <mutex>
#include <system_error>

#include "error.hpp"
#include "host_device.hpp"
#include "host_dispatch.hpp"
#include "host_executable.hpp"
#include "host_status.hpp"
#include "wait.hpp"

namespace lrrt::rt::host {
HostQueue::HostQueue(HostDevice& device) : device_(device) {
  install_fault_handlers();
  try {
    worker_ = start_kernel_thread([this] { worker_main(); });
  } catch (const std::exception& e) {
    // RLIMIT_NPROC, or no address space for the thread's stacks.
    LRRT_THROW(LR_ERROR_RUNTIME, "cannot start a host queue's worker thread: {} (the device's pool has {} threads)",
               e.what(), device.pool().threads());
  }
}

HostQueue::~HostQueue() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  worker_.join();
}

void HostQueue::submit(std::function<void()> run, EventList wait_for, Event* signal) {
  Command command;
  command.run = std::move(run);
  command.waits.reserve(wait_for.size());
  for (Event* e : wait_for) {
    auto* he = static_cast<HostEvent*>(e);
    command.waits.emplace_back(he, he->armed_generation());
  }
  if (signal) {
    command.signal = static_cast<HostEvent*>(signal);
    command.signal_generation = command.signal->arm();
  }
  bool wake;
  {
    std::lock_guard lock(mutex_);
    pending_.push_back(std::move(command));
    wake = sleeping_;
  }
  if (wake) work_cv_.notify_one();
}

void HostQueue::launch(Kernel& kernel, const LaunchConfig& config, std::span<const std::byte> args,
                       EventList wait_for, Event* signal) {
  auto dispatch = std::make_shared<const HostDispatch>(static_cast<HostKernel&>(kernel), config, args,
                                                       device_.properties());
  HostDevice* device = &device_;
  submit(
      [dispatch, device] {
        KernelFault fault;
        std::mutex fault_mutex;
        device->pool().parallel_for(dispatch->workgroups(), [&](uint64_t begin, uint64_t end, unsigned thread) {
          return dispatch->run(begin, end, thread, fault, fault_mutex);
        });
        // A write past a buffer's end either faults on its guard page or
        // changes the canary before it (host_memory.hpp).
        const std::string overrun = device->memory().scan_and_repair();
        if (fault.failed()) dispatch->throw_fault(fault, device->memory());
        if (!overrun.empty())
          LRRT_THROW(LR_ERROR_KERNEL_FAULT, "kernel '{}' wrote past the end of a buffer: {}", dispatch->kernel_name(),
                     overrun);
      },
      wait_for, signal);
}

void HostQueue::copy(void* dst, const void* src, size_t size, CopyKind, EventList wait_for, Event* signal) {
  // A zero-byte copy may come with null pointers (lr_memcpy_async accepts
  // them), which memcpy does not take even for zero bytes.
  submit([=] { if (size) std::memcpy(dst, src, size); }, wait_for, signal);
}

void HostQueue::record(Event& event) { submit({}, {}, &event); }

void HostQueue::execute(Command& command) {
  std::exception_ptr error;
  {
    std::lock_guard lock(mutex_);
    error = error_;  // work after a failure in this queue does not run
  }
  for (auto& [event, generation] : command.waits) {
    if (error) break;
    if (auto dep_error = event->wait(generation)) error = dep_error;
  }
  uint64_t start = now_ns();
  if (!error && command.run) {
    try {
      command.run();
    } catch (...) {
      error = std::current_exception();
    }
  }
  uint64_t end = now_ns();
  if (error) {
    std::lock_guard lock(mutex_);
    if (!error_) error_ = error;
  }
  if (command.signal) command.signal->complete(command.signal_generation, start, end, error);
}

void HostQueue::worker_main() {
  for (;;) {
    Command command;
    {
      std::unique_lock lock(mutex_);
      if (pending_.empty()) {
        // Spin briefly without the lock before sleeping: launches often come
        // in bursts, and a wake-up costs more than a short spin.
        lock.unlock();
        auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
        while (std::chrono::steady_clock::now() < until) {
          cpu_relax();
          std::lock_guard peek(mutex_);
          if (!pending_.empty() || stopping_) break;
        }
        lock.lock();
      }
      sleeping_ = true;
      work_cv_.wait(lock, [&] { return !pending_.empty() || stopping_; });
      sleeping_ = false;
      if (pending_.empty() && stopping_) return;
      command = std::move(pending_.front());
      pending_.pop_front();
      busy_ = true;
    }
    execute(command);
    {
      std::lock_guard lock(mutex_);
      busy_ = false;
      if (pending_.empty()) idle_cv_.notify_all();
    }
  }
}

void HostQueue::synchronize() {
  ConditionWait idle(mutex_, idle_cv_, [&] { return pending_.empty() && !busy_; }, "the host queue", kMaxWaitSpin);
  rt::wait(idle);
  std::lock_guard lock(mutex_);
  if (error_) {
    // Reported once; the queue is usable again afterwards.
    std::exception_ptr error = std::exchange(error_, nullptr);
    std::rethrow_exception(error);
  }
}

}  // namespace lrrt::rt::host

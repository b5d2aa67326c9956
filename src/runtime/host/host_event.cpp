#include "host_event.hpp"

#include <chrono>

#include "error.hpp"
#include "wait.hpp"

namespace lrrt::rt::host {

uint64_t now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

uint64_t HostEvent::arm() {
  std::lock_guard lock(mutex_);
  return ++armed_;
}

uint64_t HostEvent::armed_generation() {
  std::lock_guard lock(mutex_);
  return armed_;
}

void HostEvent::complete(uint64_t generation, uint64_t start_ns, uint64_t end_ns, std::exception_ptr error) {
  // Notify under the lock: a waiter that sees the completion (even by its
  // spin, without sleeping) may destroy the event at once, and a notify after
  // unlocking would touch a destroyed condition variable.
  std::lock_guard lock(mutex_);
  if (generation < completed_) return;
  completed_ = generation;
  start_ns_ = start_ns;
  end_ns_ = end_ns;
  error_ = error;
  cv_.notify_all();
}

std::exception_ptr HostEvent::wait(uint64_t generation) {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return completed_ >= generation; });
  return generation ? error_ : nullptr;
}

void HostEvent::synchronize() { synchronize([] { return std::string("an event on the host device"); }); }

void HostEvent::synchronize(const std::function<std::string()>& describe) {
  uint64_t target;
  {
    std::lock_guard lock(mutex_);
    target = armed_;
  }
  // ConditionWait, with the message computed when the timeout passes.
  struct Done final : Waitable {
    HostEvent& event;
    uint64_t target;
    const std::function<std::string()>& what;
    Done(HostEvent& e, uint64_t t, const std::function<std::string()>& w) : event(e), target(t), what(w) {}
    WaitStatus poll() override {
      std::lock_guard lock(event.mutex_);
      return event.completed_ >= target ? WaitStatus::Complete : WaitStatus::Pending;
    }
    WaitStatus block(std::chrono::nanoseconds limit) override {
      std::unique_lock lock(event.mutex_);
      auto done = [&] { return event.completed_ >= target; };
      if (limit == kForever) event.cv_.wait(lock, done);
      else if (!event.cv_.wait_for(lock, limit, done)) return WaitStatus::Pending;
      return WaitStatus::Complete;
    }
    std::chrono::microseconds max_spin() const override { return kMaxWaitSpin; }
    std::string describe() const override { return what(); }
  } done(*this, target, describe);
  rt::wait(done);
  std::lock_guard lock(mutex_);
  if (target && error_) std::rethrow_exception(error_);
}

bool HostEvent::query() {
  std::lock_guard lock(mutex_);
  return completed_ >= armed_;
}

uint64_t HostEvent::elapsed_ns_since(const Event& start_event) const {
  const auto& start = static_cast<const HostEvent&>(start_event);
  uint64_t t0, t1;
  {
    std::lock_guard lock(start.mutex_);
    if (start.completed_ < start.armed_ || !start.completed_)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "start event has not completed");
    t0 = start.end_ns_;
  }
  {
    std::lock_guard lock(mutex_);
    if (completed_ < armed_ || !completed_) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "end event has not completed");
    t1 = end_ns_;
  }
  return t1 >= t0 ? t1 - t0 : 0;
}

uint64_t HostEvent::duration_ns() const {
  std::lock_guard lock(mutex_);
  if (completed_ < armed_ || !completed_) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "event has not completed");
  return end_ns_ - start_ns_;
}

}  // namespace lrrt::rt::host

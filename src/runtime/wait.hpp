// The one wait behind every synchronizing call of every backend: spin, then
// block, with the timeout and the failure check in the same loop.
//
//   1. spin:  poll for lr_set_wait_spin_us (default 2 ms; a backend may cap it),
//             so short work is seen as soon as it ends;
//   2. block: sleep in the backend's blocking wait until the work completes,
//             fails, or the timeout (lr_set_wait_timeout_ms, lrrt --timeout,
//             LRRT_WAIT_TIMEOUT_MS; 0 = forever) passes. A timeout throws
//             LR_ERROR_TIMEOUT naming what was waited for (a hung kernel).
//
// A backend describes what it waits for (a completion signal, a stream, an
// idle queue) as a Waitable; wait() owns the policy. A failure (a queue error,
// a sticky CUDA fault) makes wait() return WaitStatus::Failed and the backend
// reports it, naming the kernel.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>

namespace lrrt::rt {

// The settings, process-wide. Zero timeout means forever.
inline constexpr int64_t kDefaultWaitSpinUs = 2000;
inline constexpr int64_t kMaxWaitSpinUs = 60'000'000;
// Longest timeout (about 31 years): its nanoseconds still fit an int64.
inline constexpr int64_t kMaxWaitTimeoutMs = 1'000'000'000'000;
std::chrono::milliseconds wait_timeout();
void set_wait_timeout(std::chrono::milliseconds timeout);
std::chrono::microseconds wait_spin();
void set_wait_spin(std::chrono::microseconds spin);
// lr_init: LRRT_WAIT_TIMEOUT_MS and LRRT_WAIT_SPIN_US, unless set by call.
void read_wait_settings_from_env();

enum class WaitStatus { Pending, Complete, Failed };

// What the backend's API offers for step 2.
enum class Blocking {
  Bounded,    // a blocking wait with a time limit (hsa signals, condition variables)
  Unbounded,  // one without a limit only (cuda events); with a timeout set the wait
              // polls with naps growing with the time waited (10-500 us, ~5% late)
  None,       // nothing to block on (a full hsa ring): naps as above
};

class Waitable {
 public:
  // Completed, failed or neither, now; never blocks.
  virtual WaitStatus poll() = 0;
  // Busy-waits up to `limit`. The default polls, reading the clock every 32
  // polls (a zero limit polls once).
  virtual WaitStatus spin(std::chrono::nanoseconds limit);
  // Sleeps until completion or failure, or until `limit` passed (then
  // Pending). kForever: no limit. Unused for Blocking::None.
  virtual WaitStatus block(std::chrono::nanoseconds limit);
  // What is waited for, for the timeout message ("kernel 'saxpy'"). Called
  // only when the wait times out.
  virtual std::string describe() const = 0;

  virtual Blocking blocking() const { return Blocking::Bounded; }
  // Longest one block() may last before the wait looks again: a failure
  // that block() cannot see (a queue error set on another thread) is noticed
  // within this. Zero: as long as the limit allows.
  virtual std::chrono::nanoseconds slice() const { return std::chrono::nanoseconds(0); }
  // Longest spin this backend allows whatever wait_spin() says (host: a
  // spinning waiter takes a core from the device itself).
  virtual std::chrono::microseconds max_spin() const { return std::chrono::microseconds(kMaxWaitSpinUs); }

  static constexpr std::chrono::nanoseconds kForever = std::chrono::nanoseconds::max();

 protected:
  ~Waitable() = default;
};

// Waits for `target` (steps 1 and 2 above). Returns Complete or Failed;
// throws LR_ERROR_TIMEOUT when the timeout passes first.
WaitStatus wait(Waitable& target);

// A condition guarded by a mutex and signalled on a condition variable (the
// host backend's queues and events). `max_spin` caps the spin.
template <typename Done>
class ConditionWait final : public Waitable {
 public:
  ConditionWait(std::mutex& mutex, std::condition_variable& cv, Done done, const char* what,
                std::chrono::microseconds max_spin)
      : mutex_(mutex), cv_(cv), done_(std::move(done)), what_(what), max_spin_(max_spin) {}
  WaitStatus poll() override {
    std::lock_guard lock(mutex_);
    return done_() ? WaitStatus::Complete : WaitStatus::Pending;
  }
  WaitStatus block(std::chrono::nanoseconds limit) override {
    std::unique_lock lock(mutex_);
    if (limit == kForever) cv_.wait(lock, done_);
    else if (!cv_.wait_for(lock, limit, done_)) return WaitStatus::Pending;
    return WaitStatus::Complete;
  }
  std::chrono::microseconds max_spin() const override { return max_spin_; }
  std::string describe() const override { return what_; }

 private:
  std::mutex& mutex_;
  std::condition_variable& cv_;
  Done done_;
  const char* what_;
  std::chrono::microseconds max_spin_;
};

// Sets the calling thread's timer slack (ns) for its lifetime, then restores
// it: sleeps of tens of microseconds otherwise overshoot by ~50 us.
class TimerSlack {
 public:
  explicit TimerSlack(unsigned long ns);
  ~TimerSlack();
  TimerSlack(const TimerSlack&) = delete;
  TimerSlack& operator=(const TimerSlack&) = delete;

 private:
  long saved_ = -1;
};

// One pause of a spin loop (x86 PAUSE): yields the core's pipeline to a
// sibling thread while spinning.
inline void cpu_relax() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#endif
}

}  // namespace lrrt::rt

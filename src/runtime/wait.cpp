#include "wait.hpp"

#include <sys/prctl.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <optional>
#include <thread>

#include "env.hpp"
#include "error.hpp"

namespace lrrt::rt {
namespace {

using clock = std::chrono::steady_clock;
using std::chrono::microseconds;
using std::chrono::nanoseconds;

static_assert(env::kWaitTimeoutMs.max == uint64_t(kMaxWaitTimeoutMs) && env::kWaitSpinUs.max == uint64_t(kMaxWaitSpinUs));

std::atomic<int64_t> g_wait_timeout_ms{0};
std::atomic<bool> g_wait_timeout_set{false};  // by lr_set_wait_timeout_ms
std::atomic<int64_t> g_wait_spin_us{kDefaultWaitSpinUs};
std::atomic<bool> g_wait_spin_set{false};  // by lr_set_wait_spin_us

// A nap of a twentieth of the time waited, 10 us to 500 us: late by at most
// ~5%, a poll per 100+ us after the first milliseconds.
nanoseconds nap_after(clock::duration waited) {
  return std::clamp<nanoseconds>(std::chrono::duration_cast<nanoseconds>(waited) / 20, microseconds(10),
                                 microseconds(500));
}

[[noreturn]] void throw_timeout(const Waitable& target, std::chrono::milliseconds timeout) {
  LRRT_THROW(LR_ERROR_TIMEOUT,
             "{} did not finish within {} ms; the device may be hung, and lrrt cannot stop it (the limit is "
             "set by lr_set_wait_timeout_ms, lrrt --timeout or LRRT_WAIT_TIMEOUT_MS)",
             target.describe(), timeout.count());
}

}  // namespace

std::chrono::milliseconds wait_timeout() {
  return std::chrono::milliseconds(g_wait_timeout_ms.load(std::memory_order_relaxed));
}

void set_wait_timeout(std::chrono::milliseconds timeout) {
  g_wait_timeout_ms.store(timeout.count(), std::memory_order_relaxed);
  g_wait_timeout_set.store(true);
}

std::chrono::microseconds wait_spin() {
  return std::chrono::microseconds(g_wait_spin_us.load(std::memory_order_relaxed));
}

void set_wait_spin(std::chrono::microseconds spin) {
  g_wait_spin_us.store(spin.count(), std::memory_order_relaxed);
  g_wait_spin_set.store(true);
}

void read_wait_settings_from_env() {
  // Both are read (and checked) even when a call set them: a bad value is an
  // error whoever wins.
  const auto timeout = env::number(env::kWaitTimeoutMs);
  const auto spin = env::number(env::kWaitSpinUs);
  if (timeout && !g_wait_timeout_set.load()) g_wait_timeout_ms.store(static_cast<int64_t>(*timeout));
  if (spin && !g_wait_spin_set.load()) g_wait_spin_us.store(static_cast<int64_t>(*spin));
}

WaitStatus Waitable::spin(nanoseconds limit) {
  const auto start = clock::now();
  for (uint32_t i = 1;; ++i) {
    WaitStatus s = poll();
    if (s != WaitStatus::Pending) return s;
    if (limit.count() && i % 32 != 0) {  // the clock is read every 32 polls
      cpu_relax();
      continue;
    }
    if (clock::now() - start >= limit) return WaitStatus::Pending;
  }
}

WaitStatus Waitable::block(nanoseconds) { return poll(); }

WaitStatus wait(Waitable& target) {
  const auto start = clock::now();
  const auto timeout = wait_timeout();
  const auto spin = std::min(wait_spin(), target.max_spin());
  WaitStatus s = target.spin(spin);
  if (s != WaitStatus::Pending) return s;

  const Blocking blocking = target.blocking();
  const nanoseconds slice = target.slice();
  std::optional<TimerSlack> precise;  // for naps only
  for (;;) {
    const auto waited = clock::now() - start;
    nanoseconds limit = Waitable::kForever;
    if (timeout.count() > 0) {
      if (waited >= timeout) throw_timeout(target, timeout);
      limit = std::chrono::duration_cast<nanoseconds>(timeout - waited);
    }
    if (slice.count() > 0) limit = std::min(limit, slice);
    if (blocking == Blocking::Bounded || (blocking == Blocking::Unbounded && limit == Waitable::kForever)) {
      s = target.block(limit);
    } else {
      if (!precise) precise.emplace(1000);
      std::this_thread::sleep_for(std::min(nap_after(waited), limit));
      s = target.poll();
    }
    if (s != WaitStatus::Pending) return s;
  }
}

TimerSlack::TimerSlack(unsigned long ns) {
  saved_ = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
  if (saved_ >= 0) prctl(PR_SET_TIMERSLACK, ns, 0, 0, 0);
}

TimerSlack::~TimerSlack() {
  if (saved_ >= 0) prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(saved_), 0, 0, 0);
}

}  // namespace lrrt::rt

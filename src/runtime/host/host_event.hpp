// A host event: a generation counter a queue's worker completes (with the
// operation's start and end time and its error), waited on with a
// condition variable.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <string>

#include "backend.hpp"

namespace lrrt::rt::host {

// steady_clock in nanoseconds: the times events record.
uint64_t now_ns();

// The host's longest spin in a wait, whatever lr_set_wait_spin_us says: here
// a spinning waiter takes a core from the device itself.
inline constexpr std::chrono::microseconds kMaxWaitSpin{50};

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
  // The same wait, with a timeout message that `describe` writes (what is
  // still running when the timeout passes).
  void synchronize(const std::function<std::string()>& describe);
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

}  // namespace lrrt::rt::host

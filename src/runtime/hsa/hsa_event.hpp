// An hsa event: the completion signal of the operation it marks (a
// dispatch, a copy or a barrier-AND marker), timed by ROCr's profiling.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "hsa_device.hpp"

namespace lrrt::rt::hsa {

// Waits until the signal drops below 1 (rt::wait: spin, then block in slices
// so that a failure of `error`'s queue is noticed; then returns, and the
// caller reports it). `what` names the operation in a timeout message.
void wait_signal(const Context& ctx, hsa_signal_t signal, const QueueErrorState* error,
                 const std::string& what);

class HsaEvent final : public Event {
 public:
  enum class Kind { None, Marker, Dispatch, Copy };
  explicit HsaEvent(HsaDevice& device) : device_(device) {}
  void synchronize() override;
  bool query() override;
  uint64_t elapsed_ns_since(const Event& start) const override;
  uint64_t duration_ns() const override;

  // Gives the event a fresh signal (value 1) for the operation about to be
  // submitted and returns it.
  hsa_signal_t arm(Kind kind, std::shared_ptr<QueueErrorState> error, std::string what);
  // The signal the event completes with; null handle when never armed.
  hsa_signal_t signal() const { return sig_ ? sig_->handle : hsa_signal_t{0}; }
  SignalRef signal_ref() const { return sig_; }

 private:
  uint64_t end_ticks() const;
  HsaDevice& device_;
  SignalRef sig_;
  Kind kind_ = Kind::None;
  std::shared_ptr<QueueErrorState> error_;
  std::string what_;
};

}  // namespace lrrt::rt::hsa

#include "hsa_event.hpp"

#include <atomic>

#include "wait.hpp"

namespace lrrt::rt::hsa {

namespace {

// A completion signal as rt::wait sees it: complete below 1; failed when its
// queue reported an error (the signal may then never move).
class SignalWait final : public Waitable {
 public:
  SignalWait(const Context& ctx, hsa_signal_t signal, const QueueErrorState* error, const std::string& what)
      : ctx_(ctx), signal_(signal), error_(error), what_(what) {}

  WaitStatus poll() override {
    if (ctx_.api.hsa_signal_load_relaxed(signal_) < 1) {
      std::atomic_thread_fence(std::memory_order_acquire);  // as an scacquire load
      return WaitStatus::Complete;
    }
    return status_after_wait();
  }
  // ROCr's own active wait for the spin, its blocked wait for the slices.
  WaitStatus spin(std::chrono::nanoseconds limit) override {
    if (limit.count() <= 0) return poll();
    return wait_in(HSA_WAIT_STATE_ACTIVE, limit);
  }
  WaitStatus block(std::chrono::nanoseconds limit) override { return wait_in(HSA_WAIT_STATE_BLOCKED, limit); }
  std::chrono::nanoseconds slice() const override { return std::chrono::milliseconds(5); }
  std::string describe() const override {
    return fmt::format("{} (its completion signal is still {})", what_, ctx_.api.hsa_signal_load_relaxed(signal_));
  }

 private:
  WaitStatus wait_in(hsa_wait_state_t state, std::chrono::nanoseconds limit) {
    uint64_t ticks = limit == kForever ? UINT64_MAX
                                       : std::max<uint64_t>(1, uint64_t(double(ctx_.timestamp_frequency) *
                                                                        double(limit.count()) / 1e9));
    if (ctx_.api.hsa_signal_wait_scacquire(signal_, HSA_SIGNAL_CONDITION_LT, 1, ticks, state) < 1)
      return WaitStatus::Complete;
    return status_after_wait();
  }
  WaitStatus status_after_wait() const {
    return error_ && error_->failed.load(std::memory_order_acquire) ? WaitStatus::Failed : WaitStatus::Pending;
  }

  const Context& ctx_;
  hsa_signal_t signal_;
  const QueueErrorState* error_;
  const std::string& what_;
};

}  // namespace

void wait_signal(const Context& ctx, hsa_signal_t signal, const QueueErrorState* error, const std::string& what) {
  SignalWait target(ctx, signal, error, what);
  rt::wait(target);  // a failure is the caller's to report
}

hsa_signal_t HsaEvent::arm(Kind kind, std::shared_ptr<QueueErrorState> error, std::string what) {
  // The previous signal may still be owed to a queued operation; the queue
  // that submitted it holds its own reference until it completes.
  sig_ = device_.acquire_signal();
  kind_ = kind;
  error_ = std::move(error);
  what_ = std::move(what);
  return sig_->handle;
}

void HsaEvent::synchronize() {
  if (!sig_) return;
  wait_signal(device_.context(), sig_->handle, error_.get(), what_);
  if (!error_ || !error_->failed.load() || device_.api().hsa_signal_load_relaxed(sig_->handle) < 1) return;
  if (const uint32_t hw = error_->hw_exception.load())
    LRRT_THROW(LR_ERROR_DEVICE_LOST, "{} did not complete: {}", what_, device_.device_lost_text(hw));
  // A replay whose lane failed: its kernel fault, as the graph exec reports it.
  if (const std::string cause = error_->cause(); !cause.empty())
    LRRT_THROW(LR_ERROR_KERNEL_FAULT, "{} did not complete: {}", what_, cause);
  LRRT_THROW(LR_ERROR_KERNEL_FAULT,
               "the hsa queue that {} was submitted to failed ({}); synchronize the queue for "
               "the faulting kernel",
               what_, hsa_error_text(device_.api(), hsa_status_t(error_->status.load())));
}

bool HsaEvent::query() {
  return !sig_ || device_.api().hsa_signal_load_relaxed(sig_->handle) < 1;
}

uint64_t HsaEvent::end_ticks() const {
  const HsaSymbols& api = device_.api();
  if (!sig_) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "the event was never recorded");
  if (kind_ == Kind::Copy) {
    hsa_amd_profiling_async_copy_time_t t{};
    LRRT_HSA_CHECK(api, LR_ERROR_NOT_SUPPORTED, hsa_amd_profiling_get_async_copy_time(sig_->handle, &t));
    return t.end;
  }
  hsa_amd_profiling_dispatch_time_t t{};
  LRRT_HSA_CHECK(api, LR_ERROR_NOT_SUPPORTED, hsa_amd_profiling_get_dispatch_time(
      device_.agent(), sig_->handle, &t));
  return t.end;
}

uint64_t HsaEvent::elapsed_ns_since(const Event& start) const {
  const auto& s = dynamic_cast<const HsaEvent&>(start);
  uint64_t a = s.end_ticks(), b = end_ticks();
  uint64_t ticks = b > a ? b - a : 0;
  return uint64_t(double(ticks) * 1e9 / double(device_.context().timestamp_frequency));
}

uint64_t HsaEvent::duration_ns() const {
  const HsaSymbols& api = device_.api();
  if (!sig_) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "the event was never recorded");
  uint64_t start = 0, end = 0;
  if (kind_ == Kind::Copy) {
    hsa_amd_profiling_async_copy_time_t t{};
    LRRT_HSA_CHECK(api, LR_ERROR_NOT_SUPPORTED, hsa_amd_profiling_get_async_copy_time(sig_->handle, &t));
    start = t.start, end = t.end;
  } else if (kind_ == Kind::Dispatch) {
    hsa_amd_profiling_dispatch_time_t t{};
    LRRT_HSA_CHECK(api, LR_ERROR_NOT_SUPPORTED, hsa_amd_profiling_get_dispatch_time(
        device_.agent(), sig_->handle, &t));
    start = t.start, end = t.end;
  } else {
    LRRT_THROW(LR_ERROR_NOT_SUPPORTED, "the event marks a point, not an operation with a duration");
  }
  uint64_t ticks = end > start ? end - start : 0;
  return uint64_t(double(ticks) * 1e9 / double(device_.context().timestamp_frequency));
}

}  // namespace lrrt::rt::hsa

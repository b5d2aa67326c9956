// Signals (SSignal, standin_internal.hpp), completing a packet's or a copy's
// signal, and the profiling times kept on them.
#include "standin_internal.hpp"

namespace standin {

// Holds a reference while it waits: the thread that satisfied the wait may
// let the client destroy the signal before this one leaves the lock.
int64_t SSignal::wait(hsa_signal_condition_t c, int64_t cmp, uint64_t timeout_ns) {
  retain();
  struct Released {
    SSignal* s;
    ~Released() { s->release(); }
  } released{this};
  int64_t v = value.load(std::memory_order_seq_cst);
  if (satisfied(c, v, cmp)) return v;
  // A short spin first: most waits here are brief.
  for (int i = 0; i < 200; ++i) {
    v = value.load(std::memory_order_seq_cst);
    if (satisfied(c, v, cmp)) return v;
    std::this_thread::yield();
  }
  auto deadline = timeout_ns == UINT64_MAX || timeout_ns > (1ull << 62)
                      ? Clock::time_point::max()
                      : Clock::now() + std::chrono::nanoseconds(timeout_ns);
  std::unique_lock l(m);
  waiters.fetch_add(1);
  while (!satisfied(c, v = value.load(std::memory_order_seq_cst), cmp)) {
    if (deadline == Clock::time_point::max()) {
      cv.wait_for(l, std::chrono::milliseconds(50));
    } else {
      if (Clock::now() >= deadline) break;
      cv.wait_until(l, std::min(deadline, Clock::now() + std::chrono::milliseconds(50)));
    }
  }
  waiters.fetch_sub(1);
  return v;
}

void complete(hsa_signal_t s, uint64_t start, const std::string& kernel) {
  if (!s.handle) return;
  Faults f = faults();
  if (!kernel.empty() && f.lost_signal_kernel == kernel) {
    count("lost_signals");
    return;
  }
  SSignal* x = sig(s);
  x->start = start;
  x->end = now_ns();
  x->sub(1);
}

}  // namespace standin

using namespace standin;

EXPORT hsa_status_t hsa_signal_create(hsa_signal_value_t v, uint32_t, const hsa_agent_t*,
                                     hsa_signal_t* s) {
  s->handle = reinterpret_cast<uint64_t>(new SSignal(v));
  count("signals_created");
  return HSA_STATUS_SUCCESS;
}
EXPORT hsa_status_t hsa_signal_destroy(hsa_signal_t s) {
  if (!s.handle) return HSA_STATUS_ERROR_INVALID_SIGNAL;
  sig(s)->release();
  return HSA_STATUS_SUCCESS;
}
EXPORT hsa_signal_value_t hsa_signal_load_relaxed(hsa_signal_t s) { return sig(s)->value.load(); }
EXPORT void hsa_signal_store_relaxed(hsa_signal_t s, hsa_signal_value_t v) {
  if (sig(s)->doorbell) doorbell_rings.fetch_add(1, std::memory_order_relaxed);
  sig(s)->store(v);
}
EXPORT void hsa_signal_store_screlease(hsa_signal_t s, hsa_signal_value_t v) {
  if (sig(s)->doorbell) doorbell_rings.fetch_add(1, std::memory_order_relaxed);
  sig(s)->store(v);
}
EXPORT hsa_signal_value_t hsa_signal_wait_scacquire(hsa_signal_t s, hsa_signal_condition_t c,
                                                   hsa_signal_value_t cmp, uint64_t timeout,
                                                   hsa_wait_state_t) {
  return sig(s)->wait(c, cmp, timeout);
}

EXPORT hsa_status_t hsa_amd_profiling_set_profiler_enabled(hsa_queue_t*, int) {
  return HSA_STATUS_SUCCESS;
}
EXPORT hsa_status_t hsa_amd_profiling_async_copy_enable(bool) { return HSA_STATUS_SUCCESS; }
EXPORT hsa_status_t hsa_amd_profiling_get_dispatch_time(hsa_agent_t, hsa_signal_t s,
                                                       hsa_amd_profiling_dispatch_time_t* t) {
  if (!s.handle) return HSA_STATUS_ERROR_INVALID_SIGNAL;
  t->start = sig(s)->start;
  t->end = sig(s)->end;
  return HSA_STATUS_SUCCESS;
}
EXPORT hsa_status_t hsa_amd_profiling_get_async_copy_time(hsa_signal_t s,
                                                         hsa_amd_profiling_async_copy_time_t* t) {
  if (!s.handle) return HSA_STATUS_ERROR_INVALID_SIGNAL;
  t->start = sig(s)->start;
  t->end = sig(s)->end;
  return HSA_STATUS_SUCCESS;
}

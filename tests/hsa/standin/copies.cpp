// The copy engine: one thread running hsa_amd_memory_async_copy's copies in
// submission order, each after its dependency signals are 0 (through the
// memory model: engine_copy), and the hooks that hold or pause it.
#include <deque>
#include <optional>

#include "standin_internal.hpp"

namespace standin {

// ------------------------------------------------------------ copy engine
struct CopyTask {
  void* dst;
  const void* src;
  size_t size;
  std::vector<hsa_signal_t> deps;
  hsa_signal_t completion;
};
struct CopyEngine {
  std::mutex m;
  std::condition_variable cv;
  std::deque<CopyTask> tasks;
  std::thread thread;
  bool stop = false;
  // Test hook: queued copies wait until released, so that a test can enqueue
  // work that depends on a copy before the copy can possibly have finished.
  bool held = false;
  // The copy taken from `tasks` and not finished, if any (worst-order mode
  // asks whether the engine could make progress now).
  std::optional<CopyTask> current;
  static bool ready(const CopyTask& t) {
    for (auto d : t.deps)
      if (sig(d)->value.load() != 0) return false;
    return true;
  }
  // True when no copy can make progress now: none queued or in progress
  // whose dependencies are all complete (or copies are held).
  bool quiet() {
    std::lock_guard l(m);
    if (held) return true;
    if (current) return !ready(*current);
    return tasks.empty() || !ready(tasks.front());
  }
  // False when the engine stops before every dependency of t completed.
  bool wait_for_dependencies(const CopyTask& t) {
    for (auto d : t.deps)
      while (sig(d)->wait(HSA_SIGNAL_CONDITION_EQ, 0, 20'000'000) != 0) {
        std::lock_guard l(m);
        if (stop) return false;
      }
    return true;
  }
  void run() {
    for (;;) {
      CopyTask t;
      {
        std::unique_lock l(m);
        cv.wait(l, [&] { return stop || (!tasks.empty() && !held); });
        if (stop && tasks.empty()) return;
        t = tasks.front();
        current = std::move(tasks.front());
        tasks.pop_front();
      }
      // A dependency that never completes (a hung or failed dispatch) must not
      // keep hsa_shut_down from joining this thread: once stopping, such a
      // copy is dropped, as a device going away drops its queued work.
      if (!wait_for_dependencies(t)) {
        std::lock_guard l(m);
        current.reset();
        continue;
      }
      uint64_t start = now_ns();
      engine_copy(t.dst, t.src, t.size);
      count("copies");
      count("copy_bytes", t.size);
      complete(t.completion, start);
      std::lock_guard l(m);
      current.reset();
    }
  }
};
CopyEngine* copy_engine = nullptr;

bool copy_engine_quiet() {
  if (!worst_order.load(std::memory_order_relaxed)) return true;
  std::lock_guard l(state().mutex);
  return !copy_engine || copy_engine->quiet();
}

CopyEngine* start_copy_engine() {
  auto* ce = new CopyEngine;
  ce->thread = std::thread([ce] { ce->run(); });
  return ce;
}

void stop_copy_engine(CopyEngine* ce) {
  {
    std::lock_guard l(ce->m);
    ce->stop = true;
  }
  ce->cv.notify_all();
  ce->thread.join();
  delete ce;
}

namespace {

// lrrt_hsa_standin_pause_next_copy_call: armed by the test, taken by the
// next copy call, which waits until the test lets it go.
std::mutex pause_mutex;
std::condition_variable pause_cv;
bool pause_armed = false, pause_holding = false;
void pause_if_armed() {
  std::unique_lock l(pause_mutex);
  if (!pause_armed) return;
  pause_armed = false;
  l.unlock();
  count("copy_calls_paused");
  l.lock();
  pause_cv.wait(l, [] { return !pause_holding; });
}
}  // namespace

}  // namespace standin

using namespace standin;

EXPORT hsa_status_t hsa_amd_memory_async_copy(void* dst, hsa_agent_t, const void* src, hsa_agent_t,
                                             size_t size, uint32_t num_deps,
                                             const hsa_signal_t* deps, hsa_signal_t completion) {
  // As ROCr (hsa_ext_amd.cpp): null pointers are refused even for zero
  // bytes, and so are dependency arguments that disagree; a zero-byte copy
  // then returns HSA_STATUS_SUCCESS without ever completing the signal.
  if (!dst || !src) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  if ((num_deps == 0) != (deps == nullptr)) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  if (!copy_engine || !completion.handle) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  if (size == 0) {
    count("zero_byte_copies");
    return HSA_STATUS_SUCCESS;
  }
  // Both sides must be memory the agents can reach (pool allocations), not
  // pageable host memory.
  if (!known_range(dst, size) || !known_range(src, size)) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  CopyTask t{dst, src, size, std::vector<hsa_signal_t>(deps, deps + num_deps), completion};
  {
    std::lock_guard l(copy_engine->m);
    copy_engine->tasks.push_back(std::move(t));
  }
  copy_engine->cv.notify_one();
  pause_if_armed();
  return HSA_STATUS_SUCCESS;
}

// ================================================================ test hooks
EXPORT void lrrt_hsa_standin_hold_copies(int hold) {
  std::lock_guard l(state().mutex);
  if (!copy_engine) return;
  {
    std::lock_guard cl(copy_engine->m);
    copy_engine->held = hold != 0;
  }
  copy_engine->cv.notify_all();
}
EXPORT void lrrt_hsa_standin_pause_next_copy_call(int pause) {
  {
    std::lock_guard l(pause_mutex);
    pause_armed = pause != 0;
    pause_holding = pause != 0;
  }
  pause_cv.notify_all();
}

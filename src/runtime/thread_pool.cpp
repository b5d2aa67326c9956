#include "thread_pool.hpp"

#include <algorithm>
#include <stdexcept>

#include "error.hpp"
#include "wait.hpp"

namespace lrrt::rt {

ThreadPool::ThreadPool(unsigned threads, std::chrono::microseconds spin, const ThreadFactory& factory)
    : spin_(spin), requested_(std::max(threads, 1u)) {
  workers_.reserve(requested_ - 1);
  // A worker that cannot be started (std::system_error: EAGAIN at
  // RLIMIT_NPROC, ENOMEM without address space for its stack) ends the
  // loop. Workers are numbered in order, so those started are 1..k and the
  // pool is complete with k + 1 threads.
  for (unsigned i = 1; i < requested_; ++i) {
    try {
      std::function<void()> body = [this, i] { worker_main(i); };
      std::thread t = factory ? factory(std::move(body)) : std::thread(std::move(body));
      if (!t.joinable()) throw std::runtime_error("the thread factory returned no thread");
      workers_.push_back(std::move(t));
    } catch (const std::exception& e) {
      start_failure_ = fmt::format("worker thread {} of {} could not be started: {}", i, requested_ - 1, e.what());
      break;
    } catch (...) {
      start_failure_ = fmt::format("worker thread {} of {} could not be started", i, requested_ - 1);
      break;
    }
  }
  if (start_failure_.empty()) return;
  if (workers_.empty())
    LRRT_THROW(LR_ERROR_RUNTIME, "cannot start a thread pool of {} threads: {}", requested_, start_failure_);
  // What stopped this pool stops the next thread too (a queue's worker):
  // give back the last few workers, keeping one.
  const size_t started = workers_.size();
  const size_t keep = started - std::min<size_t>(kHeadroomThreads, started - 1);
  stop_workers(keep);
  if (keep < started)
    start_failure_ += fmt::format("; {} of the {} started were stopped again to leave room for other threads",
                                  started - keep, started);
}

ThreadPool::~ThreadPool() { stop_workers(0); }

void ThreadPool::stop_workers(size_t keep) {
  {
    std::lock_guard lock(mutex_);
    if (keep == 0) stopping_ = true;
    live_ = static_cast<unsigned>(keep) + 1;  // workers 1..keep go on
    generation_.fetch_add(1, std::memory_order_release);  // ends the workers' spin
  }
  wake_.notify_all();
  for (size_t i = keep; i < workers_.size(); ++i)
    if (workers_[i].joinable()) workers_[i].join();
  workers_.resize(std::min(keep, workers_.size()));
}

void ThreadPool::run(unsigned n, const std::function<void(unsigned)>& task) {
  n = std::clamp(n, 1u, threads());
  std::unique_lock call(call_mutex_);
  if (n > 1) {
    {
      std::lock_guard lock(mutex_);
      task_ = &task;
      active_ = n;
      remaining_ = n - 1;
      error_ = nullptr;
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
  }
  std::exception_ptr mine;
  try {
    task(0);
  } catch (...) {
    mine = std::current_exception();
  }
  if (n > 1) {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return remaining_ == 0; });
    task_ = nullptr;
    if (!mine) mine = error_;
  }
  if (mine) std::rethrow_exception(mine);
}

void ThreadPool::parallel_for(uint64_t count, const Body& body) {
  if (count == 0) return;
  if (workers_.empty() || count == 1) {
    body(0, count, 0);
    return;
  }
  // About four chunks per thread balances uneven workgroups without making
  // the shared counter hot.
  struct Loop {
    const Body& body;
    uint64_t count;
    uint64_t chunk;
    std::atomic<uint64_t> next{0};
    std::atomic<bool> stop{false};
  } loop{body, count, std::max<uint64_t>(1, count / (uint64_t(threads()) * 4))};
  // One captured pointer: the task fits std::function's inline storage.
  run(threads(), [&loop](unsigned thread) {
    while (!loop.stop.load(std::memory_order_relaxed)) {
      uint64_t begin = loop.next.fetch_add(loop.chunk, std::memory_order_relaxed);
      if (begin >= loop.count) break;
      uint64_t end = std::min(loop.count, begin + loop.chunk);
      if (!loop.body(begin, end, thread)) loop.stop.store(true, std::memory_order_relaxed);
    }
  });
}

void ThreadPool::worker_main(unsigned id) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(unsigned)>* task = nullptr;
    const auto spin_until = std::chrono::steady_clock::now() + spin_;
    while (generation_.load(std::memory_order_acquire) == seen && std::chrono::steady_clock::now() < spin_until)
      cpu_relax();
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_.load(std::memory_order_relaxed) != seen; });
      if (stopping_ || id >= live_) return;
      seen = generation_.load(std::memory_order_relaxed);
      if (id >= active_) continue;
      task = task_;
    }
    std::exception_ptr error;
    try {
      (*task)(id);
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard lock(mutex_);
    if (error && !error_) error_ = error;
    if (--remaining_ == 0) done_.notify_one();
  }
}

}  // namespace lrrt::rt

#include "thread_pool.hpp"

#include <algorithm>
#include <chrono>

namespace lrrt::rt::host {

ThreadPool::ThreadPool(uint32_t threads) {
  uint32_t workers = threads > 1 ? threads - 1 : 0;
  workers_.reserve(workers);
  for (uint32_t i = 0; i < workers; ++i) workers_.emplace_back([this, i] { worker_main(i + 1); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_chunks(uint32_t participant) {
  while (!stop_.load(std::memory_order_relaxed)) {
    uint64_t begin = next_.fetch_add(chunk_, std::memory_order_relaxed);
    if (begin >= count_) break;
    uint64_t end = std::min(count_, begin + chunk_);
    if (!(*body_)(begin, end, participant)) stop_.store(true, std::memory_order_relaxed);
  }
}

void ThreadPool::parallel_for(uint64_t count, const Body& body) {
  if (count == 0) return;
  // A single chunk or no workers: run inline, no wake-ups.
  if (workers_.empty() || count == 1) {
    body(0, count, 0);
    return;
  }
  std::lock_guard call(call_mutex_);
  {
    std::lock_guard lock(mutex_);
    body_ = &body;
    count_ = count;
    // About four chunks per participant balances uneven workgroups without
    // making the shared counter hot.
    chunk_ = std::max<uint64_t>(1, count / (participants() * 4));
    next_.store(0, std::memory_order_relaxed);
    stop_.store(false, std::memory_order_relaxed);
    busy_workers_ = static_cast<uint32_t>(workers_.size());
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  run_chunks(0);
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return busy_workers_ == 0; });
  body_ = nullptr;
}

void ThreadPool::worker_main(uint32_t id) {
  uint64_t seen = 0;
  for (;;) {
    // Spin a little: dispatches often come back to back.
    auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
    while (generation_.load(std::memory_order_acquire) == seen &&
           std::chrono::steady_clock::now() < spin_until) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
    }
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load() != seen; });
      seen = generation_.load();
      if (stopping_) return;
    }
    run_chunks(id);
    {
      std::lock_guard lock(mutex_);
      if (--busy_workers_ == 0) done_.notify_one();
    }
  }
}

}  // namespace lrrt::rt::host

// Runs one parallel loop at a time over [0, count) on a fixed set of worker
// threads plus the calling thread. Workers spin briefly before sleeping so
// back-to-back dispatches do not pay a wake-up each.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace lrrt::rt::host {

class ThreadPool {
 public:
  // Body: (first index, last index exclusive, participant id). Returns false
  // to stop the loop early (an error); the pool stops handing out chunks.
  using Body = std::function<bool(uint64_t begin, uint64_t end, uint32_t participant)>;

  explicit ThreadPool(uint32_t threads);  // total participants incl. caller
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  uint32_t participants() const { return static_cast<uint32_t>(workers_.size()) + 1; }

  // Blocks until every index ran or the body returned false. Only one caller
  // at a time (the pool serialises callers).
  void parallel_for(uint64_t count, const Body& body);

 private:
  void worker_main(uint32_t id);
  void run_chunks(uint32_t participant);

  std::vector<std::thread> workers_;
  std::mutex call_mutex_;  // one parallel_for at a time

  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  bool stopping_ = false;
  std::atomic<uint64_t> generation_{0};
  uint32_t busy_workers_ = 0;  // guarded by mutex_

  // The current loop.
  const Body* body_ = nullptr;
  uint64_t count_ = 0;
  uint64_t chunk_ = 1;
  std::atomic<uint64_t> next_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace lrrt::rt::host

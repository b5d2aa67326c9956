// A fixed team of threads for fork-join work, shared by the host backend
// (a dispatch's workgroups) and the staging pipeline (its lanes).
//
// run(n, task) runs task(0..n-1) in parallel, task(0) on the calling thread,
// and returns when all ended, rethrowing the first exception a task threw.
// parallel_for(count, body) deals [0, count) out in chunks to every thread.
// Workers spin for `spin` before sleeping, so work that comes in runs (a loop
// of launches or copies) starts without a wake-up (tens of microseconds).
// One run at a time: concurrent callers are serialised.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace lrrt::rt {

class ThreadPool {
 public:
  // Starts a thread running `body` (std::thread by default); tests pass one
  // that fails, as thread creation does when the process reaches
  // RLIMIT_NPROC or runs out of address space.
  using ThreadFactory = std::function<std::thread(std::function<void()> body)>;

  // threads: the caller included (threads - 1 workers are started). When a
  // worker cannot be started the pool runs with those that did start, less
  // the last kHeadroomThreads of them (one is kept), which it stops again:
  // what stopped the pool would stop the next thread too (a queue's
  // worker). start_failure() says what happened. When none could start (and
  // some were asked for) it throws lrrt::Error(LR_ERROR_RUNTIME). It never
  // leaves a started worker behind.
  // Eight: a thread running kernels holds about 80 MiB of address space (its
  // 8 MiB stack, an 8 MiB kernel stack under a 64 MiB guard), the first few
  // a malloc arena (64 MiB) as well; with four, a queue thread started right
  // after a pool under an address-space limit failed 9 times in 60 runs.
  // start_kernel_thread returns only once its thread has all of that, so the
  // pool sizes itself with every worker's memory counted.
  static constexpr size_t kHeadroomThreads = 8;
  ThreadPool(unsigned threads, std::chrono::microseconds spin, const ThreadFactory& factory = {});
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  unsigned threads() const { return static_cast<unsigned>(workers_.size()) + 1; }
  // What the constructor was asked for, and why fewer threads run ("" when
  // every one started).
  unsigned requested_threads() const { return requested_; }
  const std::string& start_failure() const { return start_failure_; }

  // n is clamped to 1..threads().
  void run(unsigned n, const std::function<void(unsigned)>& task);

  // Body: (first index, last index exclusive, thread id < threads()).
  // Returns false to stop the loop early (an error): no further chunk is
  // handed out. Runs inline when there is one chunk or no worker.
  using Body = std::function<bool(uint64_t begin, uint64_t end, unsigned thread)>;
  void parallel_for(uint64_t count, const Body& body);

 private:
  void worker_main(unsigned id);
  void stop_workers(size_t keep);  // stops and joins the workers after the first `keep`

  const std::chrono::microseconds spin_;
  unsigned requested_ = 1;
  std::string start_failure_;
  std::vector<std::thread> workers_;
  std::mutex call_mutex_;  // one run at a time

  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::atomic<uint64_t> generation_{0};  // written under mutex_; read without it by spinning workers
  unsigned active_ = 0;     // tasks 1..active_-1 run on workers this generation
  unsigned remaining_ = 0;  // worker tasks not finished
  bool stopping_ = false;
  unsigned live_ = ~0u;  // workers with an id from live_ on return
  const std::function<void(unsigned)>* task_ = nullptr;
  std::exception_ptr error_;
};

}  // namespace lrrt::rt

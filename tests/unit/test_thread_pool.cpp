// The runtime's one thread pool (src/runtime/thread_pool.hpp), used by the
// host backend's dispatches and the staging pipeline's lanes.
#include <doctest/doctest.h>

#include <atomic>
#include <random>
#include <stdexcept>
#include <vector>

#include "thread_pool.hpp"

namespace rt = lrrt::rt;
using std::chrono::microseconds;

TEST_CASE("thread pool: run() runs every task once and rethrows the first failure") {
  for (unsigned threads : {1u, 2u, 5u}) {
    rt::ThreadPool pool(threads, microseconds(200));
    CHECK(pool.threads() == threads);
    for (int round = 0; round < 50; ++round) {
      std::vector<std::atomic<int>> hits(threads);
      const unsigned n = 1 + unsigned(round) % threads;
      pool.run(n, [&](unsigned i) { hits[i].fetch_add(1); });
      for (unsigned i = 0; i < threads; ++i) REQUIRE(hits[i].load() == (i < n ? 1 : 0));
    }
    const unsigned bad = threads - 1;
    std::atomic<int> ran{0};
    CHECK_THROWS_WITH(pool.run(threads,
                               [&](unsigned i) {
                                 ran.fetch_add(1);
                                 if (i == bad) throw std::runtime_error("task failed");
                               }),
                      "task failed");
    CHECK(ran.load() == int(threads));
    std::atomic<int> after{0};
    pool.run(threads, [&](unsigned) { after.fetch_add(1); });  // still usable
    CHECK(after.load() == int(threads));
  }
}

TEST_CASE("thread pool: parallel_for visits every index exactly once, on valid thread ids") {
  std::mt19937 rng(std::random_device{}());
  for (unsigned threads : {1u, 3u, 4u}) {
    rt::ThreadPool pool(threads, microseconds(0));  // no spin: every run wakes sleeping workers
    for (int round = 0; round < 20; ++round) {
      const uint64_t count = std::uniform_int_distribution<uint64_t>(0, 5000)(rng);
      std::vector<std::atomic<int>> hits(count);
      std::atomic<bool> bad_thread{false};
      pool.parallel_for(count, [&](uint64_t begin, uint64_t end, unsigned thread) {
        if (thread >= threads || begin >= end || end > count) bad_thread = true;
        for (uint64_t i = begin; i < end; ++i) hits[i].fetch_add(1);
        return true;
      });
      CHECK_FALSE(bad_thread.load());
      for (uint64_t i = 0; i < count; ++i) REQUIRE(hits[i].load() == 1);
    }
  }
}

TEST_CASE("thread pool: parallel_for stops handing out chunks once the body returns false") {
  const unsigned threads = 4;
  rt::ThreadPool pool(threads, microseconds(50));
  const uint64_t count = 100000, chunk = count / (threads * 4);
  std::atomic<uint64_t> visited{0}, calls{0};
  // Every chunk fails: a thread stops after its first, so at most one chunk
  // per thread runs, whatever the timing.
  pool.parallel_for(count, [&](uint64_t begin, uint64_t end, unsigned) {
    visited.fetch_add(end - begin);
    calls.fetch_add(1);
    return false;
  });
  CHECK(calls.load() >= 1);
  CHECK(calls.load() <= threads);
  CHECK(visited.load() == calls.load() * chunk);
}

TEST_CASE("thread pool: an exception in parallel_for reaches the caller, the pool stays usable") {
  rt::ThreadPool pool(3, microseconds(50));
  CHECK_THROWS_WITH(pool.parallel_for(1000,
                                      [&](uint64_t begin, uint64_t, unsigned) -> bool {
                                        if (begin == 0) throw std::runtime_error("body failed");
                                        return true;
                                      }),
                    "body failed");
  std::atomic<uint64_t> sum{0};
  pool.parallel_for(1000, [&](uint64_t begin, uint64_t end, unsigned) {
    for (uint64_t i = begin; i < end; ++i) sum.fetch_add(i);
    return true;
  });
  CHECK(sum.load() == 999 * 1000 / 2);
}

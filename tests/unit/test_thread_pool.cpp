// The runtime's one thread pool (src/runtime/thread_pool.hpp), used by the
// host backend's dispatches and the staging pipeline's lanes.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <optional>
#include <random>
#include <stdexcept>
#include <system_error>
#include <vector>

#include "lrrt/lrrt.hpp"
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

TEST_CASE("thread pool: a worker that cannot be started leaves a smaller pool or an error, never a hang") {
  // Thread creation fails as it does at RLIMIT_NPROC or without address
  // space for a stack: std::thread throws std::system_error (EAGAIN).
  // Before the fix the constructor unwound with started workers still
  // joinable (std::terminate) or waiting on the pool (a hang).
  std::mt19937 rng(std::random_device{}());
  for (int round = 0; round < 20; ++round) {
    const unsigned asked = std::uniform_int_distribution<unsigned>(2, 12)(rng);
    const unsigned allowed = std::uniform_int_distribution<unsigned>(0, asked - 2)(rng);  // fewer than asked - 1
    CAPTURE(asked);
    CAPTURE(allowed);
    std::atomic<unsigned> started{0};
    rt::ThreadPool::ThreadFactory factory = [&](std::function<void()> body) {
      if (started.load() == allowed) throw std::system_error(EAGAIN, std::generic_category(), "thread creation");
      started.fetch_add(1);
      return std::thread(std::move(body));
    };
    if (allowed == 0) {
      try {
        rt::ThreadPool pool(asked, microseconds(0), factory);
        FAIL("a pool without any of its workers was made");
      } catch (const lrrt::Error& e) {
        CHECK(e.status() == LR_ERROR_RUNTIME);
        const std::string message = e.what();
        CHECK_MESSAGE(message.find("could not be started") != std::string::npos, message);
        CHECK_MESSAGE(message.find(std::to_string(asked) + " threads") != std::string::npos, message);
      }
      continue;
    }
    std::optional<rt::ThreadPool> pool;
    pool.emplace(asked, microseconds(round % 2 ? 50 : 0), factory);
    // The last few started are stopped again (room for the next threads),
    // one is kept.
    const unsigned kept = allowed - unsigned(std::min<size_t>(rt::ThreadPool::kHeadroomThreads, allowed - 1));
    CHECK(pool->threads() == kept + 1);
    CHECK(pool->requested_threads() == asked);
    CHECK_MESSAGE(pool->start_failure().find("could not be started") != std::string::npos, pool->start_failure());
    if (kept < allowed)
      CHECK_MESSAGE(pool->start_failure().find("stopped again") != std::string::npos, pool->start_failure());
    // Every thread that exists takes part, each task once; asking for more
    // than there are is clamped.
    std::vector<std::atomic<int>> hits(asked);
    pool->run(asked, [&](unsigned i) { hits[i].fetch_add(1); });
    for (unsigned i = 0; i < asked; ++i) REQUIRE(hits[i].load() == (i <= kept ? 1 : 0));
    const uint64_t count = std::uniform_int_distribution<uint64_t>(1, 3000)(rng);
    std::vector<std::atomic<int>> seen(count);
    pool->parallel_for(count, [&](uint64_t begin, uint64_t end, unsigned) {
      for (uint64_t i = begin; i < end; ++i) seen[i].fetch_add(1);
      return true;
    });
    for (uint64_t i = 0; i < count; ++i) REQUIRE(seen[i].load() == 1);
    pool.reset();  // joins the started workers: returns, does not hang
  }
  // The check can fail: with every worker allowed there is no failure.
  std::atomic<unsigned> made{0};
  rt::ThreadPool full(4, microseconds(0), [&](std::function<void()> body) {
    made.fetch_add(1);
    return std::thread(std::move(body));
  });
  CHECK(made.load() == 3);
  CHECK(full.threads() == 4);
  CHECK(full.start_failure().empty());
}

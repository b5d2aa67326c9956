// Test-only kernels for the error paths: one that never returns (a hang), one
// that writes to an address it is given (a fault), two that recurse as deep
// as they are told (a stack overflow, host only: 1 KiB frames, and frames of
// any size), two that block and read the signal mask (host only); and one
// that shows two dispatches running at the same time (a rendezvous).
#include "lrrt_kernel.h"

LRRT_KERNEL(spin_forever, (const uint32_t*, flag)) {
  LRRT_FOR_EACH_THREAD {
    if (LRRT_GLOBAL_ID_X == 0)
      while (LRRT_LOAD_ACQUIRE_U32(flag) == 0) {
      }
  }
}

LRRT_KERNEL(write_to_address, (uint64_t, address)) {
  LRRT_FOR_EACH_THREAD {
    if (LRRT_GLOBAL_ID_X == 0) *(volatile uint32_t*)address = 1;  // 64-bit targets only
  }
}

// Finishes its wait only while another dispatch runs at the same time: raises
// its own flag (mine[0]), spins until the partner's flag (mine[partner], a
// word offset) is up or spin_limit polls passed, and writes 1 (met) or 2
// (gave up) to mine[1]. The partner's word is reached through an offset so
// that a graph can declare each dispatch's own words only (no edge).
LRRT_KERNEL(rendezvous, (uint32_t*, mine), (int32_t, partner), (uint32_t, spin_limit)) {
  LRRT_FOR_EACH_THREAD {
    if (LRRT_GLOBAL_ID_X == 0) {
      LRRT_STORE_RELEASE_U32(&mine[0], 1);
      uint32_t polls = 0;
      while (LRRT_LOAD_ACQUIRE_U32(&mine[partner]) == 0 && polls < spin_limit) LRRT_POLL_PAUSE(++polls);
      LRRT_STORE_RELEASE_U32(&mine[1], LRRT_LOAD_ACQUIRE_U32(&mine[partner]) != 0 ? 1 : 2);
    }
  }
}

// Recursion the compiler cannot bound (metadata .uses_dynamic_stack: true on
// AMD): out[i] = the sum of 0..(depth + i % 3), computed `depth + i % 3`
// calls deep with a volatile frame each (no loop, no tail call). On the GPU
// its stack lives in the private segment the dispatch packet asks for.
#if defined(__HIP__)
#define LRRT_TEST_NOINLINE_FN __attribute__((device)) __attribute__((noinline))
#elif defined(__CUDACC__)
#define LRRT_TEST_NOINLINE_FN __device__ __noinline__
#else
#define LRRT_TEST_NOINLINE_FN __attribute__((noinline))
#endif
LRRT_TEST_NOINLINE_FN static uint32_t lrrt_test_sum_to(uint32_t depth) {
  volatile uint32_t frame[4];
  frame[depth % 4] = depth;
  const uint32_t below = depth ? lrrt_test_sum_to(depth - 1) : 0;
  return below + frame[depth % 4];
}

LRRT_KERNEL(recurse_sum, (uint32_t*, out), (uint32_t, depth), (uint32_t, n)) {
  LRRT_FOR_EACH_THREAD {
    const uint32_t i = LRRT_GLOBAL_ID_X;
    if (i < n) out[i] = lrrt_test_sum_to(depth + i % 3);
  }
}

// Host build only: recursion `depth` calls deep, each frame 1 KiB of
// volatile bytes read after the call returns, so the compiler can neither
// turn it into a loop (the call is not a tail call) nor drop the frames. A
// small depth returns the sum of (d & 0xff) for d = 0..depth; a depth of
// millions overflows the stack of the thread that runs it (a fault, which
// the runtime must report like any other).
#if !defined(__CUDACC__) && !defined(__HIP__)
namespace {
__attribute__((noinline)) uint64_t recurse(uint64_t depth) {
  volatile unsigned char frame[1024];
  frame[depth % 1024] = static_cast<unsigned char>(depth);
  const uint64_t below = depth ? recurse(depth - 1) : 0;
  return below + frame[depth % 1024];
}
}  // namespace

LRRT_KERNEL(recurse_deep, (uint64_t*, out), (uint64_t, depth)) {
  LRRT_FOR_EACH_THREAD {
    if (LRRT_LOCAL_ID_X == 0) out[LRRT_GROUP_ID_X] = recurse(depth);
  }
}

// The same with frames of `frame_bytes` (alloca) that it fills from the
// lowest address up, as code initialising its locals does (a byte per 64):
// a frame larger than a thread's one guard page steps over it and writes
// into whatever lies below (another thread's stack) before it reaches the
// guard, unless the guard is larger than the frame. A small depth returns
// what recurse_deep does.
__attribute__((noinline)) uint64_t recurse_frame(uint64_t depth, uint64_t frame_bytes) {
  auto* frame = static_cast<volatile unsigned char*>(__builtin_alloca(frame_bytes));
  for (uint64_t i = 0; i < frame_bytes; i += 64) frame[i] = static_cast<unsigned char>(depth);
  frame[frame_bytes - 1] = static_cast<unsigned char>(depth);
  const uint64_t below = depth ? recurse_frame(depth - 1, frame_bytes) : 0;
  return below + frame[0];
}

LRRT_KERNEL(recurse_frames, (uint64_t*, out), (uint64_t, depth), (uint64_t, frame_bytes)) {
  LRRT_FOR_EACH_THREAD {
    if (LRRT_LOCAL_ID_X == 0) out[LRRT_GROUP_ID_X] = recurse_frame(depth, frame_bytes < 1 ? 1 : frame_bytes);
  }
}
#endif

// Host build only: kernels that change and read the signal mask of the
// thread that runs them. A kernel that blocks a signal and then faults must
// not leave the signal blocked on the runtime's thread.
#if !defined(__CUDACC__) && !defined(__HIP__)
#include <signal.h>

// Blocks `signo`, then writes to `address` (a fault for a bad one).
LRRT_KERNEL(block_signal_then_fault, (int32_t, signo), (uint64_t, address)) {
  LRRT_FOR_EACH_THREAD {
    if (LRRT_LOCAL_ID_X == 0) {
      sigset_t set;
      sigemptyset(&set);
      sigaddset(&set, signo);
      pthread_sigmask(SIG_BLOCK, &set, nullptr);
      *(volatile uint32_t*)address = 1;
    }
  }
}

// out[group] = 1 when `signo` is blocked on the thread running the group.
LRRT_KERNEL(signal_blocked, (uint32_t*, out), (int32_t, signo)) {
  LRRT_FOR_EACH_THREAD {
    if (LRRT_LOCAL_ID_X == 0) {
      sigset_t set;
      sigemptyset(&set);
      pthread_sigmask(SIG_BLOCK, nullptr, &set);
      out[LRRT_GROUP_ID_X] = sigismember(&set, signo) == 1 ? 1u : 0u;
    }
  }
}
#endif

// Host build only: a constructor with a visible side effect, so tests can
// tell whether a tool loaded this library (`lrrt inspect` must not: it reads
// the file only).
#if !defined(__CUDACC__) && !defined(__HIP__)
#include <cstdio>
#include <cstdlib>

__attribute__((constructor)) static void lrrt_test_mark_loaded() {
  if (const char* path = std::getenv("LRRT_TEST_LOAD_MARKER"))
    if (FILE* f = std::fopen(path, "w")) std::fclose(f);
}
#endif

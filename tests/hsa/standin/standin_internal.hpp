// What the stand-in's files share. libhsa-standin.so is a test-only
// stand-in for libhsa-runtime64 implementing the subset lrrt calls. One GPU
// agent (gfx1100 unless $LRRT_HSA_STANDIN_ISA says otherwise), a CPU agent,
// memory pools backed by malloc, signals, and AQL queues whose
// packet-processor thread reads packets from the ring and runs each dispatch
// with the host build of the same kernel (<src>.host.so in
// $LRRT_HSA_STANDIN_KERNEL_DIR / $LRRT_KERNEL_DIR, each one folder or several
// separated by ':', else the build's kernel dir). It records every
// dispatch's kernarg bytes for tests.
//
// Not a GPU model: workgroups run one after another on the processor thread;
// memory is host memory (so "device" pointers are host-dereferenceable).
//
// One file per concern:
//   runtime.cpp       hsa_init/hsa_shut_down, status strings, system info, the
//                     shared state, counters and the dispatch records' hooks
//   faults.cpp        fault injection ($LRRT_HSA_STANDIN_FAULT), queue errors,
//                     GPU memory faults and hardware exceptions as ROCr reports them
//   agents.cpp        agents, the ISA, memory pools and allocations
//   signals.cpp       signals, completing a packet's or copy's signal, profiling
//   dispatch.cpp      a kernel dispatch on the host: host kernel libraries, geometry
//   memory_model.cpp  the write-back L2s the copy engine does not see
//   queues.cpp        AQL queues and the packet processor (AQL ordering and
//                     worst-order mode are described there)
//   copies.cpp        the copy engine (hsa_amd_memory_async_copy) and its hooks
//   executables.cpp   code-object readers and executables (the loader)
// Internal names live in namespace standin; only the HSA entry points and the
// test hooks (EXPORT) are exported.
#ifndef LRRT_HSA_STANDIN_INTERNAL_HPP_
#define LRRT_HSA_STANDIN_INTERNAL_HPP_

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "lrrt/formats/amdgpu.hpp"
#include "lrrt/host_kernel_abi.h"
#include "standin_hooks.h"

#define EXPORT extern "C" __attribute__((visibility("default")))

namespace standin {

using Clock = std::chrono::steady_clock;
inline uint64_t now_ns() {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      Clock::now().time_since_epoch())
                      .count());
}

constexpr uint64_t kCpuAgent = 0x1000, kGpuAgent = 0x2000, kIsa = 0x3000;
constexpr uint64_t kGpuPool = 0x10, kGroupPool = 0x11, kFinePool = 0x20, kKernargPool = 0x21;

// ------------------------------------------------------------ global state
struct Faults {
  std::string queue_error_kernel;
  std::string lost_signal_kernel;
  std::string vm_fault_kernel;
  std::string hw_exception_kernel;
  uint64_t alloc_fail_bytes = 0;
  bool init_fail = false;
  bool no_gpu = false;
};

struct State {
  std::mutex mutex;
  Faults faults;
  int init_count = 0;
  std::map<uintptr_t, size_t> allocations;  // all pools
  std::map<uintptr_t, size_t> device_allocations;  // the coarse-grained GPU pool: cached in the L2s
  // hsa_amd_register_system_event_handler; cleared when the last
  // hsa_shut_down ends the runtime, as ROCr's are.
  std::vector<std::pair<hsa_amd_system_event_callback_t, void*>> event_handlers;
  bool vm_fault_delivered = false;  // ROCr's VMFaultHandler does not re-arm itself
  bool hw_exception_delivered = false;  // nor does its HwExceptionHandler
  std::vector<struct SQueue*> queues;  // live queues, all of the one GPU agent
  uint32_t queue_max_size = 4096;      // $LRRT_HSA_STANDIN_QUEUE_MAX at the first hsa_init
  std::vector<lrrt_hsa_standin_dispatch_t> dispatches;
  std::map<std::string, uint64_t> counters;
  std::string isa = "gfx1100";
};
State& state();  // runtime.cpp
// Counted on the producer's hot path: atomics, not the counter map.
extern std::atomic<uint64_t> doorbell_rings, write_index_adds;
void count(const char* name, uint64_t n = 1);

// ------------------------------------------------------------ faults (faults.cpp)
void set_faults(const char* spec);
Faults faults();

// ------------------------------------------------------------ signals
// Reference-counted, as ROCr's signals are: hsa_signal_destroy drops the
// handle's reference, and a store or a subtraction holds one of its own until
// its notify is done, so the client that saw the value change may destroy
// the signal while the notifying thread still wakes its waiters.
struct SSignal {
  std::atomic<int64_t> value;
  std::atomic<int> references{1};
  std::atomic<int> waiters{0};
  bool doorbell = false;  // a queue's doorbell: stores to it are counted
  std::mutex m;
  std::condition_variable cv;
  uint64_t start = 0, end = 0;  // profiling, ns
  explicit SSignal(int64_t v) : value(v) {}
  void notify() {
    if (waiters.load(std::memory_order_seq_cst) == 0) return;
    std::lock_guard l(m);
    cv.notify_all();
  }
  void retain() { references.fetch_add(1, std::memory_order_relaxed); }
  void release() {
    if (references.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
  void store(int64_t v) {
    retain();
    value.store(v, std::memory_order_seq_cst);
    notify();
    release();
  }
  void sub(int64_t v) {
    retain();
    value.fetch_sub(v, std::memory_order_seq_cst);
    notify();
    release();
  }
  static bool satisfied(hsa_signal_condition_t c, int64_t v, int64_t cmp) {
    switch (c) {
      case HSA_SIGNAL_CONDITION_EQ: return v == cmp;
      case HSA_SIGNAL_CONDITION_NE: return v != cmp;
      case HSA_SIGNAL_CONDITION_LT: return v < cmp;
      case HSA_SIGNAL_CONDITION_GTE: return v >= cmp;
    }
    return true;
  }
  // Waits up to timeout_ns (UINT64_MAX = forever); returns the value seen.
  int64_t wait(hsa_signal_condition_t c, int64_t cmp, uint64_t timeout_ns);  // signals.cpp
};
inline SSignal* sig(hsa_signal_t s) { return reinterpret_cast<SSignal*>(s.handle); }
// Completes a packet's or a copy's signal (signals.cpp): its profiling
// times, then a decrement, unless the lost_signal fault names `kernel`.
void complete(hsa_signal_t s, uint64_t start, const std::string& kernel = {});

// ------------------------------------------------------------ kernels (executables.cpp)
struct SKernel {
  lrrt::formats::KernelInfo info;
  const lrrt_host_kernel_t* host = nullptr;
};

// ------------------------------------------------------------ queues (queues.cpp)
struct SQueue {
  hsa_queue_t q;  // first: lrrt sees this
  std::atomic<uint64_t> read{0}, write{0};
  void (*callback)(hsa_status_t, hsa_queue_t*, void*) = nullptr;
  void* data = nullptr;
  std::atomic<bool> stop{false};
  std::atomic<bool> dead{false};
  std::thread thread;
  void* ring = nullptr;
};

// faults.cpp: a queue error, a GPU memory fault, a hardware exception.
void queue_fail(SQueue* q, hsa_status_t status);
void vm_fault(SQueue* q, uint64_t address, uint32_t reason, const char* why);
void hw_exception(uint32_t cause, const char* why);

// dispatch.cpp: runs a dispatch on the processor thread. Returns false when
// the queue failed.
bool run_dispatch(SQueue* q, const hsa_kernel_dispatch_packet_t& p, uint16_t header);

// ------------------------------------------------------------ memory model (memory_model.cpp)
struct Snapshot;
// Before a dispatch: snapshots of what it can reach. After it: the bytes it
// changed become dirty in L2 `which`.
struct DispatchWindow {
  size_t which = 0;
  std::vector<std::unique_ptr<Snapshot>> snaps;
  DispatchWindow(const void* kernarg, size_t kernarg_size);
  void close(bool ran);
  ~DispatchWindow();
};
// As many L2s as `isa` has (at the first hsa_init).
void configure_l2s(const std::string& isa);
// A release fence of `scope` by a dispatch that ran on L2 `which`, or by a
// barrier-AND (which = SIZE_MAX: every L2).
void release_fence(uint32_t scope, size_t which);
// The copy engine's copy: it reads and writes memory, not the L2s.
void engine_copy(void* dst, const void* src, size_t size);
// A freed allocation's dirty bytes go with it.
void forget_dirty(uintptr_t base);

// ------------------------------------------------------------ worst-order mode (queues.cpp)
// Worst-order mode (LRRT_TEST_WORST_ORDER=1 at hsa_init, or
// lrrt_hsa_standin_set_worst_order): queues.cpp describes it.
extern std::atomic<bool> worst_order;

// ------------------------------------------------------------ copy engine (copies.cpp)
struct CopyEngine;
extern CopyEngine* copy_engine;  // started by the first hsa_init, stopped by the last hsa_shut_down
CopyEngine* start_copy_engine();
// Stops the engine's thread (queued copies whose dependencies never complete
// are dropped) and deletes it.
void stop_copy_engine(CopyEngine* ce);
// In worst-order mode, true when no copy can make progress now; always true
// outside it.
bool copy_engine_quiet();

// ------------------------------------------------------------ shared helpers
// agents.cpp: [p, p + size) lies in one pool allocation.
bool known_range(const void* p, size_t size);

template <typename T>
void put(void* out, T v) {
  std::memcpy(out, &v, sizeof v);
}
inline void put_str(void* out, const std::string& s, size_t cap = 64) {
  std::memset(out, 0, cap);
  std::memcpy(out, s.data(), std::min(s.size(), cap - 1));
}

}  // namespace standin

#endif

// libhsa-standin.so: a test-only stand-in for libhsa-runtime64 implementing
// the subset lrrt calls. One GPU agent (gfx1100 unless
// $LRRT_HSA_STANDIN_ISA says otherwise), a CPU agent, memory pools backed by
// malloc, signals, and AQL queues whose packet-processor thread reads packets
// from the ring and runs each dispatch with the host build of the same kernel
// (<src>.host.so in $LRRT_HSA_STANDIN_KERNEL_DIR / $LRRT_KERNEL_DIR, each one
// folder or several separated by ':', else the build's kernel dir). It
// records every dispatch's kernarg bytes for tests.
//
// Not a GPU model: workgroups run one after another on the processor thread;
// memory is host memory (so "device" pointers are host-dereferenceable).
//
// AQL ordering. Each queue's processor takes packets in ring order. A
// dispatch with the barrier bit starts only after every earlier packet of its
// queue finished; one without it may start before earlier packets finish. A
// barrier-AND packet completes once its dependency signals are 0 and holds
// back every later packet of its queue until then. The copy engine (one
// thread) runs async copies in submission order, each after its dependency
// signals are 0.
//  - Default mode: dispatches run one at a time in ring order (a legal order,
//    and the one lrrt's ordinary launches rely on anyway: they set the
//    barrier bit).
//  - Worst-order mode (LRRT_TEST_WORST_ORDER=1 at hsa_init, or
//    lrrt_hsa_standin_set_worst_order): the open run of dispatches (a
//    dispatch and the following ones without barrier bit) is held back and
//    run later packets first, when it ends: at a packet with the barrier bit,
//    at a barrier-AND whose signals are not yet complete (the run finishes
//    before it waits; one that is complete lets the run go on), or when the
//    queue has no more packets. Before each dispatch runs and before a
//    barrier-AND looks at its signals, every copy that could run now runs
//    (copies as early as legal). Deterministic: the order
//    depends only on the packets and signals, not on timing, as long as a
//    replay's copies are submitted before its packets (lrrt's hsa lowering
//    does) and all its packets are on one queue (several queues' processors
//    run concurrently). A missing barrier bit or dependency signal then
//    shows as a wrong result: a consumer runs before its producer, or a copy
//    reads a buffer before the dispatch that writes it. Counter
//    "dispatches_reordered" counts dispatches that ran before an earlier one.
#include <dirent.h>
#include <dlfcn.h>
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "lrrt/formats/amdgpu.hpp"
#include "lrrt/host_kernel_abi.h"
#include "standin_hooks.h"

#ifndef LRRT_STANDIN_DEFAULT_KERNEL_DIR
#define LRRT_STANDIN_DEFAULT_KERNEL_DIR ""
#endif

#define EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using Clock = std::chrono::steady_clock;
uint64_t now_ns() {
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
  uint64_t alloc_fail_bytes = 0;
  bool init_fail = false;
  bool no_gpu = false;
};

struct State {
  std::mutex mutex;
  Faults faults;
  int init_count = 0;
  std::map<uintptr_t, size_t> allocations;  // all pools
  std::vector<lrrt_hsa_standin_dispatch_t> dispatches;
  std::map<std::string, uint64_t> counters;
  std::string isa = "gfx1100";
};
State& state() {
  static State s;
  return s;
}
// Counted on the producer's hot path: atomics, not the counter map.
std::atomic<uint64_t> doorbell_rings{0}, write_index_adds{0};
void count(const char* name, uint64_t n = 1) {
  std::lock_guard l(state().mutex);
  state().counters[name] += n;
}

void set_faults(const char* spec) {
  Faults f;
  std::string s = spec ? spec : "";
  size_t pos = 0;
  while (pos <= s.size() && !s.empty()) {
    size_t comma = s.find(',', pos);
    std::string item = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    size_t colon = item.find(':');
    std::string key = item.substr(0, colon);
    std::string val = colon == std::string::npos ? "" : item.substr(colon + 1);
    if (key == "queue_error") f.queue_error_kernel = val;
    else if (key == "lost_signal") f.lost_signal_kernel = val;
    else if (key == "alloc_fail") f.alloc_fail_bytes = std::strtoull(val.c_str(), nullptr, 10);
    else if (key == "init_fail") f.init_fail = true;
    else if (key == "no_gpu") f.no_gpu = true;
    else if (!key.empty()) std::fprintf(stderr, "hsa stand-in: unknown fault '%s'\n", key.c_str());
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  std::lock_guard l(state().mutex);
  state().faults = f;
}
Faults faults() {
  std::lock_guard l(state().mutex);
  return state().faults;
}

// ------------------------------------------------------------ signals
struct SSignal {
  std::atomic<int64_t> value;
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
  void store(int64_t v) {
    value.store(v, std::memory_order_seq_cst);
    notify();
  }
  void sub(int64_t v) {
    value.fetch_sub(v, std::memory_order_seq_cst);
    notify();
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
  int64_t wait(hsa_signal_condition_t c, int64_t cmp, uint64_t timeout_ns) {
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
};
SSignal* sig(hsa_signal_t s) { return reinterpret_cast<SSignal*>(s.handle); }

// ------------------------------------------------------------ host kernels
struct HostLib {
  void* handle;
  const lrrt_host_library_t* lib;
};
std::vector<HostLib>& host_libs() {
  static std::vector<HostLib> libs;
  return libs;
}
// One folder, or several separated by ':' (the conformance suite adds its
// test-only kernels' folder to the build's kernel folder).
std::vector<std::string> kernel_dirs() {
  std::string dirs = LRRT_STANDIN_DEFAULT_KERNEL_DIR;
  for (const char* env : {"LRRT_HSA_STANDIN_KERNEL_DIR", "LRRT_KERNEL_DIR"})
    if (const char* d = std::getenv(env); d && *d) {
      dirs = d;
      break;
    }
  std::vector<std::string> out;
  for (size_t begin = 0; begin <= dirs.size();) {
    size_t end = dirs.find(':', begin);
    if (end == std::string::npos) end = dirs.size();
    if (end > begin) out.push_back(dirs.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}
// Scans each kernel folder once: the folders named when a kernel is looked
// up, so a folder a later test adds to $LRRT_HSA_STANDIN_KERNEL_DIR is
// scanned at the first kernel not found in the folders scanned before.
std::mutex& host_libs_mutex() {
  static std::mutex m;
  return m;
}
void load_host_libs() {
  static std::vector<std::string> scanned;
  for (const std::string& dir : kernel_dirs()) {
    if (std::find(scanned.begin(), scanned.end(), dir) != scanned.end()) continue;
    scanned.push_back(dir);
    DIR* d = opendir(dir.c_str());
    if (!d) {
      std::fprintf(stderr, "hsa stand-in: cannot open kernel dir '%s'\n", dir.c_str());
      continue;
    }
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() < 8 || n.compare(n.size() - 8, 8, ".host.so") != 0) continue;
      std::string path = dir + "/" + n;
      void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!h) continue;
      auto q = reinterpret_cast<lrrt_host_library_query_fn_t>(dlsym(h, LRRT_HOST_LIBRARY_QUERY_SYMBOL));
      const lrrt_host_library_t* lib = q ? q(LRRT_HOST_ABI_VERSION) : nullptr;
      if (lib) host_libs().push_back({h, lib});
    }
    closedir(d);
  }
}
const lrrt_host_kernel_t* find_loaded(const std::string& name) {
  for (auto& l : host_libs())
    for (uint32_t i = 0; i < l.lib->kernel_count; ++i)
      if (name == l.lib->kernels[i].name) return &l.lib->kernels[i];
  return nullptr;
}
const lrrt_host_kernel_t* find_host_kernel(const std::string& name) {
  std::lock_guard lock(host_libs_mutex());
  if (const auto* k = find_loaded(name)) return k;
  load_host_libs();
  return find_loaded(name);
}

// ------------------------------------------------------------ executables
struct SKernel {
  lrrt::formats::KernelInfo info;
  const lrrt_host_kernel_t* host = nullptr;
};
struct SReader {
  std::vector<std::byte> bytes;
};
struct SExecutable {
  std::vector<std::unique_ptr<SKernel>> kernels;
  bool frozen = false;
};

// ------------------------------------------------------------ queues
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
SQueue* squeue(hsa_queue_t* q) { return reinterpret_cast<SQueue*>(q); }

void queue_fail(SQueue* q, hsa_status_t status) {
  q->dead.store(true);
  count("queue_errors");
  if (q->callback) q->callback(status, &q->q, q->data);
}

// Runs a dispatch on the processor thread. Returns false when the queue
// failed.
bool run_dispatch(SQueue* q, const hsa_kernel_dispatch_packet_t& p, uint16_t header) {
  auto* k = reinterpret_cast<SKernel*>(p.kernel_object);
  lrrt_hsa_standin_dispatch_t rec{};
  std::snprintf(rec.kernel, sizeof rec.kernel, "%s", k ? k->info.name.c_str() : "?");
  rec.header = header;
  rec.setup = p.setup;
  rec.workgroup_size[0] = p.workgroup_size_x;
  rec.workgroup_size[1] = p.workgroup_size_y;
  rec.workgroup_size[2] = p.workgroup_size_z;
  rec.grid_size[0] = p.grid_size_x;
  rec.grid_size[1] = p.grid_size_y;
  rec.grid_size[2] = p.grid_size_z;
  rec.group_segment_size = p.group_segment_size;
  rec.private_segment_size = p.private_segment_size;
  if (!k) {
    queue_fail(q, HSA_STATUS_ERROR_INVALID_PACKET_FORMAT);
    return false;
  }
  uint32_t ksize = std::min<uint32_t>(k->info.kernarg_size, LRRT_STANDIN_MAX_KERNARG);
  rec.kernarg_size = ksize;
  if (p.kernarg_address) std::memcpy(rec.kernarg, p.kernarg_address, ksize);
  rec.explicit_size = k->info.explicit_kernarg_size();

  // Geometry: from the hidden arguments when the code object has them (a
  // v5 kernel reads its workgroup size there), else from the packet.
  uint32_t wg[3] = {p.workgroup_size_x, p.workgroup_size_y, p.workgroup_size_z};
  uint32_t count_[3];
  const uint32_t grid[3] = {p.grid_size_x, p.grid_size_y, p.grid_size_z};
  for (int d = 0; d < 3; ++d) count_[d] = wg[d] ? (grid[d] + wg[d] - 1) / wg[d] : 0;
  std::span<const std::byte> ka(static_cast<const std::byte*>(p.kernarg_address), ksize);
  static const char* kCount[] = {"hidden_block_count_x", "hidden_block_count_y", "hidden_block_count_z"};
  static const char* kSize[] = {"hidden_group_size_x", "hidden_group_size_y", "hidden_group_size_z"};
  for (int d = 0; d < 3; ++d) {
    uint64_t v;
    if (lrrt::formats::amdgpu::read_hidden_arg(k->info, ka, kSize[d], &v)) {
      rec.used_hidden_args = 1;
      if (v != wg[d]) rec.hidden_mismatch = 1;
      wg[d] = uint32_t(v);
    }
    if (lrrt::formats::amdgpu::read_hidden_arg(k->info, ka, kCount[d], &v)) {
      rec.used_hidden_args = 1;
      if (v != count_[d]) rec.hidden_mismatch = 1;
      count_[d] = uint32_t(v);
    }
  }

  Faults f = faults();
  {
    std::lock_guard l(state().mutex);
    state().dispatches.push_back(rec);
  }
  if (!f.queue_error_kernel.empty() && f.queue_error_kernel == k->info.name) {
    queue_fail(q, hsa_status_t(HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION));
    return false;
  }
  if (!k->host) k->host = find_host_kernel(k->info.name);
  if (!k->host) {
    std::string dirs;
    for (const auto& d : kernel_dirs()) dirs += (dirs.empty() ? "" : ", ") + d;
    std::fprintf(stderr, "hsa stand-in: no host build of kernel '%s' in %s\n", k->info.name.c_str(),
                 dirs.c_str());
    queue_fail(q, HSA_STATUS_ERROR_EXCEPTION);
    return false;
  }
  uint32_t dynamic = p.group_segment_size > k->info.group_segment_size
                         ? p.group_segment_size - k->info.group_segment_size
                         : 0;
  lrrt_host_dispatch_state_t ds{};
  for (int d = 0; d < 3; ++d) {
    ds.workgroup_size[d] = wg[d];
    ds.workgroup_count[d] = count_[d];
  }
  ds.kernargs = p.kernarg_address;
  ds.kernarg_size = rec.explicit_size;
  ds.dynamic_shared_bytes = dynamic;
  void* shared = dynamic ? std::aligned_alloc(64, (dynamic + 63) & ~63u) : nullptr;
  lrrt_host_workgroup_state_t ws{};
  ws.dynamic_shared = shared;
  int rc = 0;
  for (uint32_t z = 0; z < count_[2] && rc == 0; ++z)
    for (uint32_t y = 0; y < count_[1] && rc == 0; ++y)
      for (uint32_t x = 0; x < count_[0] && rc == 0; ++x) {
        ws.workgroup_id[0] = x;
        ws.workgroup_id[1] = y;
        ws.workgroup_id[2] = z;
        rc = k->host->entry(&ds, &ws);
      }
  std::free(shared);
  count("dispatches");
  if (rc != 0) {
    queue_fail(q, HSA_STATUS_ERROR_EXCEPTION);
    return false;
  }
  return true;
}

void complete(hsa_signal_t s, uint64_t start, const std::string& kernel = {}) {
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

// Worst-order mode (LRRT_TEST_WORST_ORDER=1 at hsa_init, or
// lrrt_hsa_standin_set_worst_order): see the top of the file.
std::atomic<bool> worst_order{false};
bool copy_engine_quiet();

struct Deferred {
  hsa_kernel_dispatch_packet_t packet;
  uint16_t header;
};

// Runs a dispatch and completes its signal; false when the queue failed.
bool execute(SQueue* q, const hsa_kernel_dispatch_packet_t& p, uint16_t header) {
  uint64_t start = now_ns();
  if (!run_dispatch(q, p, header)) return false;
  auto* k = reinterpret_cast<SKernel*>(p.kernel_object);
  complete(p.completion_signal, start, k->info.name);
  return true;
}

void processor(SQueue* q) {
  auto* doorbell = sig(q->q.doorbell_signal);
  const uint64_t size = q->q.size;
  // Packets [read, next) were taken from the ring; in worst-order mode the
  // dispatches among them that have not run yet are `deferred` (started,
  // from AQL's point of view, but not finished). Their slots are released
  // once they ran.
  uint64_t next = q->read.load(std::memory_order_relaxed);
  std::vector<Deferred> deferred;
  auto release = [&] {
    for (uint64_t r = q->read.load(std::memory_order_relaxed); r < next; ++r) {
      auto* word = reinterpret_cast<uint32_t*>(static_cast<std::byte*>(q->ring) + (r & (size - 1)) * 64);
      std::atomic_ref<uint32_t>(*word).store(HSA_PACKET_TYPE_INVALID << HSA_PACKET_HEADER_TYPE,
                                             std::memory_order_release);
    }
    q->read.store(next, std::memory_order_release);
  };
  // Runs the deferred dispatches, the latest first; false when one failed.
  auto finish_deferred = [&] {
    if (deferred.size() > 1) count("dispatches_reordered", deferred.size() - 1);
    for (size_t i = deferred.size(); i-- > 0;) {
      // Copy-engine work that may run now runs first: as early as legal.
      while (!copy_engine_quiet()) std::this_thread::yield();
      if (!execute(q, deferred[i].packet, deferred[i].header)) {
        deferred.clear();
        return false;
      }
    }
    deferred.clear();
    return true;
  };
  while (!q->stop.load()) {
    if (q->dead.load()) {  // a failed queue consumes nothing more
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      continue;
    }
    // Doorbell holds the last index written; wait until it reaches next.
    // With dispatches deferred, nothing more to start now ends their run.
    int64_t db = deferred.empty() ? doorbell->wait(HSA_SIGNAL_CONDITION_GTE, int64_t(next), 20'000'000)
                                  : doorbell->value.load();
    if (db < int64_t(next)) {
      if (!deferred.empty()) {
        if (finish_deferred()) release();
      }
      continue;
    }
    auto* slot = static_cast<std::byte*>(q->ring) + (next & (size - 1)) * 64;
    auto* word = reinterpret_cast<uint32_t*>(slot);
    uint32_t hw = std::atomic_ref<uint32_t>(*word).load(std::memory_order_acquire);
    uint16_t header = uint16_t(hw & 0xffff);
    uint16_t type = (header >> HSA_PACKET_HEADER_TYPE) & 0xff;
    if (type == HSA_PACKET_TYPE_INVALID) {
      std::this_thread::yield();  // doorbell rung before the header landed: a producer bug, or a race
      continue;
    }
    const bool barrier = (header >> HSA_PACKET_HEADER_BARRIER) & 1;
    if (barrier) count("packets_barrier_bit");
    if (type == HSA_PACKET_TYPE_KERNEL_DISPATCH) {
      hsa_kernel_dispatch_packet_t p;
      std::memcpy(&p, slot, sizeof p);
      count("packets_dispatch");
      // The barrier bit: every earlier packet of the queue finished first.
      if (barrier && !finish_deferred()) continue;  // dead: stop consuming
      if (worst_order.load(std::memory_order_relaxed)) {
        deferred.push_back({p, header});
        ++next;
        continue;
      }
      if (!execute(q, p, header)) continue;
    } else if (type == HSA_PACKET_TYPE_BARRIER_AND) {
      hsa_barrier_and_packet_t p;
      std::memcpy(&p, slot, sizeof p);
      count("packets_barrier_and");
      // With the barrier bit, earlier packets finish first. Without it, held
      // back dispatches stay held back if the signals are already complete
      // (every copy that can run has run); else they run before it waits
      // (one of them may be what it waits for).
      if (barrier && !finish_deferred()) continue;
      if (!deferred.empty()) {
        while (!copy_engine_quiet()) std::this_thread::yield();
        bool ready = true;
        for (auto d : p.dep_signal) ready &= !d.handle || sig(d)->value.load() == 0;
        if (!ready && !finish_deferred()) continue;
      }
      uint64_t start = now_ns();
      for (auto d : p.dep_signal)
        while (d.handle && !q->stop.load() &&
               sig(d)->wait(HSA_SIGNAL_CONDITION_EQ, 0, 20'000'000) != 0) {
        }
      if (q->stop.load()) break;
      complete(p.completion_signal, start);
    } else {
      count("packets_other");
      queue_fail(q, HSA_STATUS_ERROR_INVALID_PACKET_FORMAT);
      continue;
    }
    // Release the slot(s): header back to INVALID, then advance the read index.
    ++next;
    release();
  }
}

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
      if (t.size) std::memmove(t.dst, t.src, t.size);  // a zero-byte copy may have null pointers
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

bool known_range(const void* p, size_t size) {
  auto a = reinterpret_cast<uintptr_t>(p);
  std::lock_guard l(state().mutex);
  auto it = state().allocations.upper_bound(a);
  if (it == state().allocations.begin()) return false;
  --it;
  return a >= it->first && a + size <= it->first + it->second;
}

template <typename T>
void put(void* out, T v) {
  std::memcpy(out, &v, sizeof v);
}
void put_str(void* out, const std::string& s, size_t cap = 64) {
  std::memset(out, 0, cap);
  std::memcpy(out, s.data(), std::min(s.size(), cap - 1));
}

std::string isa_processor() {
  std::string isa = state().isa;
  return isa.substr(0, isa.find(':'));
}

}  // namespace

// ================================================================ HSA API
EXPORT hsa_status_t hsa_init() {
  if (const char* f = std::getenv("LRRT_HSA_STANDIN_FAULT")) set_faults(f);
  if (const char* i = std::getenv("LRRT_HSA_STANDIN_ISA"); i && *i) state().isa = i;
  if (const char* w = std::getenv("LRRT_TEST_WORST_ORDER"); w && *w) worst_order.store(std::strcmp(w, "0") != 0);
  if (faults().init_fail) return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  std::lock_guard l(state().mutex);
  if (state().init_count++ == 0) {
    auto* ce = new CopyEngine;
    ce->thread = std::thread([ce] { ce->run(); });
    copy_engine = ce;
  }
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_shut_down() {
  CopyEngine* ce = nullptr;
  {
    std::lock_guard l(state().mutex);
    if (state().init_count == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
    if (--state().init_count == 0) std::swap(ce, copy_engine);
  }
  if (ce) {
    {
      std::lock_guard l(ce->m);
      ce->stop = true;
    }
    ce->cv.notify_all();
    ce->thread.join();
    delete ce;
  }
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_status_string(hsa_status_t status, const char** s) {
  switch (int(status)) {
    case HSA_STATUS_SUCCESS: *s = "HSA_STATUS_SUCCESS"; break;
    case HSA_STATUS_ERROR_OUT_OF_RESOURCES: *s = "HSA_STATUS_ERROR_OUT_OF_RESOURCES: the runtime failed to allocate the necessary resources"; break;
    case HSA_STATUS_ERROR_INVALID_ARGUMENT: *s = "HSA_STATUS_ERROR_INVALID_ARGUMENT"; break;
    case HSA_STATUS_ERROR_INVALID_CODE_OBJECT: *s = "HSA_STATUS_ERROR_INVALID_CODE_OBJECT"; break;
    case HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS: *s = "HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS"; break;
    case HSA_STATUS_ERROR_INVALID_SYMBOL_NAME: *s = "HSA_STATUS_ERROR_INVALID_SYMBOL_NAME"; break;
    case HSA_STATUS_ERROR_EXCEPTION: *s = "HSA_STATUS_ERROR_EXCEPTION: an HSAIL operation resulted in a hardware exception"; break;
    case HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: *s = "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: the agent attempted to access memory beyond the largest legal address"; break;
    case HSA_STATUS_ERROR_INVALID_PACKET_FORMAT: *s = "HSA_STATUS_ERROR_INVALID_PACKET_FORMAT"; break;
    default: *s = "HSA_STATUS_ERROR (stand-in: unnamed status)"; break;
  }
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_system_get_info(hsa_system_info_t attr, void* value) {
  switch (attr) {
    case HSA_SYSTEM_INFO_VERSION_MAJOR: put<uint16_t>(value, 1); break;
    case HSA_SYSTEM_INFO_VERSION_MINOR: put<uint16_t>(value, 1); break;
    case HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY: put<uint64_t>(value, 1'000'000'000); break;
    case HSA_SYSTEM_INFO_TIMESTAMP: put<uint64_t>(value, now_ns()); break;
    default: return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_iterate_agents(hsa_status_t (*cb)(hsa_agent_t, void*), void* data) {
  hsa_status_t st = cb(hsa_agent_t{kCpuAgent}, data);
  if (st != HSA_STATUS_SUCCESS) return st == HSA_STATUS_INFO_BREAK ? HSA_STATUS_SUCCESS : st;
  if (faults().no_gpu) return HSA_STATUS_SUCCESS;
  st = cb(hsa_agent_t{kGpuAgent}, data);
  return st == HSA_STATUS_INFO_BREAK ? HSA_STATUS_SUCCESS : st;
}

EXPORT hsa_status_t hsa_agent_get_info(hsa_agent_t agent, hsa_agent_info_t attr, void* value) {
  bool gpu = agent.handle == kGpuAgent;
  if (!gpu && agent.handle != kCpuAgent) return HSA_STATUS_ERROR_INVALID_AGENT;
  // AMD's attributes (hsa_amd_agent_info_t, 0xA000 and up) arrive through
  // this enum, whose values end at 31: read the integer the C ABI passed, not
  // the enum (loading it as hsa_agent_info_t is undefined behaviour).
  std::underlying_type_t<hsa_agent_info_t> raw;
  std::memcpy(&raw, &attr, sizeof raw);
  switch (raw) {
    case HSA_AGENT_INFO_NAME: put_str(value, gpu ? isa_processor() : "stand-in-cpu"); break;
    case HSA_AGENT_INFO_DEVICE: put<hsa_device_type_t>(value, gpu ? HSA_DEVICE_TYPE_GPU : HSA_DEVICE_TYPE_CPU); break;
    case HSA_AGENT_INFO_WAVEFRONT_SIZE: put<uint32_t>(value, gpu ? 32 : 0); break;
    case HSA_AGENT_INFO_WORKGROUP_MAX_SIZE: put<uint32_t>(value, gpu ? 1024 : 0); break;
    case HSA_AGENT_INFO_WORKGROUP_MAX_DIM: {
      uint16_t d[3] = {1024, 1024, 1024};
      std::memcpy(value, d, sizeof d);
      break;
    }
    case HSA_AGENT_INFO_QUEUE_MAX_SIZE: put<uint32_t>(value, gpu ? 4096 : 0); break;
    case HSA_AMD_AGENT_INFO_PRODUCT_NAME: put_str(value, gpu ? "lrrt HSA stand-in (" + state().isa + ")" : "stand-in CPU"); break;
    case HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT: put<uint32_t>(value, gpu ? 4 : 1); break;
    case HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY: put<uint32_t>(value, 1000); break;
    case HSA_AMD_AGENT_INFO_CHIP_ID: put<uint32_t>(value, gpu ? 0x744c : 0); break;
    default: return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_agent_iterate_isas(hsa_agent_t agent, hsa_status_t (*cb)(hsa_isa_t, void*),
                                          void* data) {
  if (agent.handle != kGpuAgent) return HSA_STATUS_SUCCESS;
  hsa_status_t st = cb(hsa_isa_t{kIsa}, data);
  return st == HSA_STATUS_INFO_BREAK ? HSA_STATUS_SUCCESS : st;
}

EXPORT hsa_status_t hsa_isa_get_info_alt(hsa_isa_t isa, hsa_isa_info_t attr, void* value) {
  if (isa.handle != kIsa) return HSA_STATUS_ERROR_INVALID_ISA;
  std::string name = "amdgcn-amd-amdhsa--" + state().isa;
  if (attr == HSA_ISA_INFO_NAME_LENGTH) put<uint32_t>(value, uint32_t(name.size() + 1));
  else if (attr == HSA_ISA_INFO_NAME) std::memcpy(value, name.c_str(), name.size() + 1);
  else return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_amd_agent_iterate_memory_pools(
    hsa_agent_t agent, hsa_status_t (*cb)(hsa_amd_memory_pool_t, void*), void* data) {
  std::vector<uint64_t> pools;
  if (agent.handle == kGpuAgent) pools = {kGpuPool, kGroupPool};
  else if (agent.handle == kCpuAgent) pools = {kFinePool, kKernargPool};
  else return HSA_STATUS_ERROR_INVALID_AGENT;
  for (auto p : pools) {
    hsa_status_t st = cb(hsa_amd_memory_pool_t{p}, data);
    if (st == HSA_STATUS_INFO_BREAK) break;
    if (st != HSA_STATUS_SUCCESS) return st;
  }
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_amd_memory_pool_get_info(hsa_amd_memory_pool_t pool,
                                                hsa_amd_memory_pool_info_t attr, void* value) {
  uint64_t h = pool.handle;
  switch (attr) {
    case HSA_AMD_MEMORY_POOL_INFO_SEGMENT:
      put<hsa_amd_segment_t>(value, h == kGroupPool ? HSA_AMD_SEGMENT_GROUP : HSA_AMD_SEGMENT_GLOBAL);
      break;
    case HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS: {
      uint32_t f = 0;
      if (h == kGpuPool) f = HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED;
      if (h == kFinePool) f = HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED;
      if (h == kKernargPool)
        f = HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED | HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT;
      put<uint32_t>(value, f);
      break;
    }
    case HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED: put<bool>(value, h != kGroupPool); break;
    case HSA_AMD_MEMORY_POOL_INFO_SIZE:
      put<size_t>(value, h == kGroupPool ? 65536 : h == kGpuPool ? (size_t(16) << 30) : (size_t(64) << 30));
      break;
    default: return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_amd_memory_pool_allocate(hsa_amd_memory_pool_t pool, size_t size,
                                                uint32_t, void** ptr) {
  if (pool.handle != kGpuPool && pool.handle != kFinePool && pool.handle != kKernargPool)
    return hsa_status_t(HSA_STATUS_ERROR_INVALID_MEMORY_POOL);
  Faults f = faults();
  if (pool.handle == kGpuPool && f.alloc_fail_bytes && size >= f.alloc_fail_bytes)
    return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  void* p = std::aligned_alloc(4096, (size + 4095) & ~size_t(4095));
  if (!p) return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  std::lock_guard l(state().mutex);
  state().allocations[reinterpret_cast<uintptr_t>(p)] = size;
  state().counters["live_allocations"]++;
  *ptr = p;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_amd_memory_pool_free(void* ptr) {
  {
    std::lock_guard l(state().mutex);
    if (!state().allocations.erase(reinterpret_cast<uintptr_t>(ptr)))
      return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    state().counters["live_allocations"]--;
  }
  std::free(ptr);
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_amd_agents_allow_access(uint32_t n, const hsa_agent_t* agents,
                                               const uint32_t*, const void* ptr) {
  if (!n || !agents || !known_range(ptr, 1)) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_amd_memory_async_copy(void* dst, hsa_agent_t, const void* src, hsa_agent_t,
                                             size_t size, uint32_t num_deps,
                                             const hsa_signal_t* deps, hsa_signal_t completion) {
  // As in ROCr: both sides must be memory the agents can reach (pool
  // allocations), not pageable host memory.
  if (size && (!known_range(dst, size) || !known_range(src, size)))
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  if (!copy_engine || !completion.handle) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  CopyTask t{dst, src, size, std::vector<hsa_signal_t>(deps, deps + num_deps), completion};
  {
    std::lock_guard l(copy_engine->m);
    copy_engine->tasks.push_back(std::move(t));
  }
  copy_engine->cv.notify_one();
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_signal_create(hsa_signal_value_t v, uint32_t, const hsa_agent_t*,
                                     hsa_signal_t* s) {
  s->handle = reinterpret_cast<uint64_t>(new SSignal(v));
  count("signals_created");
  return HSA_STATUS_SUCCESS;
}
EXPORT hsa_status_t hsa_signal_destroy(hsa_signal_t s) {
  if (!s.handle) return HSA_STATUS_ERROR_INVALID_SIGNAL;
  delete sig(s);
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

EXPORT hsa_status_t hsa_queue_create(hsa_agent_t agent, uint32_t size, hsa_queue_type32_t type,
                                    void (*cb)(hsa_status_t, hsa_queue_t*, void*), void* data,
                                    uint32_t, uint32_t, hsa_queue_t** out) {
  if (agent.handle != kGpuAgent) return HSA_STATUS_ERROR_INVALID_AGENT;
  if (size == 0 || (size & (size - 1)) || size > 4096) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  auto* q = new SQueue;
  q->ring = std::aligned_alloc(64, size_t(size) * 64);
  for (uint32_t i = 0; i < size; ++i) {
    auto* p = static_cast<std::byte*>(q->ring) + size_t(i) * 64;
    std::memset(p, 0, 64);
    put<uint16_t>(p, uint16_t(HSA_PACKET_TYPE_INVALID << HSA_PACKET_HEADER_TYPE));
  }
  static std::atomic<uint64_t> next_id{1};
  q->q.type = type;
  q->q.features = HSA_QUEUE_FEATURE_KERNEL_DISPATCH;
  q->q.base_address = q->ring;
  hsa_signal_create(-1, 0, nullptr, &q->q.doorbell_signal);
  sig(q->q.doorbell_signal)->doorbell = true;
  q->q.size = size;
  q->q.id = next_id++;
  q->callback = cb;
  q->data = data;
  q->thread = std::thread(processor, q);
  count("queues_created");
  *out = &q->q;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_queue_destroy(hsa_queue_t* queue) {
  SQueue* q = squeue(queue);
  q->stop.store(true);
  sig(q->q.doorbell_signal)->store(INT64_MAX);
  q->thread.join();
  hsa_signal_destroy(q->q.doorbell_signal);
  std::free(q->ring);
  delete q;
  return HSA_STATUS_SUCCESS;
}

EXPORT uint64_t hsa_queue_load_read_index_scacquire(const hsa_queue_t* q) {
  return squeue(const_cast<hsa_queue_t*>(q))->read.load(std::memory_order_acquire);
}
EXPORT uint64_t hsa_queue_load_write_index_relaxed(const hsa_queue_t* q) {
  return squeue(const_cast<hsa_queue_t*>(q))->write.load(std::memory_order_relaxed);
}
EXPORT uint64_t hsa_queue_add_write_index_relaxed(const hsa_queue_t* q, uint64_t v) {
  write_index_adds.fetch_add(1, std::memory_order_relaxed);
  return squeue(const_cast<hsa_queue_t*>(q))->write.fetch_add(v, std::memory_order_relaxed);
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

EXPORT hsa_status_t hsa_code_object_reader_create_from_memory(const void* co, size_t size,
                                                             hsa_code_object_reader_t* r) {
  if (!co || !size) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  auto* reader = new SReader;
  auto* b = static_cast<const std::byte*>(co);
  reader->bytes.assign(b, b + size);
  r->handle = reinterpret_cast<uint64_t>(reader);
  return HSA_STATUS_SUCCESS;
}
EXPORT hsa_status_t hsa_code_object_reader_destroy(hsa_code_object_reader_t r) {
  delete reinterpret_cast<SReader*>(r.handle);
  return HSA_STATUS_SUCCESS;
}
EXPORT hsa_status_t hsa_executable_create_alt(hsa_profile_t, hsa_default_float_rounding_mode_t,
                                             const char*, hsa_executable_t* e) {
  e->handle = reinterpret_cast<uint64_t>(new SExecutable);
  return HSA_STATUS_SUCCESS;
}
EXPORT hsa_status_t hsa_executable_load_agent_code_object(hsa_executable_t e, hsa_agent_t agent,
                                                         hsa_code_object_reader_t r, const char*,
                                                         hsa_loaded_code_object_t*) {
  auto* exe = reinterpret_cast<SExecutable*>(e.handle);
  auto* reader = reinterpret_cast<SReader*>(r.handle);
  if (!exe || !reader || agent.handle != kGpuAgent) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  if (exe->frozen) return HSA_STATUS_ERROR_FROZEN_EXECUTABLE;
  try {
    auto co = lrrt::formats::amdgpu::parse_code_object(reader->bytes);
    auto agent_id = lrrt::formats::amdgpu::parse_target_id(state().isa);
    if (!lrrt::formats::amdgpu::target_compatible(co.target_id, agent_id))
      return HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS;
    for (auto& k : co.kernels) {
      auto sk = std::make_unique<SKernel>();
      sk->info = std::move(k);
      exe->kernels.push_back(std::move(sk));
    }
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "hsa stand-in: %s\n", ex.what());
    return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
  }
  return HSA_STATUS_SUCCESS;
}
EXPORT hsa_status_t hsa_executable_freeze(hsa_executable_t e, const char*) {
  reinterpret_cast<SExecutable*>(e.handle)->frozen = true;
  return HSA_STATUS_SUCCESS;
}
EXPORT hsa_status_t hsa_executable_destroy(hsa_executable_t e) {
  delete reinterpret_cast<SExecutable*>(e.handle);
  return HSA_STATUS_SUCCESS;
}
EXPORT hsa_status_t hsa_executable_get_symbol_by_name(hsa_executable_t e, const char* name,
                                                     const hsa_agent_t*, hsa_executable_symbol_t* s) {
  auto* exe = reinterpret_cast<SExecutable*>(e.handle);
  for (auto& k : exe->kernels)
    if (k->info.symbol == name) {
      s->handle = reinterpret_cast<uint64_t>(k.get());
      return HSA_STATUS_SUCCESS;
    }
  return HSA_STATUS_ERROR_INVALID_SYMBOL_NAME;
}
EXPORT hsa_status_t hsa_executable_symbol_get_info(hsa_executable_symbol_t s,
                                                  hsa_executable_symbol_info_t attr, void* value) {
  auto* k = reinterpret_cast<SKernel*>(s.handle);
  switch (attr) {
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT: put<uint64_t>(value, s.handle); break;
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE: put<uint32_t>(value, k->info.kernarg_size); break;
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT: put<uint32_t>(value, k->info.kernarg_align); break;
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE: put<uint32_t>(value, k->info.group_segment_size); break;
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE: put<uint32_t>(value, k->info.private_segment_size); break;
    default: return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
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
EXPORT void lrrt_hsa_standin_set_fault(const char* spec) { set_faults(spec); }
EXPORT size_t lrrt_hsa_standin_dispatch_count() {
  std::lock_guard l(state().mutex);
  return state().dispatches.size();
}
EXPORT int lrrt_hsa_standin_get_dispatch(size_t i, lrrt_hsa_standin_dispatch_t* out) {
  std::lock_guard l(state().mutex);
  if (i >= state().dispatches.size()) return -1;
  *out = state().dispatches[i];
  return 0;
}
EXPORT void lrrt_hsa_standin_reset() {
  std::lock_guard l(state().mutex);
  state().dispatches.clear();
  uint64_t live = state().counters["live_allocations"];
  state().counters.clear();
  state().counters["live_allocations"] = live;
  doorbell_rings.store(0);
  write_index_adds.store(0);
}
EXPORT void lrrt_hsa_standin_set_worst_order(int on) { worst_order.store(on != 0); }
EXPORT uint64_t lrrt_hsa_standin_counter(const char* name) {
  if (std::strcmp(name, "doorbell_rings") == 0) return doorbell_rings.load();
  if (std::strcmp(name, "write_index_adds") == 0) return write_index_adds.load();
  std::lock_guard l(state().mutex);
  auto it = state().counters.find(name);
  return it == state().counters.end() ? 0 : it->second;
}

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
#include "lrrt/formats/elf.hpp"
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
// Never destroyed: the threads of a hung device (its queue threads, the
// copy engine) may still use it while the process exits.
State& state() {
  static State* s = new State;
  return *s;
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
    else if (key == "vm_fault") f.vm_fault_kernel = val;
    else if (key == "hw_exception") f.hw_exception_kernel = val;
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
  // Holds a reference while it waits: the thread that satisfied the wait may
  // let the client destroy the signal before this one leaves the lock.
  int64_t wait(hsa_signal_condition_t c, int64_t cmp, uint64_t timeout_ns) {
    retain();
    struct Released {
      SSignal* s;
      ~Released() { s->release(); }
    } released{this};
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
  // The folders named first, then the build's own kernels (lrrt itself
  // loads kernels of its own from there: `lrrt run`'s queue hold).
  std::string dirs = LRRT_STANDIN_DEFAULT_KERNEL_DIR;
  for (const char* env : {"LRRT_HSA_STANDIN_KERNEL_DIR", "LRRT_KERNEL_DIR"})
    if (const char* d = std::getenv(env); d && *d) {
      dirs = std::string(d) + ":" + dirs;
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
  std::vector<std::string> symbols;  // non-local definitions of the code objects loaded
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

// A GPU memory fault, as ROCr's Runtime::VMFaultHandler reports it: the
// queue stops (no queue error callback: lrrt must not count on one), and
// the system event handlers get HSA_AMD_GPU_MEMORY_FAULT_EVENT; unless one
// of them returns HSA_STATUS_SUCCESS the process aborts. The handler is not
// re-armed: a later fault in the same runtime is not reported at all.
void vm_fault(SQueue* q, uint64_t address, uint32_t reason, const char* why) {
  if (q) q->dead.store(true);
  count("vm_faults");
  std::vector<std::pair<hsa_amd_system_event_callback_t, void*>> handlers;
  {
    std::lock_guard l(state().mutex);
    if (state().vm_fault_delivered) return;
    state().vm_fault_delivered = true;
    handlers = state().event_handlers;
  }
  hsa_amd_event_t event{};
  event.event_type = HSA_AMD_GPU_MEMORY_FAULT_EVENT;
  event.memory_fault.agent = hsa_agent_t{kGpuAgent};
  event.memory_fault.virtual_address = address;
  event.memory_fault.fault_reason_mask = reason;
  bool handled = false;
  for (auto& [callback, data] : handlers) handled |= callback(&event, data) == HSA_STATUS_SUCCESS;
  if (handled) return;
  std::fprintf(stderr,
               "Memory access fault by GPU node-1 (Agent handle: %p) on address %p. Reason: Page not present or "
               "supervisor privilege. (hsa stand-in: %s)\n",
               reinterpret_cast<void*>(kGpuAgent), reinterpret_cast<void*>(address), why);
  std::abort();
}

// HSA_AMD_GPU_HW_EXCEPTION_EVENT and its data as ROCr's hsa_ext_amd.h
// defines them; Debian's older header (which this builds against) has
// neither.
constexpr int kHwExceptionEvent = 1;
struct HwExceptionInfo {
  hsa_agent_t agent;
  uint32_t reset_type;   // HSA_AMD_HW_EXCEPTION_RESET_TYPE_OTHER = 1: ROCr sets no other
  uint32_t reset_cause;  // HSA_AMD_HW_EXCEPTION_CAUSE_GPU_HANG = 1, _ECC = 2
};
static_assert(sizeof(HwExceptionInfo) <= sizeof(hsa_amd_gpu_memory_fault_info_t));

// A hardware exception (a GPU reset after a hang, an SRAM ECC error), as
// ROCr's Runtime::HwExceptionHandler reports it: the system event handlers
// get HSA_AMD_GPU_HW_EXCEPTION_EVENT; unless one of them returns
// HSA_STATUS_SUCCESS the process aborts. The handler is not re-armed (it
// returns false to the async signal handler): a later exception is not
// reported. The reset stops every queue of the agent with no queue error
// callback: their packets never complete. Not modelled: the copy engine
// (SDMA is reset too on hardware; here queued copies still run).
void hw_exception(uint32_t cause, const char* why) {
  count("hw_exceptions");
  std::vector<std::pair<hsa_amd_system_event_callback_t, void*>> handlers;
  {
    std::lock_guard l(state().mutex);
    for (SQueue* q : state().queues) q->dead.store(true);
    if (state().hw_exception_delivered) return;
    state().hw_exception_delivered = true;
    handlers = state().event_handlers;
  }
  hsa_amd_event_t event{};
  event.event_type = hsa_amd_event_type_t(kHwExceptionEvent);
  const HwExceptionInfo info{hsa_agent_t{kGpuAgent}, 1, cause};
  std::memcpy(&event.memory_fault, &info, sizeof info);  // the union's members share its start
  bool handled = false;
  for (auto& [callback, data] : handlers) handled |= callback(&event, data) == HSA_STATUS_SUCCESS;
  if (handled) return;
  std::fprintf(stderr, "HW Exception by GPU node-1 (Agent handle: %p) reason :%s (hsa stand-in: %s)\n",
               reinterpret_cast<void*>(kGpuAgent), cause == 2 ? "ECC" : "GPU Hang", why);
  std::abort();
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
  if (!f.hw_exception_kernel.empty() && f.hw_exception_kernel == k->info.name) {
    hw_exception(1, "injected hw_exception: the kernel hung and the GPU was reset");
    return false;
  }
  if (!f.vm_fault_kernel.empty() && f.vm_fault_kernel == k->info.name) {
    uint64_t address = 0;  // the first argument word: write_to_address's target
    if (p.kernarg_address) std::memcpy(&address, p.kernarg_address, 8);
    vm_fault(q, address, HSA_AMD_MEMORY_FAULT_PAGE_NOT_PRESENT, "injected vm_fault");
    return false;
  }
  // Scratch: the packet's private segment per work-item must hold the
  // kernel's fixed frames, and a kernel with a dynamic stack (recursion,
  // indirect calls) runs past them: given no more than its fixed size, its
  // stack overruns the scratch wave slot, which on the GPU is a memory
  // fault (or silent corruption of another wave's scratch).
  if (p.private_segment_size < k->info.private_segment_size ||
      (k->info.uses_dynamic_stack && p.private_segment_size <= k->info.private_segment_size)) {
    count("scratch_overruns");
    vm_fault(q, 0x7f0000000000ull + p.private_segment_size, HSA_AMD_MEMORY_FAULT_PAGE_NOT_PRESENT,
             "the kernel's stack overran its private segment");
    return false;
  }
  // Looked up once per kernel, by whichever queue runs it first.
  const lrrt_host_kernel_t* host = nullptr;
  {
    static std::mutex lookup_mutex;
    std::lock_guard l(lookup_mutex);
    if (!k->host) k->host = find_host_kernel(k->info.name);
    host = k->host;
  }
  if (!host) {
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
        rc = host->entry(&ds, &ws);
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


// ------------------------------------------------------------ memory model
// A write-back L2 per agent, as strict as the hardware about what the copy
// engine sees (docs/backends/hsa.md "Memory model"). A dispatch runs on the
// host bytes; afterwards the bytes it changed in the GPU-pool allocations
// its kernarg buffer points to are dirty in the L2 that ran it, with the
// value memory held before ("old"). Until a release of sufficient scope
// writes them back:
//  - the copy engine reads the old value (SDMA reads memory, not the L2);
//  - a copy-engine write lands in memory, and the dirty bytes are written
//    back over it later (at the next release that covers that L2, at the
//    latest the replay's terminal system release): the copy's data is lost.
// Scopes: with one L2 (every target but gfx94x/gfx95x) only a system-scope
// release writes back; agent scope keeps the lines in the L2, which every
// dispatch of the agent shares. With several L2s (gfx942: one per XCD; two
// are modelled, dispatches alternate between them) agent scope writes the
// dispatch's L2 back (buffer_wbl2), and a barrier-AND's release writes back
// every L2, the most recently written first, so that of two L2s holding the
// same byte the older write lands last. Not modelled: stale reads through
// an L2 (acquire scopes have no effect here), and memory a kernel reaches
// other than through a pointer in its kernarg buffer (it is not cached).
struct Dirty {
  std::vector<std::byte> old_bytes, new_bytes;
  std::vector<uint8_t> mask;
};
struct L2Cache {
  std::map<uintptr_t, Dirty> lines;  // by allocation base
  uint64_t last_write = 0;           // the dispatch sequence number that last dirtied it
};
struct Snapshot {
  uintptr_t base = 0;
  size_t size = 0;
  std::vector<std::byte> bytes;
};
struct MemorySystem {
  std::mutex m;
  std::vector<L2Cache> l2 = std::vector<L2Cache>(1);
  uint64_t dispatches = 0;
  std::vector<Snapshot*> open;  // snapshots of dispatches running now
};
// Never destroyed, like State: a hung device's queue threads still write
// back their L2 while the process exits (a race with the destructor under TSan).
MemorySystem& memory() {
  static MemorySystem* s = new MemorySystem;
  return *s;
}
size_t l2_count_for(const std::string& isa) {
  return isa.rfind("gfx94", 0) == 0 || isa.rfind("gfx95", 0) == 0 ? 2 : 1;
}

// Host bytes changed by the memory system itself (a copy-engine write, a
// write-back) are not a running dispatch's writes: its snapshot follows.
void update_open_snapshots(MemorySystem& ms, uintptr_t dst, const std::byte* src, size_t size) {
  for (Snapshot* sn : ms.open) {
    uintptr_t lo = std::max(dst, sn->base), hi = std::min(dst + size, sn->base + sn->size);
    if (lo < hi) std::memcpy(sn->bytes.data() + (lo - sn->base), src + (lo - dst), hi - lo);
  }
}

void write_back(MemorySystem& ms, L2Cache& c) {
  for (auto& [base, d] : c.lines) {
    auto* mem = reinterpret_cast<std::byte*>(base);
    // Only bytes memory does not hold already: with one L2 a dispatch's
    // writes are in memory at once, and rewriting the same values raced (for
    // TSan) with kernels on other lanes reading them, which hardware never does.
    for (size_t i = 0; i < d.mask.size(); ++i)
      if (d.mask[i] && mem[i] != d.new_bytes[i]) mem[i] = d.new_bytes[i];
    update_open_snapshots(ms, base, mem, d.mask.size());
  }
  if (!c.lines.empty()) count("l2_write_backs");
  c.lines.clear();
}

// A release fence of `scope` by a dispatch that ran on L2 `which`, or by a
// barrier-AND (which = SIZE_MAX: every L2).
void release_fence(uint32_t scope, size_t which) {
  MemorySystem& ms = memory();
  std::lock_guard l(ms.m);
  const bool several = ms.l2.size() > 1;
  if (scope == HSA_FENCE_SCOPE_NONE || (!several && scope != HSA_FENCE_SCOPE_SYSTEM)) return;
  if (which < ms.l2.size()) {
    write_back(ms, ms.l2[which]);
    return;
  }
  std::vector<L2Cache*> order;
  for (auto& c : ms.l2) order.push_back(&c);
  std::sort(order.begin(), order.end(), [](L2Cache* a, L2Cache* b) { return a->last_write > b->last_write; });
  for (L2Cache* c : order) write_back(ms, *c);
}

// Dirty bytes of every L2 that overlap [p, p + size).
template <typename F>
void for_each_dirty(MemorySystem& ms, uintptr_t p, size_t size, F&& f) {
  for (auto& c : ms.l2)
    for (auto& [base, d] : c.lines) {
      uintptr_t lo = std::max(p, base), hi = std::min(p + size, base + d.mask.size());
      for (uintptr_t a = lo; a < hi; ++a)
        if (d.mask[a - base]) f(d, a - base, a - p);
    }
}

// The copy engine: reads memory (the old value of bytes dirty in an L2),
// writes memory (dirty bytes stay dirty, to be written back over it).
void engine_copy(void* dst, const void* src, size_t size) {
  MemorySystem& ms = memory();
  std::lock_guard l(ms.m);
  std::vector<std::byte> data(static_cast<const std::byte*>(src), static_cast<const std::byte*>(src) + size);
  for_each_dirty(ms, reinterpret_cast<uintptr_t>(src), size,
                 [&](Dirty& d, size_t at, size_t off) { data[off] = d.old_bytes[at]; });
  std::memcpy(dst, data.data(), size);
  for_each_dirty(ms, reinterpret_cast<uintptr_t>(dst), size,
                 [&](Dirty& d, size_t at, size_t off) { d.old_bytes[at] = data[off]; });
  update_open_snapshots(ms, reinterpret_cast<uintptr_t>(dst), data.data(), size);
}

// The GPU-pool allocations a dispatch can reach: those an aligned 64-bit
// word of its kernarg buffer points into.
std::vector<std::pair<uintptr_t, size_t>> reachable(const void* kernarg, size_t size) {
  std::vector<std::pair<uintptr_t, size_t>> out;
  if (!kernarg) return out;
  std::lock_guard l(state().mutex);
  const auto& allocs = state().device_allocations;
  for (size_t off = 0; off + 8 <= size; off += 8) {
    uint64_t v;
    std::memcpy(&v, static_cast<const std::byte*>(kernarg) + off, 8);
    auto it = allocs.upper_bound(uintptr_t(v));
    if (it == allocs.begin()) continue;
    --it;
    if (v < it->first || v >= it->first + it->second) continue;
    std::pair<uintptr_t, size_t> a{it->first, it->second};
    if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
  }
  return out;
}

// Before a dispatch: snapshots of what it can reach. After it: the bytes it
// changed become dirty in L2 `which`.
struct DispatchWindow {
  size_t which = 0;
  std::vector<std::unique_ptr<Snapshot>> snaps;
  DispatchWindow(const void* kernarg, size_t kernarg_size) {
    MemorySystem& ms = memory();
    auto reach = reachable(kernarg, kernarg_size);
    std::lock_guard l(ms.m);
    which = ms.dispatches++ % ms.l2.size();
    for (auto [base, size] : reach) {
      auto sn = std::make_unique<Snapshot>();
      sn->base = base;
      sn->size = size;
      auto* mem = reinterpret_cast<const std::byte*>(base);
      sn->bytes.assign(mem, mem + size);
      ms.open.push_back(sn.get());
      snaps.push_back(std::move(sn));
    }
  }
  void close(bool ran) {
    MemorySystem& ms = memory();
    std::lock_guard l(ms.m);
    for (auto& sn : snaps) {
      std::erase(ms.open, sn.get());
      if (!ran) continue;
      auto* mem = reinterpret_cast<const std::byte*>(sn->base);
      Dirty* d = nullptr;
      for (size_t i = 0; i < sn->size; ++i) {
        if (mem[i] == sn->bytes[i]) continue;
        if (!d) {
          d = &ms.l2[which].lines[sn->base];
          if (d->mask.empty()) {
            d->mask.assign(sn->size, 0);
            d->old_bytes.resize(sn->size);
            d->new_bytes.resize(sn->size);
          }
        }
        if (!d->mask[i]) {
          d->mask[i] = 1;
          d->old_bytes[i] = sn->bytes[i];
        }
        d->new_bytes[i] = mem[i];
      }
      if (d) ms.l2[which].last_write = ms.dispatches;
    }
    snaps.clear();
  }
  ~DispatchWindow() { close(false); }
};

// A freed allocation's dirty bytes go with it.
void forget_dirty(uintptr_t base) {
  MemorySystem& ms = memory();
  std::lock_guard l(ms.m);
  for (auto& c : ms.l2) c.lines.erase(base);
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
  auto* k = reinterpret_cast<SKernel*>(p.kernel_object);
  DispatchWindow window(p.kernarg_address, k ? std::min<size_t>(k->info.kernarg_size, LRRT_STANDIN_MAX_KERNARG) : 0);
  if (!run_dispatch(q, p, header)) return false;
  window.close(true);
  release_fence((header >> HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE) & 3, window.which);
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
      release_fence((header >> HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE) & 3, SIZE_MAX);
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
  // The memory system's lock is never taken under state().mutex: its holders
  // count events (count() takes state().mutex), so the order is memory, then
  // state (a lock-order inversion under TSan otherwise).
  std::optional<std::string> first_isa;
  {
    std::lock_guard l(state().mutex);
    if (state().init_count == 0) {
      const char* i = std::getenv("LRRT_HSA_STANDIN_ISA");
      state().isa = i && *i ? i : "gfx1100";
      first_isa = state().isa;
      // A smaller HSA_AGENT_INFO_QUEUE_MAX_SIZE (a power of two, 16..4096),
      // so tests can fill a ring.
      const char* m = std::getenv("LRRT_HSA_STANDIN_QUEUE_MAX");
      const unsigned long max = m && *m ? std::strtoul(m, nullptr, 10) : 4096;
      state().queue_max_size = max >= 16 && max <= 4096 && (max & (max - 1)) == 0 ? uint32_t(max) : 4096;
    }
  }
  if (first_isa) {
    std::lock_guard m(memory().m);
    memory().l2.assign(l2_count_for(*first_isa), L2Cache{});
  }
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
    if (--state().init_count == 0) {
      std::swap(ce, copy_engine);
      state().event_handlers.clear();
      state().vm_fault_delivered = false;
      state().hw_exception_delivered = false;
    }
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
    case HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED: *s = "HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED: the variable is already defined"; break;
    case HSA_STATUS_ERROR_MEMORY_FAULT: *s = "HSA_STATUS_ERROR_MEMORY_FAULT: agent attempted to access an inaccessible address"; break;
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
    case HSA_AGENT_INFO_QUEUE_MAX_SIZE: put<uint32_t>(value, gpu ? state().queue_max_size : 0); break;
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
  // As ROCr (hsa_ext_amd.cpp): a zero size or a null result pointer is refused.
  if (size == 0 || !ptr) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  if (pool.handle != kGpuPool && pool.handle != kFinePool && pool.handle != kKernargPool)
    return hsa_status_t(HSA_STATUS_ERROR_INVALID_MEMORY_POOL);
  Faults f = faults();
  if (pool.handle == kGpuPool && f.alloc_fail_bytes && size >= f.alloc_fail_bytes)
    return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  void* p = std::aligned_alloc(4096, (size + 4095) & ~size_t(4095));
  if (!p) return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  std::lock_guard l(state().mutex);
  state().allocations[reinterpret_cast<uintptr_t>(p)] = size;
  if (pool.handle == kGpuPool) state().device_allocations[reinterpret_cast<uintptr_t>(p)] = size;
  state().counters["live_allocations"]++;
  *ptr = p;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_amd_memory_pool_free(void* ptr) {
  forget_dirty(reinterpret_cast<uintptr_t>(ptr));
  {
    std::lock_guard l(state().mutex);
    if (!state().allocations.erase(reinterpret_cast<uintptr_t>(ptr)))
      return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    state().device_allocations.erase(reinterpret_cast<uintptr_t>(ptr));
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

EXPORT hsa_status_t hsa_amd_register_system_event_handler(hsa_amd_system_event_callback_t callback,
                                                         void* data) {
  if (!callback) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  std::lock_guard l(state().mutex);
  if (state().init_count == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  state().event_handlers.emplace_back(callback, data);
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
  sig(s)->release();
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
  if (size == 0 || (size & (size - 1)) || size > state().queue_max_size) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
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
  {
    std::lock_guard l(state().mutex);
    state().queues.push_back(q);
  }
  count("queues_created");
  *out = &q->q;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_queue_destroy(hsa_queue_t* queue) {
  SQueue* q = squeue(queue);
  {
    std::lock_guard l(state().mutex);
    std::erase(state().queues, q);
  }
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
    // As ROCr's loader (ExecutableImpl::LoadDefinitionSymbol): a non-local
    // symbol (global or weak) defined by an earlier code object of the
    // executable cannot be defined again.
    lrrt::formats::elf::File elf(reader->bytes, "AMDGPU code object");
    std::vector<std::string> defined;
    for (const auto& section : elf.sections()) {
      if (section.header.sh_type != SHT_SYMTAB) continue;
      for (const auto& sym : elf.symbols(section)) {
        if (!sym.defined() || sym.binding() == STB_LOCAL || sym.name.empty()) continue;
        if (sym.type() != STT_OBJECT && sym.type() != STT_FUNC && sym.type() != STT_LOOS) continue;  // STT_LOOS: v2 kernels
        std::string name(sym.name);
        if (std::find(exe->symbols.begin(), exe->symbols.end(), name) != exe->symbols.end()) {
          count("symbols_already_defined");
          return HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED;
        }
        defined.push_back(std::move(name));
      }
    }
    exe->symbols.insert(exe->symbols.end(), defined.begin(), defined.end());
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
EXPORT void lrrt_hsa_standin_pause_next_copy_call(int pause) {
  {
    std::lock_guard l(pause_mutex);
    pause_armed = pause != 0;
    pause_holding = pause != 0;
  }
  pause_cv.notify_all();
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
EXPORT void lrrt_hsa_standin_raise_vm_fault(uint64_t address) {
  vm_fault(nullptr, address, HSA_AMD_MEMORY_FAULT_PAGE_NOT_PRESENT, "lrrt_hsa_standin_raise_vm_fault");
}
EXPORT void lrrt_hsa_standin_raise_hw_exception(uint32_t cause) {
  hw_exception(cause, "lrrt_hsa_standin_raise_hw_exception");
}
EXPORT void lrrt_hsa_standin_set_worst_order(int on) { worst_order.store(on != 0); }
EXPORT uint64_t lrrt_hsa_standin_counter(const char* name) {
  if (std::strcmp(name, "doorbell_rings") == 0) return doorbell_rings.load();
  if (std::strcmp(name, "write_index_adds") == 0) return write_index_adds.load();
  std::lock_guard l(state().mutex);
  auto it = state().counters.find(name);
  return it == state().counters.end() ? 0 : it->second;
}

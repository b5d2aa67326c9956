// The runtime singleton behind the C ABI: the backends, one state per device,
// the live handles (so a stale or foreign handle is an error, not a crash)
// and memory statistics. Every lr_* function in c_api*.cpp is a thin wrapper
// over a method here.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "backend.hpp"
#include "keep_until_exit.hpp"
#include "lrrt/lrrt.h"

namespace lrrt::rt {

struct DeviceState;
class StagingPipeline;  // staging.hpp

// What one queue was given and what a drain saw finish, so that a drain waits
// for everything submitted before it started, and an idle queue costs
// lr_synchronize no driver call. A submission counts once it returned
// (SubmitScope), so a drain that starts after it waits for it; a drain
// records the count it read before waiting as finished only when its wait
// succeeded, so a concurrent drain never takes another's wait for its own.
class SubmitCount {
 public:
  uint64_t submitted() const { return submitted_.load(std::memory_order_acquire); }
  uint64_t finished() const { return finished_.load(std::memory_order_acquire); }
  void count_submission() { submitted_.fetch_add(1, std::memory_order_acq_rel); }
  void mark_finished(uint64_t upto) {
    uint64_t seen = finished_.load(std::memory_order_relaxed);
    while (seen < upto && !finished_.compare_exchange_weak(seen, upto, std::memory_order_acq_rel)) {
    }
  }

 private:
  std::atomic<uint64_t> submitted_{0};
  std::atomic<uint64_t> finished_{0};
};

// Counts one submission when the scope ends, returned or thrown (a partly
// submitted replay still has work on the queue).
class SubmitScope {
 public:
  explicit SubmitScope(SubmitCount& count) : count_(count) {}
  ~SubmitScope() { count_.count_submission(); }
  SubmitScope(const SubmitScope&) = delete;
  SubmitScope& operator=(const SubmitScope&) = delete;

 private:
  SubmitCount& count_;
};

}  // namespace lrrt::rt

// Handle types of the C ABI.
struct lr_queue_t {
  lr_queue_t(lrrt::rt::DeviceState* d, std::unique_ptr<lrrt::rt::Queue> q) : device(d), queue(std::move(q)) {}
  lrrt::rt::DeviceState* device;
  std::unique_ptr<lrrt::rt::Queue> queue;
  lrrt::rt::SubmitCount submissions;
};
struct lr_event_t {
  lrrt::rt::DeviceState* device;
  std::unique_ptr<lrrt::rt::Event> event;
  // Set by a record on one thread, read by waits and launches on others.
  std::atomic<bool> recorded{false};
};
struct lr_kernel_t {
  lr_module_t* module;
  lrrt::rt::Kernel* kernel;
};
struct lr_module_t {
  lrrt::rt::DeviceState* device;
  std::unique_ptr<lrrt::rt::Module> module;
  std::mutex kernels_mutex;
  std::unordered_map<std::string, std::unique_ptr<lr_kernel_t>> kernels;
  // Graphs and graph execs whose kernel nodes use this module: it cannot be
  // destroyed under them (graph/handles.hpp).
  std::atomic<uint32_t> graph_users{0};
};
// lr_graph_t and lr_graph_exec_t: graph/handles.hpp.

namespace lrrt::rt {

struct BackendState {
  std::string name;
  std::unique_ptr<Backend> backend;
  BackendStatus status;
  uint32_t first_device = 0;  // global index of its device 0
  uint32_t device_count = 0;
};

struct DeviceState {
  uint32_t index = 0;
  BackendState* backend = nullptr;
  uint32_t ordinal = 0;

  // Opening, once (Runtime::opened). Not std::call_once: an exception
  // thrown through it (pthread_once) aborts a binary linked with
  // -static-libgcc, as the lrrt binary is.
  std::mutex open_mutex;
  std::atomic<bool> open{false};
  std::unique_ptr<Device> device;        // opened on first use
  std::unique_ptr<Queue> default_queue;  // lr_launch, lr_memcpy_async, lr_event_record
  std::unique_ptr<Queue> copy_queue;     // lr_memcpy_async_with_dependencies
  // Submissions, as lr_queue_t::submissions.
  SubmitCount default_queue_submissions;
  SubmitCount copy_queue_submissions;
  // Set when a wait timed out: work may never finish, so shutdown leaves the
  // device's objects alone instead of waiting for them.
  std::atomic<bool> hung{false};

  std::mutex mutex;  // guards everything below
  lr_memory_stats_t stats{};
  std::unordered_map<void*, size_t> allocations;
  std::unordered_map<void*, size_t> host_allocations;
  // Memory lrrt did not allocate that the caller declared with
  // lr_memory_register (a torch tensor's storage, say), by start address.
  // Graphs accept it like an allocation; lrrt never maps or frees it.
  struct Registration {
    uint64_t bytes = 0;
    uint32_t references = 0;  // identical ranges registered more than once
  };
  std::map<uintptr_t, Registration> registered;
  // Devices whose memory this one may reach (lr_device_enable_peer_access).
  std::vector<uint32_t> peers;
  // Shared with the handle tables: a drain holds its copies while it waits,
  // so a queue or exec destroyed meanwhile by another thread stays alive
  // until that drain is done with it.
  std::unordered_map<const lr_queue_t*, std::shared_ptr<lr_queue_t>> queues;
  // Graph execs of the device: their own queues are drained with the rest.
  std::unordered_map<const lr_graph_exec_t*, std::shared_ptr<lr_graph_exec_t>> graph_execs;
  // Counts lr_free calls: a graph exec re-checks its buffers before a
  // launch when this moved since it last looked.
  std::atomic<uint64_t> free_epoch{0};
  // lr_memcpy's pageable-copy pipeline (staging.cpp), made on first use.
  std::shared_ptr<StagingPipeline> staging;
};

class Runtime {
 public:
  static Runtime* instance();  // nullptr unless lr_init succeeded
  static void initialize();    // throws ALREADY_INITIALIZED
  static void shutdown();      // throws NOT_INITIALIZED

  const std::vector<std::unique_ptr<BackendState>>& backends() const { return backends_; }
  uint32_t device_count() const { return static_cast<uint32_t>(devices_.size()); }

  // Validated access; throws INVALID_ARGUMENT naming what is wrong.
  DeviceState& device(lr_device_t handle);
  DeviceState& device_index(uint32_t index);
  Device& opened(DeviceState& state);  // opens the backend device on first use
  uint32_t select(std::string_view backend, uint32_t ordinal);

  void check_queue(const lr_queue_t* q);
  void check_event(const lr_event_t* e);
  void check_module(const lr_module_t* m);
  void check_kernel(const lr_kernel_t* k);

  lr_queue_t* create_queue(DeviceState& state);
  void destroy_queue(lr_queue_t* queue);
  lr_event_t* create_event(DeviceState& state);
  void destroy_event(lr_event_t* event);
  lr_module_t* load_module(DeviceState& state, std::span<const std::byte> image);
  void destroy_module(lr_module_t* module);
  lr_kernel_t* kernel(lr_module_t* module, std::string_view name);

  void* allocate(DeviceState& state, size_t size, bool pinned_host);
  void free(DeviceState& state, void* ptr, bool pinned_host);
  void register_memory(DeviceState& state, void* ptr, uint64_t bytes);
  void unregister_memory(DeviceState& state, void* ptr);
  void record_copy(DeviceState& state, CopyKind kind, size_t size);

  // Peer access (lr_device_*_peer*): between two opened devices of one
  // backend; errors name both devices.
  bool can_access_peer(DeviceState& device, DeviceState& peer);
  void enable_peer_access(DeviceState& device, DeviceState& peer);
  // On dst's copy queue, after `wait_for` (events of either device).
  void copy_peer_async(DeviceState& dst_device, void* dst, DeviceState& src_device, const void* src, size_t size,
                       const std::vector<Event*>& wait_for, Event* signal);
  // "device 1 (host, CPU name)": for messages.
  std::string describe_device(DeviceState& state);

  // Retained replay (graph/graph_api.cpp).
  lr_graph_t* create_graph(DeviceState& state);
  void destroy_graph(lr_graph_t* graph);
  void check_graph(const lr_graph_t* graph);
  lr_graph_exec_t* instantiate_graph(lr_graph_t* graph, const lr_graph_instantiate_options_t* options);
  void destroy_graph_exec(lr_graph_exec_t* exec);
  void check_graph_exec(const lr_graph_exec_t* exec);
  void launch_graph(lr_graph_exec_t* exec, lr_queue_t* queue, lr_event_t* completion);
  void set_graph_kernargs(lr_graph_exec_t* exec, uint32_t node, size_t offset, std::span<const std::byte> bytes);
  void set_graph_max_in_flight(lr_graph_exec_t* exec, uint32_t count);
  lr_graph_exec_stats_t graph_stats(lr_graph_exec_t* exec);
  std::string graph_plan(lr_graph_exec_t* exec);

  // Waits for every queue of the device; rethrows the first execution error.
  void drain(DeviceState& state);
  // Waits for one queue if it was given work since its last successful
  // wait (`count`); a timeout marks the device hung.
  void synchronize_tracked(DeviceState& state, Queue& queue, SubmitCount& count);

 private:
  Runtime();
  void drain_all_noexcept();

 public:
  ~Runtime();

 private:

  std::vector<std::unique_ptr<BackendState>> backends_;
  std::vector<std::unique_ptr<DeviceState>> devices_;

  std::mutex handles_mutex_;
  std::unordered_set<const lr_queue_t*> queues_;
  std::unordered_map<const lr_event_t*, std::unique_ptr<lr_event_t>> events_;
  std::unordered_map<const lr_module_t*, std::unique_ptr<lr_module_t>> modules_;
  std::unordered_map<const lr_queue_t*, std::shared_ptr<lr_queue_t>> queue_owners_;
  std::unordered_set<const lr_kernel_t*> kernels_;
  std::unordered_map<const lr_graph_t*, std::unique_ptr<lr_graph_t>> graphs_;
  std::unordered_map<const lr_graph_exec_t*, std::shared_ptr<lr_graph_exec_t>> graph_execs_;
};

}  // namespace lrrt::rt

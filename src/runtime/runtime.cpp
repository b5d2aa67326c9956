#include "runtime.hpp"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "env.hpp"
#include "error.hpp"
#include "graph/handles.hpp"
#include "wait.hpp"

namespace lrrt::rt {
namespace {

// The one piece of global mutable state the C ABI needs.
std::mutex g_lifecycle_mutex;
std::atomic<Runtime*> g_runtime{nullptr};

// What ~Runtime must not destroy (the objects of a hung device), and what
// work that may still run uses (keep_until_exit), is owned here to the end
// of the process: never destroyed, so never waited for or unloaded, and
// still reachable, so LeakSanitizer reports only real leaks.
std::mutex g_kept_mutex;
std::vector<std::shared_ptr<void>>& kept_to_exit() {
  static auto* kept = new std::vector<std::shared_ptr<void>>;
  return *kept;
}
template <class T>
void keep_to_exit(std::unique_ptr<T>& object) {
  if (object) keep_until_exit(std::shared_ptr<T>(std::move(object)));
}
template <class T>
void keep_to_exit(std::shared_ptr<T>& object) {
  if (object) keep_until_exit(std::move(object));
}

}  // namespace

void keep_until_exit(std::shared_ptr<void> object) {
  std::lock_guard lock(g_kept_mutex);
  kept_to_exit().push_back(std::move(object));
}

bool is_timeout(const std::exception_ptr& error) {
  if (!error) return false;
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    return e.status() == LR_ERROR_TIMEOUT;
  } catch (...) {
  }
  return false;
}

Runtime* Runtime::instance() { return g_runtime.load(std::memory_order_acquire); }

void Runtime::initialize() {
  std::lock_guard lock(g_lifecycle_mutex);
  if (instance()) LRRT_THROW(LR_ERROR_ALREADY_INITIALIZED, "lr_init was already called");
  // Every LRRT_* variable first: a bad one fails lr_init, naming it, before
  // anything is made (not a device open or a copy later in the run).
  env::check_all();
  read_wait_settings_from_env();
  g_runtime.store(new Runtime(), std::memory_order_release);
}

void Runtime::shutdown() {
  std::lock_guard lock(g_lifecycle_mutex);
  std::unique_ptr<Runtime> runtime(g_runtime.exchange(nullptr));
  if (!runtime) LRRT_THROW(LR_ERROR_NOT_INITIALIZED, "lr_init has not been called");
  runtime->drain_all_noexcept();
}

Runtime::Runtime() {
  for (const auto& reg : registered_backends()) {
    auto state = std::make_unique<BackendState>();
    state->name = std::string(reg.name);
    try {
      state->backend = reg.create();
      state->status = state->backend->initialize();
      state->device_count = state->status.usable ? state->backend->device_count() : 0;
    } catch (const std::exception& e) {
      state->status = {false, e.what()};
      state->device_count = 0;
    }
    state->first_device = static_cast<uint32_t>(devices_.size());
    for (uint32_t i = 0; i < state->device_count; ++i) {
      auto d = std::make_unique<DeviceState>();
      d->index = static_cast<uint32_t>(devices_.size());
      d->backend = state.get();
      d->ordinal = i;
      devices_.push_back(std::move(d));
    }
    backends_.push_back(std::move(state));
  }
}

Runtime::~Runtime() {
  // A device whose work timed out may still be running a kernel that never
  // returns: destroying its queues would wait forever and unloading its
  // modules would pull code from under it. Its objects, and the memory it may
  // still use, are kept to the end of the process instead (not destroyed).
  for (auto& [handle, module] : modules_)
    if (module->device->hung.load()) keep_to_exit(module);
  for (auto& [handle, event] : events_)
    if (event->device->hung.load()) keep_to_exit(event);
  for (auto& [handle, queue] : queue_owners_)
    if (queue->device->hung.load()) keep_to_exit(queue);
  for (auto& [handle, exec] : graph_execs_)
    if (exec->device->hung.load()) keep_to_exit(exec);
  // The devices' shares of queues and execs go first, so that clearing the
  // handle tables below destroys them before their devices.
  for (auto& d : devices_) {
    d->queues.clear();
    d->graph_execs.clear();
  }
  for (auto& d : devices_) {
    if (!d->hung.load()) continue;
    keep_to_exit(d->copy_queue);
    keep_to_exit(d->default_queue);
    keep_to_exit(d->device);
    keep_until_exit(std::make_shared<decltype(d->allocations)>(std::move(d->allocations)));
    keep_until_exit(std::make_shared<decltype(d->host_allocations)>(std::move(d->host_allocations)));
  }
  // Handles die before the devices and backends that made them; graph
  // execs first (they use kernels, events and queues of their device).
  graph_execs_.clear();
  graphs_.clear();
  kernels_.clear();
  modules_.clear();
  events_.clear();
  queue_owners_.clear();
  for (auto& d : devices_) {
    d->staging.reset();  // pinned chunks and queue of the staging pipeline
    d->copy_queue.reset();
    d->default_queue.reset();
    if (d->device) {
      for (auto& [ptr, size] : d->allocations) {
        try { d->device->free(ptr); } catch (...) {}
      }
      for (auto& [ptr, size] : d->host_allocations) {
        try { d->device->free_host(ptr); } catch (...) {}
      }
    }
    d->device.reset();
  }
  devices_.clear();
  backends_.clear();
}

void Runtime::drain_all_noexcept() {
  for (auto& d : devices_) {
    if (!d->device) continue;
    try { drain(*d); } catch (...) {}
  }
}

DeviceState& Runtime::device_index(uint32_t index) {
  if (index >= devices_.size())
    LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "device index {} is out of range: {} device(s) available",
               index, devices_.size());
  return *devices_[index];
}

DeviceState& Runtime::device(lr_device_t handle) { return device_index(handle.index); }

Device& Runtime::opened(DeviceState& state) {
  if (state.open.load(std::memory_order_acquire)) return *state.device;
  std::lock_guard lock(state.open_mutex);
  if (!state.open.load(std::memory_order_relaxed)) {
    // All or nothing: a failure (the device, or a queue's thread that cannot
    // be started) leaves no half-made device, and the next call retries
    // (and fails again with its message). The queues go before the device.
    auto dev = state.backend->backend->open_device(state.ordinal);
    auto default_queue = dev->create_queue();
    auto copy_queue = dev->create_queue();
    state.default_queue = std::move(default_queue);
    state.copy_queue = std::move(copy_queue);
    state.device = std::move(dev);
    state.open.store(true, std::memory_order_release);
  }
  return *state.device;
}

uint32_t Runtime::select(std::string_view backend, uint32_t ordinal) {
  if (backend == "auto") {
    if (ordinal >= devices_.size())
      LRRT_THROW(LR_ERROR_NOT_FOUND, "device {} not found: {} device(s) available", ordinal,
                 devices_.size());
    return ordinal;
  }
  for (auto& b : backends_) {
    if (b->name != backend) continue;
    if (!b->status.usable)
      LRRT_THROW(LR_ERROR_UNAVAILABLE, "backend '{}' is not usable: {}", backend, b->status.message);
    if (ordinal >= b->device_count)
      LRRT_THROW(LR_ERROR_NOT_FOUND, "backend '{}' has {} device(s); device {} does not exist",
                 backend, b->device_count, ordinal);
    return b->first_device + ordinal;
  }
  std::string names;
  for (auto& b : backends_) names += (names.empty() ? "" : ", ") + b->name;
  LRRT_THROW(LR_ERROR_NOT_FOUND, "unknown backend '{}': this build has auto, {}", backend, names);
}

void Runtime::check_queue(const lr_queue_t* q) {
  std::lock_guard lock(handles_mutex_);
  if (!q || !queue_owners_.count(q)) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "invalid or destroyed queue handle");
}
void Runtime::check_event(const lr_event_t* e) {
  std::lock_guard lock(handles_mutex_);
  if (!e || !events_.count(e)) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "invalid or destroyed event handle");
}
void Runtime::check_module(const lr_module_t* m) {
  std::lock_guard lock(handles_mutex_);
  if (!m || !modules_.count(m)) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "invalid or destroyed module handle");
}
void Runtime::check_kernel(const lr_kernel_t* k) {
  std::lock_guard lock(handles_mutex_);
  if (!k || !kernels_.count(k))
    LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "invalid kernel handle (or its module was destroyed)");
}

lr_queue_t* Runtime::create_queue(DeviceState& state) {
  auto q = std::make_shared<lr_queue_t>(&state, opened(state).create_queue());
  lr_queue_t* raw = q.get();
  {
    std::lock_guard lock(state.mutex);
    state.queues.emplace(raw, q);
  }
  std::lock_guard lock(handles_mutex_);
  queue_owners_.emplace(raw, std::move(q));
  return raw;
}

void Runtime::destroy_queue(lr_queue_t* queue) {
  check_queue(queue);
  // Waiting first: destroying a queue must not drop submitted work. An
  // execution error still reaches the caller after the handle is gone.
  std::exception_ptr error;
  try { queue->queue->synchronize(); } catch (...) { error = std::current_exception(); }
  std::shared_ptr<lr_queue_t> owned;
  {
    std::lock_guard lock(handles_mutex_);
    auto it = queue_owners_.find(queue);
    if (it == queue_owners_.end()) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "queue handle destroyed concurrently");
    owned = std::move(it->second);
    queue_owners_.erase(it);
  }
  {
    std::lock_guard lock(owned->device->mutex);
    owned->device->queues.erase(queue);
  }
  // A wait that timed out leaves work running on the queue (a hung kernel):
  // the handle is gone, the queue is kept to the end of the process and the
  // device is marked hung. Otherwise a drain on another thread may still
  // hold a share: the queue is destroyed when the last one goes.
  if (is_timeout(error)) {
    owned->device->hung.store(true);
    keep_until_exit(std::move(owned));
  }
  owned.reset();
  if (error) std::rethrow_exception(error);
}

lr_event_t* Runtime::create_event(DeviceState& state) {
  auto e = std::make_unique<lr_event_t>();
  e->device = &state;
  e->event = opened(state).create_event();
  lr_event_t* raw = e.get();
  std::lock_guard lock(handles_mutex_);
  events_.emplace(raw, std::move(e));
  return raw;
}

void Runtime::destroy_event(lr_event_t* event) {
  check_event(event);
  if (event->recorded.load()) {
    try { event->event->synchronize(); } catch (...) {
      // The error belongs to the work, which its queue reports at its next
      // synchronize; destroying the event must still succeed.
    }
  }
  std::unique_ptr<lr_event_t> owned;
  {
    std::lock_guard lock(handles_mutex_);
    auto it = events_.find(event);
    if (it == events_.end()) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "event handle destroyed concurrently");
    owned = std::move(it->second);
    events_.erase(it);
  }
}

lr_module_t* Runtime::load_module(DeviceState& state, std::span<const std::byte> image) {
  if (image.empty()) LRRT_THROW(LR_ERROR_INVALID_IMAGE, "code object is empty");
  auto m = std::make_unique<lr_module_t>();
  m->device = &state;
  m->module = opened(state).load_module(image);
  lr_module_t* raw = m.get();
  std::lock_guard lock(handles_mutex_);
  modules_.emplace(raw, std::move(m));
  return raw;
}

void Runtime::destroy_module(lr_module_t* module) {
  check_module(module);
  if (uint32_t users = module->graph_users.load())
    LRRT_THROW(LR_ERROR_BUSY,
               "the module's kernels are used by {} graph(s) or graph exec(s): destroy them before the module", users);
  drain(*module->device);
  std::unique_ptr<lr_module_t> owned;
  {
    std::lock_guard lock(handles_mutex_);
    for (auto& [name, k] : module->kernels) kernels_.erase(k.get());
    auto it = modules_.find(module);
    if (it == modules_.end()) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "module handle destroyed concurrently");
    owned = std::move(it->second);
    modules_.erase(it);
  }
}

lr_kernel_t* Runtime::kernel(lr_module_t* module, std::string_view name) {
  check_module(module);
  std::lock_guard lock(module->kernels_mutex);
  std::string key(name);
  auto it = module->kernels.find(key);
  if (it != module->kernels.end()) return it->second.get();
  Kernel& k = module->module->kernel(name);  // throws NOT_FOUND with the list
  auto handle = std::make_unique<lr_kernel_t>(lr_kernel_t{module, &k});
  lr_kernel_t* raw = handle.get();
  module->kernels.emplace(std::move(key), std::move(handle));
  std::lock_guard hl(handles_mutex_);
  kernels_.insert(raw);
  return raw;
}

void* Runtime::allocate(DeviceState& state, size_t size, bool pinned_host) {
  if (size == 0) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "allocation size is zero");
  Device& dev = opened(state);
  const auto& props = dev.properties();
  if (!pinned_host && props.memory_bytes && size > props.memory_bytes)
    LRRT_THROW(LR_ERROR_OUT_OF_MEMORY,
               "cannot allocate {} bytes on {} device {} ({}): the device has {} bytes of memory",
               size, props.backend, state.ordinal, props.name, props.memory_bytes);
  void* ptr = pinned_host ? dev.allocate_host(size) : dev.allocate(size);
  std::lock_guard lock(state.mutex);
  auto& s = state.stats;
  if (pinned_host) {
    state.host_allocations.emplace(ptr, size);
    s.pinned_host_live_bytes += size;
    s.pinned_host_total_allocated_bytes += size;
    s.pinned_host_allocation_count++;
    s.pinned_host_peak_live_bytes = std::max(s.pinned_host_peak_live_bytes, s.pinned_host_live_bytes);
  } else {
    state.allocations.emplace(ptr, size);
    s.live_bytes += size;
    s.total_allocated_bytes += size;
    s.allocation_count++;
    s.peak_live_bytes = std::max(s.peak_live_bytes, s.live_bytes);
  }
  return ptr;
}

void Runtime::register_memory(DeviceState& state, void* ptr, uint64_t bytes) {
  if (!ptr) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "ptr is null");
  if (bytes == 0) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "bytes is zero");
  const uintptr_t begin = reinterpret_cast<uintptr_t>(ptr);
  if (bytes > UINTPTR_MAX - begin)
    LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "[{}, +{} bytes) wraps around the address space", ptr, bytes);
  const uintptr_t end = begin + bytes;
  std::lock_guard lock(state.mutex);
  auto overlaps = [&](uintptr_t b, uint64_t n) { return begin < b + n && b < end; };
  for (const auto* table : {&state.allocations, &state.host_allocations})
    for (const auto& [p, n] : *table)
      if (overlaps(reinterpret_cast<uintptr_t>(p), n))
        LRRT_THROW(LR_ERROR_INVALID_ARGUMENT,
                   "[{}, +{} bytes) overlaps the {}-byte {} allocation at {} of device {}: memory lrrt allocated "
                   "needs no registration",
                   ptr, bytes, n, table == &state.allocations ? "lr_malloc" : "lr_host_malloc", p, state.index);
  if (auto it = state.registered.find(begin); it != state.registered.end() && it->second.bytes == bytes) {
    it->second.references++;
    return;
  }
  for (const auto& [b, r] : state.registered)
    if (overlaps(b, r.bytes))
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT,
                 "[{}, +{} bytes) overlaps the registered range [{:#x}, +{} bytes) of device {}: register a range "
                 "once, or exactly the same range again",
                 ptr, bytes, b, r.bytes, state.index);
  state.registered.emplace(begin, DeviceState::Registration{bytes, 1});
}

void Runtime::unregister_memory(DeviceState& state, void* ptr) {
  if (!ptr) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "ptr is null");
  std::lock_guard lock(state.mutex);
  auto it = state.registered.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == state.registered.end())
    LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "{} is not the start of a range registered with lr_memory_register on device {}",
               ptr, state.index);
  if (--it->second.references == 0) {
    state.registered.erase(it);
    // Graph execs re-check their buffers before the next launch, as after lr_free.
    state.free_epoch.fetch_add(1);
  }
}

void Runtime::free(DeviceState& state, void* ptr, bool pinned_host) {
  if (!ptr) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "pointer is null");
  size_t size = 0;
  {
    std::lock_guard lock(state.mutex);
    auto& table = pinned_host ? state.host_allocations : state.allocations;
    auto it = table.find(ptr);
    if (it == table.end())
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "pointer {} was not allocated by {} on device {} (or was freed already)",
                 ptr, pinned_host ? "lr_host_malloc" : "lr_malloc", state.index);
    size = it->second;
  }
  // Pending work may still use the memory; drain without holding the lock so
  // other threads can keep submitting meanwhile. A wait that timed out leaves
  // that work running (a hung kernel still reads and writes the buffer): the
  // memory stays allocated and the caller gets the timeout.
  std::exception_ptr error;
  try {
    drain(state);
  } catch (const Error& e) {
    if (e.status() == LR_ERROR_TIMEOUT) throw;
    error = std::current_exception();
  } catch (...) {
    error = std::current_exception();
  }
  {
    std::lock_guard lock(state.mutex);
    auto& table = pinned_host ? state.host_allocations : state.allocations;
    if (table.erase(ptr) == 0)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "pointer {} was freed concurrently", ptr);
    state.free_epoch.fetch_add(1);
    auto& s = state.stats;
    if (pinned_host) {
      s.pinned_host_live_bytes -= std::min<uint64_t>(size, s.pinned_host_live_bytes);
      s.pinned_host_total_freed_bytes += size;
      s.pinned_host_free_count++;
    } else {
      s.live_bytes -= std::min<uint64_t>(size, s.live_bytes);
      s.total_freed_bytes += size;
      s.free_count++;
    }
  }
  if (pinned_host) state.device->free_host(ptr);
  else state.device->free(ptr);
  if (error) std::rethrow_exception(error);
}

std::string Runtime::describe_device(DeviceState& state) {
  const DeviceProperties& p = opened(state).properties();
  return fmt::format("device {} ({}, {})", state.index, p.backend, p.name);
}

bool Runtime::can_access_peer(DeviceState& device, DeviceState& peer) {
  if (&device == &peer || device.backend != peer.backend) return false;
  return opened(device).can_access_peer(opened(peer));
}

void Runtime::enable_peer_access(DeviceState& device, DeviceState& peer) {
  if (&device == &peer)
    LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "{} is not its own peer: its memory needs no peer access",
               describe_device(device));
  if (device.backend != peer.backend)
    LRRT_THROW(LR_ERROR_NOT_SUPPORTED, "{} and {} are of different backends: no peer access between them",
               describe_device(device), describe_device(peer));
  if (!can_access_peer(device, peer))
    LRRT_THROW(LR_ERROR_NOT_SUPPORTED, "{} cannot reach the memory of {} (the backend reports no peer access)",
               describe_device(device), describe_device(peer));
  {
    std::lock_guard lock(device.mutex);
    if (std::find(device.peers.begin(), device.peers.end(), peer.index) != device.peers.end()) return;
  }
  opened(device).enable_peer_access(opened(peer));
  std::lock_guard lock(device.mutex);
  if (std::find(device.peers.begin(), device.peers.end(), peer.index) == device.peers.end())
    device.peers.push_back(peer.index);
}

void Runtime::copy_peer_async(DeviceState& dst_device, void* dst, DeviceState& src_device, const void* src, size_t size,
                              const std::vector<Event*>& wait_for, Event* signal) {
  if (&dst_device != &src_device) {
    bool enabled = false;
    {
      std::lock_guard lock(dst_device.mutex);
      enabled = std::find(dst_device.peers.begin(), dst_device.peers.end(), src_device.index) != dst_device.peers.end();
    }
    if (!enabled)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT,
                 "{} may not read the memory of {}: call lr_device_enable_peer_access({}, {}) first",
                 describe_device(dst_device), describe_device(src_device), dst_device.index, src_device.index);
  }
  Device& d = opened(dst_device);
  {
    SubmitScope submitted(dst_device.copy_queue_submissions);
    if (&dst_device == &src_device)
      dst_device.copy_queue->copy(dst, src, size, CopyKind::DeviceToDevice, wait_for, signal);
    else
      d.copy_from_peer(*dst_device.copy_queue, dst, opened(src_device), src, size, wait_for, signal);
  }
  record_copy(dst_device, CopyKind::DeviceToDevice, size);
}

void Runtime::record_copy(DeviceState& state, CopyKind kind, size_t size) {
  std::lock_guard lock(state.mutex);
  auto& s = state.stats;
  switch (kind) {
    case CopyKind::HostToDevice: s.h2d_copy_bytes += size; break;
    case CopyKind::DeviceToHost: s.d2h_copy_bytes += size; break;
    case CopyKind::DeviceToDevice: s.d2d_copy_bytes += size; break;
  }
  s.memcpy_count++;
}

void Runtime::synchronize_tracked(DeviceState& state, Queue& queue, SubmitCount& count) {
  // Only a queue given work since its last successful wait waits: an idle
  // device drains without a driver call. The count is read before the wait,
  // and marked finished only after it succeeded; a failed wait leaves it
  // unfinished (a timed-out queue may still hold work) and a timeout marks
  // the device hung.
  const uint64_t submitted = count.submitted();
  if (count.finished() >= submitted) return;
  try {
    queue.synchronize();
  } catch (const Error& e) {
    if (e.status() == LR_ERROR_TIMEOUT) state.hung.store(true);
    throw;
  }
  count.mark_finished(submitted);
}

void Runtime::drain(DeviceState& state) {
  // Never opened: nothing can be pending (read through the flag opened()
  // publishes the device with, never the pointer itself).
  if (!state.open.load(std::memory_order_acquire)) return;
  // Shares, not pointers: another thread may destroy a queue or an exec
  // while this drain waits for an earlier one.
  std::vector<std::shared_ptr<lr_queue_t>> queues;
  std::vector<std::shared_ptr<lr_graph_exec_t>> execs;
  {
    std::lock_guard lock(state.mutex);
    queues.reserve(state.queues.size());
    for (const auto& [raw, q] : state.queues) queues.push_back(q);
    execs.reserve(state.graph_execs.size());
    for (const auto& [raw, e] : state.graph_execs) execs.push_back(e);
  }
  std::exception_ptr first;
  auto sync = [&](Queue& q, SubmitCount& count) {
    try {
      synchronize_tracked(state, q, count);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  };
  sync(*state.default_queue, state.default_queue_submissions);
  sync(*state.copy_queue, state.copy_queue_submissions);
  for (const auto& q : queues) sync(*q->queue, q->submissions);
  for (const auto& e : execs) {
    try {
      e->exec->drain();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace lrrt::rt

// The C ABI's memory (lr_malloc, lr_host_malloc, lr_memory_register and their
// frees), copies (lr_memcpy*, peer access and peer copies) and the memory
// statistics (lr_get_memory_stats, lr_reset_memory_stats). Shared helpers:
// c_api_support.hpp.
#include <mutex>
#include <vector>

#include "c_api_support.hpp"
#include "staging.hpp"

using namespace lrrt::c_api;

namespace {

// lr_malloc and lr_host_malloc (host: pinned host memory), under their own names.
lr_status_t c_api_allocate(const char* function, lr_device_t device, size_t size, void** ptr, bool host) {
  return guard(function, [&] {
    require(ptr, "ptr");
    *ptr = nullptr;
    Runtime& r = rt();
    *ptr = r.allocate(r.device(device), size, host);
  });
}

// lr_free and lr_host_free.
lr_status_t c_api_free(const char* function, lr_device_t device, void* ptr, bool host) {
  return guard(function, [&] {
    Runtime& r = rt();
    r.free(r.device(device), ptr, host);
  });
}

// lr_memcpy_async (the default queue, which is in order: the copy follows
// earlier dispatches and later lr_launch calls follow the copy, all on the
// device side) and lr_memcpy_async_with_dependencies (the copy queue,
// separate from the default queue: no implicit dependency on earlier
// dispatches, only the listed events). `event`, where given, completes with
// the copy.
// kind by reference: a value outside the enum (from C) reaches to_copy_kind,
// which refuses it, without being loaded as the enum type on the way.
void c_api_copy_async(lr_device_t device, bool on_copy_queue, void* dst, const void* src, size_t size,
                      const lr_memcpy_kind_t& kind, lr_event_t* event, lr_event_t* const* dependencies,
                      size_t dependency_count) {
  Runtime& r = rt();
  DeviceState& state = r.device(device);
  CopyKind k = lrrt::rt::to_copy_kind(kind);
  check_copy_args(dst, src, size);
  if (event) {
    r.check_event(event);
    if (event->device != &state) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "event belongs to another device");
  }
  r.opened(state);
  Event* signal = event ? event->event.get() : nullptr;
  if (on_copy_queue) {
    auto deps = events_of(r, dependencies, dependency_count, &state);
    lrrt::rt::SubmitScope submitted(state.copy_queue_submissions);
    state.copy_queue->copy(dst, src, size, k, deps, signal);
  } else {
    lrrt::rt::SubmitScope submitted(state.default_queue_submissions);
    state.default_queue->copy(dst, src, size, k, {}, signal);
  }
  if (event) event->recorded.store(true);
  r.record_copy(state, k, size);
}

}  // namespace

extern "C" {

lr_status_t lr_malloc(lr_device_t device, size_t size, void** ptr) {
  return c_api_allocate("lr_malloc", device, size, ptr, false);
}

lr_status_t lr_free(lr_device_t device, void* ptr) { return c_api_free("lr_free", device, ptr, false); }

lr_status_t lr_host_malloc(lr_device_t device, size_t size, void** ptr) {
  return c_api_allocate("lr_host_malloc", device, size, ptr, true);
}

lr_status_t lr_host_free(lr_device_t device, void* ptr) { return c_api_free("lr_host_free", device, ptr, true); }

lr_status_t lr_memory_register(lr_device_t device, void* ptr, size_t bytes) {
  return guard("lr_memory_register", [&] {
    Runtime& r = rt();
    r.register_memory(r.device(device), ptr, bytes);
  });
}

lr_status_t lr_memory_unregister(lr_device_t device, void* ptr) {
  return guard("lr_memory_unregister", [&] {
    Runtime& r = rt();
    r.unregister_memory(r.device(device), ptr);
  });
}

lr_status_t lr_memcpy(lr_device_t device, void* dst, const void* src, size_t size, lr_memcpy_kind_t kind) {
  return guard("lr_memcpy", [&] {
    Runtime& r = rt();
    DeviceState& state = r.device(device);
    CopyKind k = lrrt::rt::to_copy_kind(kind);
    check_copy_args(dst, src, size);
    r.opened(state);
    r.drain(state);
    // Pageable host memory on a GPU backend goes through lrrt's pinned
    // staging pipeline (staging.hpp); everything else copies as before.
    if (size && !lrrt::rt::staged_copy(state, dst, src, size, k)) state.device->copy_sync(dst, src, size, k);
    r.record_copy(state, k, size);
  });
}

lr_status_t lr_memcpy_async(lr_device_t device, void* dst, const void* src, size_t size,
                            lr_memcpy_kind_t kind, lr_event_t* event) {
  return guard("lr_memcpy_async", [&] { c_api_copy_async(device, false, dst, src, size, kind, event, nullptr, 0); });
}

lr_status_t lr_memcpy_async_with_dependencies(lr_device_t device, void* dst, const void* src, size_t size,
                                              lr_memcpy_kind_t kind, lr_event_t* event,
                                              lr_event_t* const* dependencies, size_t dependency_count) {
  return guard("lr_memcpy_async_with_dependencies", [&] {
    c_api_copy_async(device, true, dst, src, size, kind, event, dependencies, dependency_count);
  });
}

lr_status_t lr_device_can_access_peer(lr_device_t device, lr_device_t peer, uint32_t* can_access) {
  return guard("lr_device_can_access_peer", [&] {
    require(can_access, "can_access");
    *can_access = 0;
    Runtime& r = rt();
    *can_access = r.can_access_peer(r.device(device), r.device(peer)) ? 1 : 0;
  });
}

lr_status_t lr_device_enable_peer_access(lr_device_t device, lr_device_t peer) {
  return guard("lr_device_enable_peer_access", [&] {
    Runtime& r = rt();
    r.enable_peer_access(r.device(device), r.device(peer));
  });
}

lr_status_t lr_memcpy_peer_async(lr_device_t dst_device, void* dst, lr_device_t src_device, const void* src, size_t size,
                                 lr_event_t* event, lr_event_t* const* dependencies, size_t dependency_count) {
  return guard("lr_memcpy_peer_async", [&] {
    Runtime& r = rt();
    DeviceState& d = r.device(dst_device);
    DeviceState& s = r.device(src_device);
    check_copy_args(dst, src, size);
    if (event) {
      r.check_event(event);
      if (event->device != &d)
        LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "the event belongs to device {}, not to the copy's destination device {}",
                   event->device->index, d.index);
    }
    if (dependency_count && !dependencies)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "dependencies is null but dependency_count is {}", dependency_count);
    std::vector<lrrt::rt::Event*> deps;
    for (size_t i = 0; i < dependency_count; ++i) {
      r.check_event(dependencies[i]);
      if (dependencies[i]->device != &d && dependencies[i]->device != &s)
        LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "dependency {} belongs to device {}, neither the copy's source ({}) nor "
                   "its destination ({})", i, dependencies[i]->device->index, s.index, d.index);
      if (dependencies[i]->recorded.load()) deps.push_back(dependencies[i]->event.get());
    }
    r.copy_peer_async(d, dst, s, src, size, deps, event ? event->event.get() : nullptr);
    if (event) event->recorded.store(true);
  });
}

lr_status_t lr_memcpy_peer(lr_device_t dst_device, void* dst, lr_device_t src_device, const void* src, size_t size) {
  return guard("lr_memcpy_peer", [&] {
    Runtime& r = rt();
    DeviceState& d = r.device(dst_device);
    DeviceState& s = r.device(src_device);
    check_copy_args(dst, src, size);
    r.drain(s);
    if (&d != &s) r.drain(d);
    r.copy_peer_async(d, dst, s, src, size, {}, nullptr);
    r.drain(d);
  });
}

lr_status_t lr_get_memory_stats(lr_device_t device, lr_memory_stats_t* stats) {
  return guard("lr_get_memory_stats", [&] {
    require(stats, "stats");
    DeviceState& state = rt().device(device);
    std::lock_guard lock(state.mutex);
    *stats = state.stats;
  });
}

lr_status_t lr_reset_memory_stats(lr_device_t device) {
  return guard("lr_reset_memory_stats", [&] {
    DeviceState& state = rt().device(device);
    std::lock_guard lock(state.mutex);
    lr_memory_stats_t reset{};
    reset.live_bytes = reset.peak_live_bytes = state.stats.live_bytes;
    reset.pinned_host_live_bytes = reset.pinned_host_peak_live_bytes = state.stats.pinned_host_live_bytes;
    state.stats = reset;
  });
}

}  // extern "C"

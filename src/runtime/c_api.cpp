// The C ABI: thin wrappers that validate arguments, call the runtime and map
// every C++ error to a status code in one place (guard()), keeping the
// message for lr_last_error_message() on the calling thread.
#include <cstring>
#include <new>
#include <string>

#include <fmt/format.h>

#include "env.hpp"
#include "error.hpp"
#include "graph/handles.hpp"
#include "lrrt/formats/error.hpp"
#include "lrrt/formats/kernel.hpp"
#include "lrrt/formats/triton.hpp"
#include "lrrt/lrrt.h"
#include "runtime.hpp"
#include "staging.hpp"
#include "tensor_map.hpp"
#include "wait.hpp"

using lrrt::rt::CopyKind;
using lrrt::rt::DeviceState;
using lrrt::Error;
using lrrt::rt::Event;
using lrrt::rt::Runtime;

namespace formats = lrrt::formats;

// lrrt_formats' argument kinds are the ABI's, value for value.
static_assert(static_cast<int>(formats::ArgKind::ByValue) == LR_ARG_BY_VALUE);
static_assert(static_cast<int>(formats::ArgKind::GlobalBuffer) == LR_ARG_GLOBAL_BUFFER);
static_assert(static_cast<int>(formats::ArgKind::DynamicShared) == LR_ARG_DYNAMIC_SHARED);
static_assert(static_cast<int>(formats::ArgKind::Hidden) == LR_ARG_HIDDEN);
static_assert(static_cast<int>(formats::ArgKind::Other) == LR_ARG_OTHER);
static_assert(static_cast<int>(formats::AccessMode::Read) == LR_ACCESS_READ);
static_assert(static_cast<int>(formats::AccessMode::Write) == LR_ACCESS_WRITE);
static_assert(static_cast<int>(formats::AccessMode::ReadWrite) == LR_ACCESS_READ_WRITE);
static_assert(static_cast<int>(formats::AccessSource::Default) == LR_ACCESS_SOURCE_DEFAULT);
static_assert(static_cast<int>(formats::AccessSource::Declared) == LR_ACCESS_SOURCE_DECLARED);
static_assert(static_cast<int>(formats::AccessSource::ActualAccess) == LR_ACCESS_SOURCE_ACTUAL_ACCESS);
static_assert(static_cast<int>(formats::AccessSource::Access) == LR_ACCESS_SOURCE_ACCESS);
static_assert(static_cast<int>(formats::AccessSource::Ttir) == LR_ACCESS_SOURCE_TTIR);

namespace {

thread_local std::string t_last_error;

template <typename F>
lr_status_t guard(const char* function, F&& body) noexcept {
  try {
    body();
    t_last_error.clear();
    return LR_SUCCESS;
  } catch (const Error& e) {
    t_last_error = std::string(function) + ": " + e.what();
    return e.status();
  } catch (const formats::FormatError& e) {
    // A code object that is not what it claims to be (lrrt_formats' readers).
    t_last_error = std::string(function) + ": " + e.what();
    return LR_ERROR_INVALID_IMAGE;
  } catch (const std::bad_alloc&) {
    t_last_error = std::string(function) + ": out of host memory";
    return LR_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    t_last_error = std::string(function) + ": " + e.what();
    return LR_ERROR_RUNTIME;
  } catch (...) {
    t_last_error = std::string(function) + ": unknown error";
    return LR_ERROR_RUNTIME;
  }
}

Runtime& rt() {
  Runtime* r = Runtime::instance();
  if (!r) LRRT_THROW(LR_ERROR_NOT_INITIALIZED, "lr_init has not been called");
  return *r;
}

template <typename T>
void require(const T* p, const char* what) {
  if (!p) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "{} is null", what);
}

void copy_string(char* dst, size_t capacity, const std::string& src) {
  if (capacity == 0) return;
  size_t n = std::min(capacity - 1, src.size());
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

std::vector<Event*> events_of(Runtime& r, lr_event_t* const* deps, size_t count,
                              DeviceState* device) {
  if (count && !deps) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "dependencies is null but dependency_count is {}", count);
  std::vector<Event*> out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    r.check_event(deps[i]);
    if (deps[i]->device != device)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "dependency {} belongs to another device", i);
    if (deps[i]->recorded.load()) out.push_back(deps[i]->event.get());
  }
  return out;
}

lrrt::rt::LaunchConfig to_config(const lr_launch_config_t* c) {
  require(c, "config");
  auto dim = [](const lr_dim3_t& d, const char* what) {
    if (d.x == 0 || d.y == 0 || d.z == 0)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "{} has a zero dimension ({}, {}, {})", what, d.x, d.y, d.z);
    return lrrt::rt::Dim3{d.x, d.y, d.z};
  };
  return {dim(c->grid, "grid"), dim(c->block, "block"), c->shared_memory_bytes};
}

std::span<const std::byte> arg_bytes(const void* args, size_t size) {
  if (size && !args) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "args is null but args_size is {}", size);
  return {static_cast<const std::byte*>(args), size};
}

void launch(Runtime& r, lrrt::rt::Queue& queue, lrrt::rt::SubmitCount& submissions, DeviceState* queue_device,
            lr_kernel_t* kernel, const lr_launch_config_t* config, const void* args, size_t args_size,
            lr_event_t* const* deps, size_t dep_count) {
  r.check_kernel(kernel);
  if (kernel->module->device != queue_device)
    LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "kernel belongs to device {} but the queue to device {}",
               kernel->module->device->index, queue_device->index);
  auto cfg = to_config(config);
  auto events = events_of(r, deps, dep_count, queue_device);
  // Counted once submitted: a drain that started before cannot clear it.
  lrrt::rt::SubmitScope submitted(submissions);
  queue.launch(*kernel->kernel, cfg, arg_bytes(args, args_size), events, nullptr);
}

void check_copy_args(void* dst, const void* src, size_t size) {
  if (size == 0) return;
  if (!dst) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "dst is null");
  if (!src) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "src is null");
}

}  // namespace

extern "C" {

const char* lr_status_string(lr_status_t status) {
  switch (status) {
    case LR_SUCCESS: return "LR_SUCCESS";
    case LR_ERROR_INVALID_ARGUMENT: return "LR_ERROR_INVALID_ARGUMENT";
    case LR_ERROR_NOT_INITIALIZED: return "LR_ERROR_NOT_INITIALIZED";
    case LR_ERROR_ALREADY_INITIALIZED: return "LR_ERROR_ALREADY_INITIALIZED";
    case LR_ERROR_NOT_SUPPORTED: return "LR_ERROR_NOT_SUPPORTED";
    case LR_ERROR_RUNTIME: return "LR_ERROR_RUNTIME";
    case LR_ERROR_OUT_OF_MEMORY: return "LR_ERROR_OUT_OF_MEMORY";
    case LR_ERROR_INVALID_IMAGE: return "LR_ERROR_INVALID_IMAGE";
    case LR_ERROR_NOT_FOUND: return "LR_ERROR_NOT_FOUND";
    case LR_ERROR_KERNEL_FAULT: return "LR_ERROR_KERNEL_FAULT";
    case LR_ERROR_TIMEOUT: return "LR_ERROR_TIMEOUT";
    case LR_ERROR_UNAVAILABLE: return "LR_ERROR_UNAVAILABLE";
    case LR_ERROR_DEVICE_LOST: return "LR_ERROR_DEVICE_LOST";
    case LR_ERROR_BUSY: return "LR_ERROR_BUSY";
  }
  return "LR_ERROR_UNKNOWN_STATUS";
}

const char* lr_last_error_message(void) { return t_last_error.c_str(); }
const char* lr_version_string(void) { return LRRT_VERSION; }

lr_status_t lr_set_wait_timeout_ms(uint64_t milliseconds) {
  return guard("lr_set_wait_timeout_ms", [&] {
    // Beyond the limit the wait's nanoseconds would overflow (and wrap to a
    // timeout at once).
    if (milliseconds > uint64_t(lrrt::rt::kMaxWaitTimeoutMs))
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT,
                 "timeout of {} ms is longer than the limit of {} ms (about 31 years; 0 waits forever)", milliseconds,
                 lrrt::rt::kMaxWaitTimeoutMs);
    lrrt::rt::set_wait_timeout(std::chrono::milliseconds(static_cast<int64_t>(milliseconds)));
  });
}

lr_status_t lr_set_wait_spin_us(uint64_t microseconds) {
  return guard("lr_set_wait_spin_us", [&] {
    if (microseconds > uint64_t(lrrt::rt::kMaxWaitSpinUs))
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "spin of {} us is longer than the limit of {} us (one minute)",
                 microseconds, lrrt::rt::kMaxWaitSpinUs);
    lrrt::rt::set_wait_spin(std::chrono::microseconds(static_cast<int64_t>(microseconds)));
  });
}

lr_status_t lr_get_wait_timeout_ms(uint64_t* milliseconds) {
  return guard("lr_get_wait_timeout_ms", [&] {
    if (!milliseconds) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "milliseconds is NULL");
    *milliseconds = static_cast<uint64_t>(lrrt::rt::wait_timeout().count());
  });
}

lr_status_t lr_get_wait_spin_us(uint64_t* microseconds) {
  return guard("lr_get_wait_spin_us", [&] {
    if (!microseconds) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "microseconds is NULL");
    *microseconds = static_cast<uint64_t>(lrrt::rt::wait_spin().count());
  });
}

lr_status_t lr_check_environment(void) {
  return guard("lr_check_environment", [] { lrrt::rt::env::check_all(); });
}

lr_status_t lr_get_environment_u64(const char* name, uint64_t* value, int* is_set) {
  return guard("lr_get_environment_u64", [&] {
    if (!name || !value || !is_set) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "name, value or is_set is NULL");
    const lrrt::rt::env::Variable* v = lrrt::rt::env::find(name);
    if (!v || (v->kind != lrrt::rt::env::Kind::Count && v->kind != lrrt::rt::env::Kind::Size))
      LRRT_THROW(LR_ERROR_NOT_FOUND, "lrrt reads no number from an environment variable of that name");
    const auto n = lrrt::rt::env::number(*v);
    *is_set = n ? 1 : 0;
    *value = n.value_or(0);
  });
}

lr_status_t lr_init(void) {
  return guard("lr_init", [] { Runtime::initialize(); });
}

lr_status_t lr_shutdown(void) {
  return guard("lr_shutdown", [] { Runtime::shutdown(); });
}

lr_status_t lr_backend_count(uint32_t* count) {
  return guard("lr_backend_count", [&] {
    require(count, "count");
    *count = static_cast<uint32_t>(rt().backends().size());
  });
}

lr_status_t lr_backend_get_info(uint32_t index, lr_backend_info_t* info) {
  return guard("lr_backend_get_info", [&] {
    require(info, "info");
    auto& backends = rt().backends();
    if (index >= backends.size())
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "backend index {} out of range ({} backends)", index, backends.size());
    auto& b = *backends[index];
    *info = {};
    copy_string(info->name, sizeof(info->name), b.name);
    info->usable = b.status.usable ? 1 : 0;
    info->device_count = b.device_count;
    copy_string(info->message, sizeof(info->message), b.status.message);
  });
}

lr_status_t lr_device_count(uint32_t* count) {
  return guard("lr_device_count", [&] {
    require(count, "count");
    *count = rt().device_count();
  });
}

lr_status_t lr_device_open(uint32_t index, lr_device_t* device) {
  return guard("lr_device_open", [&] {
    require(device, "device");
    Runtime& r = rt();
    r.opened(r.device_index(index));
    device->index = index;
  });
}

lr_status_t lr_device_select(const char* backend, uint32_t ordinal, lr_device_t* device) {
  return guard("lr_device_select", [&] {
    require(device, "device");
    Runtime& r = rt();
    uint32_t index = r.select(backend ? backend : "auto", ordinal);
    r.opened(r.device_index(index));
    device->index = index;
  });
}

lr_status_t lr_device_name(lr_device_t device, char* name, size_t name_size) {
  return guard("lr_device_name", [&] {
    require(name, "name");
    if (name_size == 0) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "name_size is zero");
    Runtime& r = rt();
    const std::string& n = r.opened(r.device(device)).properties().name;
    if (n.size() + 1 > name_size) {
      name[0] = '\0';
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "name needs {} bytes, buffer has {}", n.size() + 1, name_size);
    }
    copy_string(name, name_size, n);
  });
}

lr_status_t lr_device_get_properties(lr_device_t device, lr_device_properties_t* props) {
  return guard("lr_device_get_properties", [&] {
    require(props, "props");
    Runtime& r = rt();
    DeviceState& state = r.device(device);
    const auto& p = r.opened(state).properties();
    *props = {};
    copy_string(props->backend, sizeof(props->backend), p.backend);
    copy_string(props->name, sizeof(props->name), p.name);
    copy_string(props->arch, sizeof(props->arch), p.arch);
    props->backend_ordinal = state.ordinal;
    props->compute_units = p.compute_units;
    props->wave_size = p.wave_size;
    props->max_workgroup_size = p.max_workgroup_size;
    props->max_workgroup_dims = {p.max_workgroup_dims.x, p.max_workgroup_dims.y, p.max_workgroup_dims.z};
    props->max_shared_memory_per_workgroup = p.max_shared_memory_per_workgroup;
    props->memory_bytes = p.memory_bytes;
  });
}

lr_status_t lr_device_detail_count(lr_device_t device, uint32_t* count) {
  return guard("lr_device_detail_count", [&] {
    require(count, "count");
    Runtime& r = rt();
    *count = static_cast<uint32_t>(r.opened(r.device(device)).properties().extra.size());
  });
}

lr_status_t lr_device_get_detail(lr_device_t device, uint32_t index, char* key, size_t key_size, char* value,
                                 size_t value_size) {
  return guard("lr_device_get_detail", [&] {
    require(key, "key");
    require(value, "value");
    Runtime& r = rt();
    const auto& extra = r.opened(r.device(device)).properties().extra;
    if (index >= extra.size())
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "detail index {} out of range ({} details)", index, extra.size());
    const auto& [k, v] = extra[index];
    if (k.size() + 1 > key_size || v.size() + 1 > value_size)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "detail '{}' needs {} and {} bytes", k, k.size() + 1, v.size() + 1);
    copy_string(key, key_size, k);
    copy_string(value, value_size, v);
  });
}

lr_status_t lr_device_get_memory_info(lr_device_t device, lr_device_memory_info_t* info) {
  return guard("lr_device_get_memory_info", [&] {
    require(info, "info");
    Runtime& r = rt();
    const auto m = r.opened(r.device(device)).memory_info();
    *info = lr_device_memory_info_t{};
    info->last_level_cache_bytes = m.last_level_cache_bytes;
    info->peak_bandwidth_bytes_per_second = m.peak_bandwidth;
    info->peak_bandwidth_source = m.peak_source;
    copy_string(info->last_level_cache_method, sizeof(info->last_level_cache_method), m.last_level_cache_method);
    copy_string(info->peak_bandwidth_method, sizeof(info->peak_bandwidth_method), m.peak_method);
  });
}

lr_status_t lr_queue_create(lr_device_t device, lr_queue_t** queue) {
  return guard("lr_queue_create", [&] {
    require(queue, "queue");
    Runtime& r = rt();
    *queue = r.create_queue(r.device(device));
  });
}

lr_status_t lr_queue_destroy(lr_queue_t* queue) {
  return guard("lr_queue_destroy", [&] { rt().destroy_queue(queue); });
}

lr_status_t lr_queue_synchronize(lr_queue_t* queue) {
  return guard("lr_queue_synchronize", [&] {
    Runtime& r = rt();
    r.check_queue(queue);
    r.synchronize_tracked(*queue->device, *queue->queue, queue->submissions);
  });
}

lr_status_t lr_event_create(lr_device_t device, lr_event_t** event) {
  return guard("lr_event_create", [&] {
    require(event, "event");
    Runtime& r = rt();
    *event = r.create_event(r.device(device));
  });
}

lr_status_t lr_event_destroy(lr_event_t* event) {
  return guard("lr_event_destroy", [&] { rt().destroy_event(event); });
}

lr_status_t lr_event_record(lr_event_t* event) {
  return guard("lr_event_record", [&] {
    rt().check_event(event);
    {
      lrrt::rt::SubmitScope submitted(event->device->default_queue_submissions);
      event->device->default_queue->record(*event->event);
    }
    event->recorded.store(true);
  });
}

lr_status_t lr_event_record_on_queue(lr_event_t* event, lr_queue_t* queue) {
  return guard("lr_event_record_on_queue", [&] {
    Runtime& r = rt();
    r.check_event(event);
    r.check_queue(queue);
    if (event->device != queue->device)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "event and queue belong to different devices");
    {
      lrrt::rt::SubmitScope submitted(queue->submissions);
      queue->queue->record(*event->event);
    }
    event->recorded.store(true);
  });
}

lr_status_t lr_event_synchronize(lr_event_t* event) {
  return guard("lr_event_synchronize", [&] {
    rt().check_event(event);
    if (event->recorded.load()) event->event->synchronize();
  });
}

lr_status_t lr_event_elapsed_time_ns(const lr_event_t* start, const lr_event_t* end, uint64_t* elapsed_ns) {
  return guard("lr_event_elapsed_time_ns", [&] {
    require(elapsed_ns, "elapsed_ns");
    Runtime& r = rt();
    r.check_event(start);
    r.check_event(end);
    if (!start->recorded.load() || !end->recorded.load())
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "both events must be recorded before timing them");
    if (start->device != end->device)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "events belong to different devices");
    *elapsed_ns = end->event->elapsed_ns_since(*start->event);
  });
}

lr_status_t lr_event_duration_ns(const lr_event_t* event, uint64_t* duration_ns) {
  return guard("lr_event_duration_ns", [&] {
    require(duration_ns, "duration_ns");
    rt().check_event(event);
    if (!event->recorded.load())
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "event has not signalled any operation");
    try {
      *duration_ns = event->event->duration_ns();
    } catch (const std::logic_error& e) {
      LRRT_THROW(LR_ERROR_NOT_SUPPORTED, "this backend cannot time single operations: {}", e.what());
    }
  });
}

lr_status_t lr_malloc(lr_device_t device, size_t size, void** ptr) {
  return guard("lr_malloc", [&] {
    require(ptr, "ptr");
    *ptr = nullptr;
    Runtime& r = rt();
    *ptr = r.allocate(r.device(device), size, false);
  });
}

lr_status_t lr_free(lr_device_t device, void* ptr) {
  return guard("lr_free", [&] {
    Runtime& r = rt();
    r.free(r.device(device), ptr, false);
  });
}

lr_status_t lr_host_malloc(lr_device_t device, size_t size, void** ptr) {
  return guard("lr_host_malloc", [&] {
    require(ptr, "ptr");
    *ptr = nullptr;
    Runtime& r = rt();
    *ptr = r.allocate(r.device(device), size, true);
  });
}

lr_status_t lr_host_free(lr_device_t device, void* ptr) {
  return guard("lr_host_free", [&] {
    Runtime& r = rt();
    r.free(r.device(device), ptr, true);
  });
}

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
  return guard("lr_memcpy_async", [&] {
    Runtime& r = rt();
    DeviceState& state = r.device(device);
    CopyKind k = lrrt::rt::to_copy_kind(kind);
    check_copy_args(dst, src, size);
    if (event) {
      r.check_event(event);
      if (event->device != &state) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "event belongs to another device");
    }
    r.opened(state);
    // The default queue is in order: the copy follows earlier dispatches and
    // later lr_launch calls follow the copy, all on the device side.
    {
      lrrt::rt::SubmitScope submitted(state.default_queue_submissions);
      state.default_queue->copy(dst, src, size, k, {}, event ? event->event.get() : nullptr);
    }
    if (event) event->recorded.store(true);
    r.record_copy(state, k, size);
  });
}

lr_status_t lr_memcpy_async_with_dependencies(lr_device_t device, void* dst, const void* src, size_t size,
                                              lr_memcpy_kind_t kind, lr_event_t* event,
                                              lr_event_t* const* dependencies, size_t dependency_count) {
  return guard("lr_memcpy_async_with_dependencies", [&] {
    Runtime& r = rt();
    DeviceState& state = r.device(device);
    CopyKind k = lrrt::rt::to_copy_kind(kind);
    check_copy_args(dst, src, size);
    if (event) {
      r.check_event(event);
      if (event->device != &state) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "event belongs to another device");
    }
    r.opened(state);
    auto deps = events_of(r, dependencies, dependency_count, &state);
    // The copy queue is separate from the default queue: no implicit
    // dependency on earlier dispatches, only the listed events.
    {
      lrrt::rt::SubmitScope submitted(state.copy_queue_submissions);
      state.copy_queue->copy(dst, src, size, k, deps, event ? event->event.get() : nullptr);
    }
    if (event) event->recorded.store(true);
    r.record_copy(state, k, size);
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

lr_status_t lr_module_load(lr_device_t device, const void* image, size_t image_size, lr_module_t** module) {
  return guard("lr_module_load", [&] {
    require(module, "module");
    *module = nullptr;
    if (!image && image_size) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "image is null");
    Runtime& r = rt();
    *module = r.load_module(r.device(device), {static_cast<const std::byte*>(image), image_size});
  });
}

lr_status_t lr_module_load_hsaco(lr_device_t device, const void* image, size_t image_size, lr_module_t** module) {
  return lr_module_load(device, image, image_size, module);
}

lr_status_t lr_module_destroy(lr_module_t* module) {
  return guard("lr_module_destroy", [&] { rt().destroy_module(module); });
}

lr_status_t lr_module_kernel_count(lr_module_t* module, uint32_t* count) {
  return guard("lr_module_kernel_count", [&] {
    require(count, "count");
    rt().check_module(module);
    *count = static_cast<uint32_t>(module->module->kernel_names().size());
  });
}

lr_status_t lr_module_kernel_name(lr_module_t* module, uint32_t index, char* name, size_t name_size) {
  return guard("lr_module_kernel_name", [&] {
    require(name, "name");
    rt().check_module(module);
    auto names = module->module->kernel_names();
    if (index >= names.size())
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "kernel index {} out of range ({} kernels)", index, names.size());
    if (names[index].size() + 1 > name_size)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "name needs {} bytes", names[index].size() + 1);
    copy_string(name, name_size, names[index]);
  });
}

lr_status_t lr_module_source(lr_module_t* module, char* text, size_t* size) {
  return guard("lr_module_source", [&] {
    require(size, "size");
    rt().check_module(module);
    const std::string& source = module->module->source();
    const size_t capacity = *size;
    *size = source.size() + 1;
    require(text, "text");
    if (source.size() + 1 > capacity)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "the source needs {} bytes, the buffer has {}", source.size() + 1, capacity);
    copy_string(text, capacity, source);
  });
}

namespace {
void copy_out_text(const std::string& text, char* out, size_t* size) {
  const size_t capacity = *size;
  *size = text.size() + 1;
  require(out, "json");
  if (text.size() + 1 > capacity)
    LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "the description needs {} bytes, the buffer has {}", text.size() + 1, capacity);
  copy_string(out, capacity, text);
}
}  // namespace

lr_status_t lr_triton_describe(const char* path, char* json, size_t* size) {
  return guard("lr_triton_describe", [&] {
    require(size, "size");
    require(path, "path");
    copy_out_text(formats::triton_entry_json(formats::read_triton_entry(path)), json, size);
  });
}

lr_status_t lr_triton_describe_texts(const char* metadata_json, const char* ir_text, char* json, size_t* size) {
  return guard("lr_triton_describe_texts", [&] {
    require(size, "size");
    require(metadata_json, "metadata_json");
    require(ir_text, "ir_text");
    copy_out_text(formats::triton_entry_json(formats::parse_triton_entry(metadata_json, ir_text, "(in-memory metadata)")),
                  json, size);
  });
}

lr_status_t lr_kernel_get(lr_module_t* module, const char* name, lr_kernel_t** kernel) {
  return guard("lr_kernel_get", [&] {
    require(kernel, "kernel");
    require(name, "name");
    *kernel = rt().kernel(module, name);
  });
}

lr_status_t lr_kernel_get_properties(lr_kernel_t* kernel, lr_kernel_properties_t* props) {
  return guard("lr_kernel_get_properties", [&] {
    require(props, "props");
    rt().check_kernel(kernel);
    const auto& info = kernel->kernel->info();
    *props = {};
    copy_string(props->name, sizeof(props->name), info.name);
    props->has_arg_layout = info.has_arg_layout ? 1 : 0;
    props->arg_count = static_cast<uint32_t>(info.args.size());
    props->explicit_arg_count = info.explicit_arg_count();
    props->kernarg_size = info.kernarg_size;
    props->explicit_kernarg_size = info.explicit_kernarg_size();
    props->kernarg_align = info.kernarg_align;
    props->group_segment_size = info.group_segment_size;
    props->private_segment_size = info.private_segment_size;
    props->max_workgroup_size = info.max_workgroup_size;
  });
}

lr_status_t lr_kernel_set_flags(lr_kernel_t* kernel, uint32_t flags) {
  return guard("lr_kernel_set_flags", [&] {
    rt().check_kernel(kernel);
    if (flags & ~uint32_t(LR_KERNEL_WAITS_FOR_PRODUCER))
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "unknown kernel flags {:#x}", flags & ~uint32_t(LR_KERNEL_WAITS_FOR_PRODUCER));
    kernel->kernel->flags.store(flags, std::memory_order_relaxed);
  });
}

lr_status_t lr_kernel_get_flags(lr_kernel_t* kernel, uint32_t* flags) {
  return guard("lr_kernel_get_flags", [&] {
    require(flags, "flags");
    rt().check_kernel(kernel);
    *flags = kernel->kernel->flags.load(std::memory_order_relaxed);
  });
}

lr_status_t lr_kernel_get_arg(lr_kernel_t* kernel, uint32_t index, lr_kernel_arg_t* arg) {
  return guard("lr_kernel_get_arg", [&] {
    require(arg, "arg");
    rt().check_kernel(kernel);
    const auto& args = kernel->kernel->info().args;
    if (index >= args.size())
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "argument index {} out of range ({} arguments)", index, args.size());
    const auto& a = args[index];
    *arg = {};
    arg->offset = a.offset;
    arg->size = a.size;
    arg->kind = static_cast<lr_arg_kind_t>(a.kind);  // same values (checked below)
    copy_string(arg->value_kind, sizeof(arg->value_kind), a.value_kind);
    copy_string(arg->name, sizeof(arg->name), a.name);
    copy_string(arg->type_name, sizeof(arg->type_name), a.type_name);
  });
}

lr_status_t lr_kernel_get_arg_access(lr_kernel_t* kernel, uint32_t index, lr_access_mode_t* mode,
                                     lr_access_source_t* source) {
  return guard("lr_kernel_get_arg_access", [&] {
    require(mode, "mode");
    require(source, "source");
    rt().check_kernel(kernel);
    const auto& args = kernel->kernel->info().args;
    if (index >= args.size())
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "argument index {} out of range ({} arguments)", index, args.size());
    const auto& a = args[index];
    const formats::DerivedAccess d =
        a.kind == formats::ArgKind::Hidden ? formats::DerivedAccess{} : kernel->kernel->arg_access(a.offset);
    *mode = static_cast<lr_access_mode_t>(d.mode);        // same values (checked below)
    *source = static_cast<lr_access_source_t>(d.source);  // same values (checked below)
  });
}

lr_status_t lr_kernel_set_triton_ir(lr_kernel_t* kernel, const char* ir_text) {
  return guard("lr_kernel_set_triton_ir", [&] {
    require(ir_text, "ir_text");
    rt().check_kernel(kernel);
    const auto& info = kernel->kernel->info();
    const std::string where = fmt::format("the Triton IR given for kernel '{}'", info.name);
    const auto params = formats::parse_triton_signature(ir_text, info.name, where);
    const formats::TritonAccess access = formats::analyze_triton_access(ir_text, info.name);
    // Triton's launcher packs the parameters with natural alignment (the
    // manifest layer does the same); a layout the code object records must
    // hold an 8-byte argument where each pointer lands.
    std::vector<lrrt::rt::ArgAccessTable::Entry> entries;
    uint32_t cursor = 0;
    for (size_t i = 0; i < params.size(); ++i) {
      const uint32_t size = params[i].size();
      cursor = (cursor + size - 1) / size * size;
      if (params[i].pointer) {
        if (info.has_arg_layout) {
          bool found = false;
          for (const auto& a : info.args) found |= a.kind != formats::ArgKind::Hidden && a.offset == cursor && a.size == 8;
          if (!found)
            LRRT_THROW(LR_ERROR_INVALID_ARGUMENT,
                       "{}: pointer parameter {} ('{}') lands at argument offset {}, where kernel '{}' "
                       "has no 8-byte argument: the IR is not this kernel's",
                       where, i, params[i].name, cursor, info.name);
        }
        formats::DerivedAccess d;
        if (access.analysed && i < access.params.size()) d = {access.params[i].mode(), formats::AccessSource::Ttir};
        entries.emplace_back(cursor, d);
      }
      cursor += size;
    }
    kernel->kernel->triton_access.set(std::move(entries));
  });
}

lr_status_t lr_launch(lr_kernel_t* kernel, const lr_launch_config_t* config, const void* args, size_t args_size) {
  return guard("lr_launch", [&] {
    Runtime& r = rt();
    r.check_kernel(kernel);
    DeviceState* d = kernel->module->device;
    launch(r, *d->default_queue, d->default_queue_submissions, d, kernel, config, args, args_size, nullptr, 0);
  });
}

lr_status_t lr_launch_with_dependencies(lr_kernel_t* kernel, const lr_launch_config_t* config, const void* args,
                                        size_t args_size, lr_event_t* const* dependencies,
                                        size_t dependency_count) {
  return guard("lr_launch_with_dependencies", [&] {
    Runtime& r = rt();
    r.check_kernel(kernel);
    DeviceState* d = kernel->module->device;
    launch(r, *d->default_queue, d->default_queue_submissions, d, kernel, config, args, args_size, dependencies, dependency_count);
  });
}

lr_status_t lr_launch_on_queue(lr_queue_t* queue, lr_kernel_t* kernel, const lr_launch_config_t* config,
                               const void* args, size_t args_size) {
  return guard("lr_launch_on_queue", [&] {
    Runtime& r = rt();
    r.check_queue(queue);
    launch(r, *queue->queue, queue->submissions, queue->device, kernel, config, args, args_size, nullptr, 0);
  });
}

lr_status_t lr_launch_on_queue_with_dependencies(lr_queue_t* queue, lr_kernel_t* kernel,
                                                 const lr_launch_config_t* config, const void* args,
                                                 size_t args_size, lr_event_t* const* dependencies,
                                                 size_t dependency_count) {
  return guard("lr_launch_on_queue_with_dependencies", [&] {
    Runtime& r = rt();
    r.check_queue(queue);
    launch(r, *queue->queue, queue->submissions, queue->device, kernel, config, args, args_size, dependencies, dependency_count);
  });
}

lr_status_t lr_synchronize(lr_device_t device) {
  return guard("lr_synchronize", [&] {
    Runtime& r = rt();
    r.drain(r.device(device));
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

// ---- Retained replay -------------------------------------------------------

lr_status_t lr_graph_create(lr_device_t device, lr_graph_t** graph) {
  return guard("lr_graph_create", [&] {
    require(graph, "graph");
    *graph = nullptr;
    Runtime& r = rt();
    *graph = r.create_graph(r.device(device));
  });
}

lr_status_t lr_graph_destroy(lr_graph_t* graph) {
  return guard("lr_graph_destroy", [&] { rt().destroy_graph(graph); });
}

lr_status_t lr_graph_add_kernel(lr_graph_t* graph, lr_kernel_t* kernel, const lr_launch_config_t* config,
                                const void* args, size_t args_size, const lr_graph_access_t* accesses,
                                size_t access_count, lr_graph_node_t* node) {
  return lr_graph_add_kernel_ex(graph, kernel, config, args, args_size, accesses, access_count, 0, node);
}

lr_status_t lr_graph_add_kernel_ex(lr_graph_t* graph, lr_kernel_t* kernel, const lr_launch_config_t* config,
                                   const void* args, size_t args_size, const lr_graph_access_t* accesses,
                                   size_t access_count, uint32_t flags, lr_graph_node_t* node) {
  return guard("lr_graph_add_kernel", [&] {
    if (flags & ~uint32_t(LR_GRAPH_KERNEL_DERIVE_ACCESS))
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "unknown graph kernel flags {:#x} (LR_GRAPH_KERNEL_DERIVE_ACCESS is {:#x})",
                 flags, uint32_t(LR_GRAPH_KERNEL_DERIVE_ACCESS));
    Runtime& r = rt();
    r.check_graph(graph);
    r.check_kernel(kernel);
    if (kernel->module->device != graph->device)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "kernel belongs to device {} but the graph to device {}",
                 kernel->module->device->index, graph->device->index);
    auto cfg = to_config(config);
    if (access_count && !accesses)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "accesses is null but access_count is {}", access_count);
    std::vector<lrrt::rt::graph::DeclaredAccess> declared(access_count);
    for (size_t i = 0; i < access_count; ++i)
      declared[i] = {reinterpret_cast<uintptr_t>(accesses[i].pointer), accesses[i].offset, accesses[i].bytes,
                     static_cast<lrrt::rt::graph::AccessMode>(accesses[i].mode), true};
    std::lock_guard lock(graph->mutex);
    uint32_t id = graph->graph.add_kernel(*kernel->kernel, cfg, arg_bytes(args, args_size), declared,
                                          (flags & LR_GRAPH_KERNEL_DERIVE_ACCESS) != 0);
    bool known = false;
    for (const auto& use : graph->modules) known |= use.module() == kernel->module;
    if (!known) graph->modules.emplace_back(kernel->module);
    if (node) *node = id;
  });
}

lr_status_t lr_graph_add_copy(lr_graph_t* graph, void* dst, const void* src, size_t size, lr_memcpy_kind_t kind,
                              lr_graph_node_t* node) {
  return guard("lr_graph_add_copy", [&] {
    rt().check_graph(graph);
    CopyKind k = lrrt::rt::to_copy_kind(kind);
    std::lock_guard lock(graph->mutex);
    uint32_t id = graph->graph.add_copy(dst, src, size, k);
    if (node) *node = id;
  });
}

lr_status_t lr_graph_add_fill(lr_graph_t* graph, void* dst, size_t size, const void* pattern, size_t pattern_size,
                              lr_graph_node_t* node) {
  return guard("lr_graph_add_fill", [&] {
    rt().check_graph(graph);
    require(pattern, "pattern");
    std::lock_guard lock(graph->mutex);
    uint32_t id = graph->graph.add_fill(dst, size, {static_cast<const std::byte*>(pattern), pattern_size});
    if (node) *node = id;
  });
}

lr_status_t lr_graph_add_dependency(lr_graph_t* graph, lr_graph_node_t from, lr_graph_node_t to) {
  return guard("lr_graph_add_dependency", [&] {
    rt().check_graph(graph);
    std::lock_guard lock(graph->mutex);
    graph->graph.add_dependency(from, to);
  });
}

lr_status_t lr_graph_instantiate(lr_graph_t* graph, const lr_graph_instantiate_options_t* options,
                                 lr_graph_exec_t** exec) {
  return guard("lr_graph_instantiate", [&] {
    require(exec, "exec");
    *exec = nullptr;
    *exec = rt().instantiate_graph(graph, options);
  });
}

lr_status_t lr_graph_exec_destroy(lr_graph_exec_t* exec) {
  return guard("lr_graph_exec_destroy", [&] { rt().destroy_graph_exec(exec); });
}

lr_status_t lr_graph_exec_launch(lr_graph_exec_t* exec, lr_queue_t* queue) {
  return guard("lr_graph_exec_launch", [&] { rt().launch_graph(exec, queue, nullptr); });
}

lr_status_t lr_graph_exec_launch_with_event(lr_graph_exec_t* exec, lr_queue_t* queue, lr_event_t* completion) {
  return guard("lr_graph_exec_launch_with_event", [&] { rt().launch_graph(exec, queue, completion); });
}

lr_status_t lr_graph_exec_synchronize(lr_graph_exec_t* exec) {
  return guard("lr_graph_exec_synchronize", [&] {
    rt().check_graph_exec(exec);
    std::lock_guard lock(exec->mutex);
    exec->exec->synchronize();
  });
}

lr_status_t lr_graph_exec_query(lr_graph_exec_t* exec, uint32_t* complete) {
  return guard("lr_graph_exec_query", [&] {
    require(complete, "complete");
    rt().check_graph_exec(exec);
    std::lock_guard lock(exec->mutex);
    *complete = exec->exec->running() ? 0 : 1;
  });
}

lr_status_t lr_graph_exec_set_kernargs(lr_graph_exec_t* exec, lr_graph_node_t node, size_t offset, const void* bytes,
                                       size_t size) {
  return guard("lr_graph_exec_set_kernargs", [&] {
    if (size && !bytes) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "bytes is null but size is {}", size);
    rt().set_graph_kernargs(exec, node, offset, {static_cast<const std::byte*>(bytes), size});
  });
}

lr_status_t lr_graph_exec_set_max_in_flight(lr_graph_exec_t* exec, uint32_t count) {
  return guard("lr_graph_exec_set_max_in_flight", [&] { rt().set_graph_max_in_flight(exec, count); });
}

lr_status_t lr_graph_exec_get_stats(lr_graph_exec_t* exec, lr_graph_exec_stats_t* stats) {
  return guard("lr_graph_exec_get_stats", [&] {
    require(stats, "stats");
    *stats = rt().graph_stats(exec);
  });
}

lr_status_t lr_graph_exec_get_plan(lr_graph_exec_t* exec, char* json, size_t capacity, size_t* length) {
  return guard("lr_graph_exec_get_plan", [&] {
    require(length, "length");
    if (capacity && !json) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "json is null but capacity is {}", capacity);
    const std::string plan = rt().graph_plan(exec);
    *length = plan.size();
    if (capacity == 0) return;
    if (plan.size() + 1 > capacity) {
      json[0] = '\0';
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "the plan needs {} bytes, the buffer has {}", plan.size() + 1, capacity);
    }
    copy_string(json, capacity, plan);
  });
}

}  // extern "C"

lr_status_t lr_tensor_map_encode(lr_device_t device, const lr_tensor_map_desc_t* desc, void* out128) {
  return guard("lr_tensor_map_encode", [&] {
    require(desc, "desc");
    require(out128, "out128");
    // The rules first, on every backend: a malformed descriptor is the
    // caller's to fix wherever it is encoded.
    lrrt::rt::validate_tensor_map(*desc);
    Runtime& r = rt();
    // Aligned as cuda.h declares CUtensorMap (128; the driver needs 64).
    alignas(128) std::byte bytes[LR_TENSOR_MAP_BYTES] = {};
    r.opened(r.device(device)).encode_tensor_map(*desc, bytes);
    std::memcpy(out128, bytes, sizeof(bytes));
  });
}

lr_status_t lr_tensor_map_validate(const lr_tensor_map_desc_t* desc) {
  return guard("lr_tensor_map_validate", [&] {
    require(desc, "desc");
    lrrt::rt::validate_tensor_map(*desc);
  });
}

// The C ABI: thin wrappers that validate arguments, call the runtime and map
// every C++ error to a status code in one place (guard()), keeping the
// message for lr_last_error_message() on the calling thread.
//
// This file holds the shared helpers (c_api_support.hpp) and the first
// sections of lrrt.h: status codes and messages, the version, wait settings,
// the environment, init/shutdown, backends and devices. The other sections
// are in c_api_<concern>.cpp beside it.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>

#include "c_api_support.hpp"
#include "env.hpp"
#include "wait.hpp"

namespace lrrt::c_api {

thread_local std::string t_last_error;

Runtime& rt() {
  Runtime* r = Runtime::instance();
  if (!r) LRRT_THROW(LR_ERROR_NOT_INITIALIZED, "lr_init has not been called");
  return *r;
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

}  // namespace lrrt::c_api

using namespace lrrt::c_api;

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

lr_status_t lr_synchronize(lr_device_t device) {
  return guard("lr_synchronize", [&] {
    Runtime& r = rt();
    r.drain(r.device(device));
  });
}

}  // extern "C"

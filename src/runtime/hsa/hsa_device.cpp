#include "hsa_device.hpp"

#include <cstring>

#include "hsa_event.hpp"
#include "hsa_executable.hpp"
#include "hsa_graph.hpp"
#include "hsa_queue.hpp"

namespace lrrt::rt::hsa {
namespace {

struct PoolSearch {
  const HsaSymbols* api;
  hsa_amd_memory_pool_t device{0}, fine{0}, kernarg{0}, group{0};
};

hsa_status_t find_pool(hsa_amd_memory_pool_t pool, void* data) {
  auto* s = static_cast<PoolSearch*>(data);
  const HsaSymbols& api = *s->api;
  hsa_amd_segment_t segment;
  if (api.hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &segment) !=
      HSA_STATUS_SUCCESS)
    return HSA_STATUS_SUCCESS;
  if (segment == HSA_AMD_SEGMENT_GROUP) {
    if (!s->group.handle) s->group = pool;
    return HSA_STATUS_SUCCESS;
  }
  if (segment != HSA_AMD_SEGMENT_GLOBAL) return HSA_STATUS_SUCCESS;
  bool alloc = false;
  api.hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED, &alloc);
  if (!alloc) return HSA_STATUS_SUCCESS;
  uint32_t flags = 0;
  api.hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
  if ((flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT) && !s->kernarg.handle)
    s->kernarg = pool;
  if ((flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED) && !s->device.handle)
    s->device = pool;
  if ((flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED) && !s->fine.handle) s->fine = pool;
  return HSA_STATUS_SUCCESS;
}

hsa_status_t collect_isa(hsa_isa_t isa, void* data) {
  auto* self = static_cast<std::pair<const HsaSymbols*, std::vector<std::string>*>*>(data);
  uint32_t len = 0;
  if (self->first->hsa_isa_get_info_alt(isa, HSA_ISA_INFO_NAME_LENGTH, &len) != HSA_STATUS_SUCCESS)
    return HSA_STATUS_SUCCESS;
  std::string name(len + 1, '\0');
  if (self->first->hsa_isa_get_info_alt(isa, HSA_ISA_INFO_NAME, name.data()) == HSA_STATUS_SUCCESS) {
    name.resize(std::strlen(name.c_str()));
    self->second->push_back(name);
  }
  return HSA_STATUS_SUCCESS;
}

uint64_t pool_size(const HsaSymbols& api, hsa_amd_memory_pool_t pool) {
  size_t size = 0;
  if (pool.handle) api.hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_SIZE, &size);
  return size;
}

}  // namespace

Context::~Context() {
  if (initialized && api.hsa_shut_down) api.hsa_shut_down();
  // The library stays loaded: ROCr's own threads may still be unwinding.
}

Signal::~Signal() { device->release_signal(handle); }

HsaDevice::HsaDevice(std::shared_ptr<Context> ctx, hsa_agent_t agent, uint32_t ordinal)
    : ctx_(std::move(ctx)), agent_(agent) {
  const HsaSymbols& api = ctx_->api;
  char name[64] = {};
  char product[64] = {};
  api.hsa_agent_get_info(agent, HSA_AGENT_INFO_NAME, name);
  api.hsa_agent_get_info(agent, static_cast<hsa_agent_info_t>(HSA_AMD_AGENT_INFO_PRODUCT_NAME),
                         product);
  props_.backend = "hsa";
  props_.arch = name;
  props_.name = product[0] ? product : name;
  std::pair<const HsaSymbols*, std::vector<std::string>*> isa_search{&api, &props_.isas};
  api.hsa_agent_iterate_isas(agent, collect_isa, &isa_search);
  target_ = amdgpu::parse_target_id(props_.isas.empty() ? props_.arch : props_.isas.front());

  uint32_t cus = 0, wave = 0, wg_max = 0, queue_max = 0, clock = 0, chip = 0;
  uint16_t dims[3] = {0, 0, 0};
  api.hsa_agent_get_info(agent, static_cast<hsa_agent_info_t>(HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT),
                         &cus);
  api.hsa_agent_get_info(agent, HSA_AGENT_INFO_WAVEFRONT_SIZE, &wave);
  api.hsa_agent_get_info(agent, HSA_AGENT_INFO_WORKGROUP_MAX_SIZE, &wg_max);
  api.hsa_agent_get_info(agent, HSA_AGENT_INFO_WORKGROUP_MAX_DIM, dims);
  api.hsa_agent_get_info(agent, HSA_AGENT_INFO_QUEUE_MAX_SIZE, &queue_max);
  api.hsa_agent_get_info(agent,
                         static_cast<hsa_agent_info_t>(HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY), &clock);
  api.hsa_agent_get_info(agent, static_cast<hsa_agent_info_t>(HSA_AMD_AGENT_INFO_CHIP_ID), &chip);
  props_.compute_units = cus;
  props_.wave_size = wave ? wave : 64;
  props_.max_workgroup_size = wg_max ? wg_max : 1024;
  props_.max_workgroup_dims = {dims[0] ? dims[0] : 1024u, dims[1] ? dims[1] : 1024u,
                               dims[2] ? dims[2] : 1024u};
  if (queue_max) queue_size_ = std::min<uint32_t>(queue_max, 4096);
  (void)ordinal;

  PoolSearch dev{&api};
  api.hsa_amd_agent_iterate_memory_pools(agent, find_pool, &dev);
  PoolSearch sys{&api};
  api.hsa_amd_agent_iterate_memory_pools(ctx_->cpu_agent, find_pool, &sys);
  device_pool_ = dev.device;
  host_pool_ = sys.fine;
  kernarg_pool_ = sys.kernarg.handle ? sys.kernarg : sys.fine;
  if (!device_pool_.handle)
    LRRT_THROW(LR_ERROR_UNAVAILABLE, "hsa agent {} has no coarse-grained memory pool", props_.arch);
  if (!host_pool_.handle || !kernarg_pool_.handle)
    LRRT_THROW(LR_ERROR_UNAVAILABLE, "the hsa CPU agent has no fine-grained or kernarg memory pool");
  props_.memory_bytes = pool_size(api, device_pool_);
  props_.max_shared_memory_per_workgroup = dev.group.handle ? pool_size(api, dev.group) : 65536;

  // Peak bandwidth and L2 for sweeps (lr_device_get_memory_info); a
  // library that does not know an attribute leaves them unknown.
  {
    uint32_t width = 0, mhz = 0, caches[4] = {0, 0, 0, 0};
    const bool w = api.hsa_agent_get_info(agent, static_cast<hsa_agent_info_t>(HSA_AMD_AGENT_INFO_MEMORY_WIDTH), &width) ==
                   HSA_STATUS_SUCCESS;
    const bool f = api.hsa_agent_get_info(agent, static_cast<hsa_agent_info_t>(HSA_AMD_AGENT_INFO_MEMORY_MAX_FREQUENCY),
                                          &mhz) == HSA_STATUS_SUCCESS;
    if (w && f && width && mhz) {
      // The agent reports the memory clock; DDR moves data on both edges.
      memory_info_.peak_bandwidth = double(mhz) * 1e6 * double(width) / 8.0 * 2.0;
      memory_info_.peak_source = LR_PEAK_BANDWIDTH_REPORTED;
      memory_info_.peak_method = fmt::format("memory clock {} MHz x {}-bit bus x 2 (HSA_AMD_AGENT_INFO_MEMORY_MAX_FREQUENCY, _WIDTH)", mhz, width);
    }
    if (api.hsa_agent_get_info(agent, HSA_AGENT_INFO_CACHE_SIZE, caches) == HSA_STATUS_SUCCESS)
      for (int level = 3; level >= 0; --level)
        if (caches[level]) {
          memory_info_.last_level_cache_bytes = caches[level];
          memory_info_.last_level_cache_method = fmt::format("HSA_AGENT_INFO_CACHE_SIZE (L{})", level + 1);
          break;
        }
  }

  std::string xnack = target_.xnack == '+' ? "on" : target_.xnack == '-' ? "off" : "any";
  std::string isas;
  for (const auto& i : props_.isas) isas += (isas.empty() ? "" : ", ") + i;
  props_.extra = {{"agent", name},
                  {"isa", isas},
                  {"xnack", xnack},
                  {"queue max size", std::to_string(queue_max)},
                  {"max clock MHz", std::to_string(clock)},
                  {"chip id", fmt::format("0x{:x}", chip)},
                  {"runtime", ctx_->version + " (" + api.library_name + ")"}};

  // Copy timestamps for Event::duration_ns; failure only loses timing.
  api.hsa_amd_profiling_async_copy_enable(true);
}

HsaDevice::~HsaDevice() {
  release_utility_queue();
  std::lock_guard lock(mutex_);
  for (auto s : free_signals_) ctx_->api.hsa_signal_destroy(s);
}

void* HsaDevice::allocate(size_t size) {
  void* p = nullptr;
  hsa_status_t st = api().hsa_amd_memory_pool_allocate(device_pool_, size ? size : 1, 0, &p);
  if (st != HSA_STATUS_SUCCESS || !p)
    LRRT_THROW_AT(st == HSA_STATUS_ERROR_OUT_OF_RESOURCES || st == HSA_STATUS_ERROR_INVALID_ALLOCATION
                      ? LR_ERROR_OUT_OF_MEMORY
                      : LR_ERROR_RUNTIME,
                  "cannot allocate {} bytes of {} device memory (pool size {} bytes): {}", size,
                  props_.arch, props_.memory_bytes, hsa_error_text(api(), st));
  return p;
}

void HsaDevice::free(void* ptr) {
  if (ptr) LRRT_HSA_CHECK(api(), LR_ERROR_INVALID_ARGUMENT, hsa_amd_memory_pool_free(ptr));
}

void* HsaDevice::do_allocate_host(size_t size) {
  void* p = nullptr;
  hsa_status_t st = api().hsa_amd_memory_pool_allocate(host_pool_, size ? size : 1, 0, &p);
  if (st != HSA_STATUS_SUCCESS || !p)
    LRRT_THROW_AT(LR_ERROR_OUT_OF_MEMORY, "cannot allocate {} bytes of pinned host memory: {}",
                  size, hsa_error_text(api(), st));
  st = api().hsa_amd_agents_allow_access(1, &agent_, nullptr, p);
  if (st != HSA_STATUS_SUCCESS) {
    api().hsa_amd_memory_pool_free(p);
    LRRT_THROW_AT(LR_ERROR_RUNTIME, "hsa_amd_agents_allow_access for {} failed: {}", props_.arch,
                  hsa_error_text(api(), st));
  }
  return p;
}

void HsaDevice::do_free_host(void* ptr) {
  LRRT_HSA_CHECK(api(), LR_ERROR_INVALID_ARGUMENT, hsa_amd_memory_pool_free(ptr));
}

void* HsaDevice::allocate_staging(size_t size) { return allocate_host(size); }
void HsaDevice::free_staging(void* p) { free_host(p); }

void* HsaDevice::allocate_kernarg(size_t size) {
  void* p = nullptr;
  hsa_status_t st = api().hsa_amd_memory_pool_allocate(kernarg_pool_, size, 0, &p);
  if (st != HSA_STATUS_SUCCESS || !p)
    LRRT_THROW_AT(LR_ERROR_OUT_OF_MEMORY, "cannot allocate {} bytes of kernarg memory: {}", size,
                  hsa_error_text(api(), st));
  api().hsa_amd_agents_allow_access(1, &agent_, nullptr, p);
  return p;
}

void HsaDevice::free_kernarg(void* p) {
  if (p) api().hsa_amd_memory_pool_free(p);
}

void HsaDevice::watch_queue(const std::shared_ptr<QueueErrorState>& error) const {
  if (ctx_->faults) ctx_->faults->watch(agent_, error);
}

std::optional<MemoryFault> HsaDevice::memory_fault() const {
  return ctx_->faults ? ctx_->faults->fault(agent_) : std::nullopt;
}

std::optional<uint32_t> HsaDevice::hw_exception() const {
  return ctx_->faults ? ctx_->faults->hw_exception(agent_) : std::nullopt;
}

std::string HsaDevice::device_lost_text(uint32_t cause) const {
  return fmt::format("hsa device '{}' is lost: ROCr reported a hardware exception, {} "
                     "(HSA_AMD_GPU_HW_EXCEPTION_EVENT); its queues stopped and their work is lost; the device is "
                     "unusable until the process restarts",
                     props_.name, hw_exception_cause_text(cause));
}

SignalRef HsaDevice::acquire_signal() {
  hsa_signal_t s{0};
  {
    std::lock_guard lock(mutex_);
    if (!free_signals_.empty()) {
      s = free_signals_.back();
      free_signals_.pop_back();
    }
  }
  if (s.handle) {
    api().hsa_signal_store_relaxed(s, 1);
  } else {
    LRRT_HSA_CHECK(api(), LR_ERROR_RUNTIME, hsa_signal_create(1, 0, nullptr, &s));
  }
  return SignalRef(new Signal{this, s});
}

void HsaDevice::release_signal(hsa_signal_t s) {
  std::lock_guard lock(mutex_);
  free_signals_.push_back(s);
}

std::unique_ptr<Queue> HsaDevice::create_queue() { return std::make_unique<HsaQueue>(*this); }
std::unique_ptr<Event> HsaDevice::create_event() { return std::make_unique<HsaEvent>(*this); }
std::unique_ptr<graph::GraphExec> HsaDevice::instantiate_graph(const graph::Lowering& lowering) {
  return make_hsa_graph_exec(*this, lowering);
}
std::unique_ptr<Module> HsaDevice::load_module(std::span<const std::byte> image) {
  return std::make_unique<HsaModule>(*this, image);
}

}  // namespace lrrt::rt::hsa

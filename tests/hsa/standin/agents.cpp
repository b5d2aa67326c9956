// Agents (one CPU, one GPU), the GPU's ISA, memory pools and their
// allocations.
#include <cstdlib>
#include <type_traits>

#include "standin_internal.hpp"

namespace standin {

bool known_range(const void* p, size_t size) {
  auto a = reinterpret_cast<uintptr_t>(p);
  std::lock_guard l(state().mutex);
  auto it = state().allocations.upper_bound(a);
  if (it == state().allocations.begin()) return false;
  --it;
  return a >= it->first && a + size <= it->first + it->second;
}

namespace {
std::string isa_processor() {
  std::string isa = state().isa;
  return isa.substr(0, isa.find(':'));
}
}  // namespace

}  // namespace standin

using namespace standin;

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


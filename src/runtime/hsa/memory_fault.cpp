#include "memory_fault.hpp"

#include <algorithm>
#include <cstdint>

namespace lrrt::rt::hsa {
namespace {

// Tokens handed to ROCr as the handler's data: never a pointer to an object
// that may be destroyed while ROCr still holds the handler.
struct Registry {
  std::mutex mutex;
  uint64_t next = 1;
  std::vector<std::pair<uint64_t, std::weak_ptr<FaultSink>>> sinks;
};
Registry& registry() {
  static Registry r;
  return r;
}

hsa_status_t on_system_event(const hsa_amd_event_t* event, void* data) {
  if (!event || event->event_type != HSA_AMD_GPU_MEMORY_FAULT_EVENT) return HSA_STATUS_ERROR;
  std::shared_ptr<FaultSink> sink;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    const auto token = uint64_t(reinterpret_cast<uintptr_t>(data));
    for (auto& [t, s] : r.sinks)
      if (t == token) sink = s.lock();
  }
  // Unclaimed (the library's lrrt backend is gone, or not our agent): ROCr
  // then does what it does without a handler.
  return sink && sink->deliver(event->memory_fault) ? HSA_STATUS_SUCCESS : HSA_STATUS_ERROR;
}

}  // namespace

std::string memory_fault_reason_text(uint32_t mask) {
  static const std::pair<uint32_t, const char*> kReasons[] = {
      {HSA_AMD_MEMORY_FAULT_PAGE_NOT_PRESENT, "page not present or supervisor privilege"},
      {HSA_AMD_MEMORY_FAULT_READ_ONLY, "write to a read-only page"},
      {HSA_AMD_MEMORY_FAULT_NX, "execute on a page marked no-execute"},
      {HSA_AMD_MEMORY_FAULT_HOST_ONLY, "host-only memory"},
      {HSA_AMD_MEMORY_FAULT_DRAMECC, "DRAM ECC failure"},
      {HSA_AMD_MEMORY_FAULT_IMPRECISE, "imprecise: the address may not be exact"},
      {HSA_AMD_MEMORY_FAULT_SRAMECC, "SRAM ECC failure"},
      {HSA_AMD_MEMORY_FAULT_HANG, "hang recovery"},
  };
  std::string out;
  for (auto [bit, text] : kReasons)
    if (mask & bit) out += (out.empty() ? "" : ", ") + std::string(text);
  return out.empty() ? "reason unknown" : out;
}

void FaultSink::watch(hsa_agent_t agent, const std::shared_ptr<QueueErrorState>& queue) {
  std::lock_guard lock(mutex_);
  std::erase_if(queues_, [](const auto& q) { return q.second.expired(); });
  queues_.emplace_back(agent.handle, queue);
  for (auto& [a, f] : faults_)
    if (a == agent.handle) {  // a queue created after the fault is dead too
      queue->fault_address.store(f.address);
      queue->fault_reason.store(f.reason);
      queue->memory_fault.store(true);
      queue->status.store(int(HSA_STATUS_ERROR_MEMORY_FAULT));
      queue->failed.store(true, std::memory_order_release);
    }
}

bool FaultSink::deliver(const hsa_amd_gpu_memory_fault_info_t& fault) {
  if (std::none_of(agents_.begin(), agents_.end(), [&](hsa_agent_t a) { return a.handle == fault.agent.handle; }))
    return false;
  std::lock_guard lock(mutex_);
  faults_.emplace_back(fault.agent.handle, MemoryFault{fault.virtual_address, fault.fault_reason_mask});
  any_fault_.store(true, std::memory_order_release);
  for (auto& [a, weak] : queues_) {
    if (a != fault.agent.handle) continue;
    if (auto q = weak.lock()) {
      q->fault_address.store(fault.virtual_address);
      q->fault_reason.store(fault.fault_reason_mask);
      q->memory_fault.store(true);
      q->status.store(int(HSA_STATUS_ERROR_MEMORY_FAULT));
      q->failed.store(true, std::memory_order_release);
    }
  }
  return true;
}

std::optional<MemoryFault> FaultSink::fault(hsa_agent_t agent) const {
  if (!any_fault_.load(std::memory_order_acquire)) return std::nullopt;
  std::lock_guard lock(mutex_);
  for (auto& [a, f] : faults_)
    if (a == agent.handle) return f;
  return std::nullopt;
}

hsa_status_t register_memory_fault_handler(const HsaSymbols& api, const std::shared_ptr<FaultSink>& sink) {
  uint64_t token;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    std::erase_if(r.sinks, [](const auto& s) { return s.second.expired(); });
    token = r.next++;
    r.sinks.emplace_back(token, sink);
  }
  return api.hsa_amd_register_system_event_handler(on_system_event, reinterpret_cast<void*>(uintptr_t(token)));
}

}  // namespace lrrt::rt::hsa

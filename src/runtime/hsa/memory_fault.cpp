#include "memory_fault.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

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
  const bool memory_fault = event && event->event_type == HSA_AMD_GPU_MEMORY_FAULT_EVENT;
  const bool hw_exception = event && int(event->event_type) == kHwExceptionEvent;
  // Other events (HSA_AMD_GPU_MEMORY_ERROR_EVENT) are not claimed.
  if (!memory_fault && !hw_exception) return HSA_STATUS_ERROR;
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
  if (!sink) return HSA_STATUS_ERROR;
  if (memory_fault) return sink->deliver(event->memory_fault) ? HSA_STATUS_SUCCESS : HSA_STATUS_ERROR;
  // The union's first member starts where every member does.
  HwExceptionInfo exception{};
  std::memcpy(&exception, &event->memory_fault, sizeof exception);
  return sink->deliver(exception) ? HSA_STATUS_SUCCESS : HSA_STATUS_ERROR;
}

void mark_hw_exception(QueueErrorState& queue, uint32_t cause) {
  queue.hw_exception.store(cause ? cause : kHwExceptionGpuHang);
  queue.status.store(int(HSA_STATUS_ERROR));
  queue.failed.store(true, std::memory_order_release);
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

void QueueErrorState::fail_from(int failed_status, std::string cause) {
  {
    std::lock_guard lock(cause_mutex_);
    if (failed.load(std::memory_order_acquire)) return;  // its own failure came first
    cause_ = std::move(cause);
  }
  status.store(failed_status);
  failed.store(true, std::memory_order_release);
}

std::string QueueErrorState::cause() const {
  std::lock_guard lock(cause_mutex_);
  return cause_;
}

std::string hw_exception_cause_text(uint32_t mask) {
  std::string out;
  if (mask & kHwExceptionGpuHang) out = "a GPU hang (the device was reset)";
  if (mask & kHwExceptionEcc) out += std::string(out.empty() ? "" : " and ") + "an SRAM ECC error";
  return out.empty() ? "a hardware exception of unknown cause" : out;
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
  for (auto& [a, cause] : hw_exceptions_)
    if (a == agent.handle) mark_hw_exception(*queue, cause);
}

bool FaultSink::deliver(const HwExceptionInfo& exception) {
  if (std::none_of(agents_.begin(), agents_.end(), [&](hsa_agent_t a) { return a.handle == exception.agent.handle; }))
    return false;
  std::lock_guard lock(mutex_);
  hw_exceptions_.emplace_back(exception.agent.handle, exception.reset_cause);
  any_fault_.store(true, std::memory_order_release);
  for (auto& [a, weak] : queues_)
    if (a == exception.agent.handle)
      if (auto q = weak.lock()) mark_hw_exception(*q, exception.reset_cause);
  return true;
}

std::optional<uint32_t> FaultSink::hw_exception(hsa_agent_t agent) const {
  if (!any_fault_.load(std::memory_order_acquire)) return std::nullopt;
  std::lock_guard lock(mutex_);
  for (auto& [a, cause] : hw_exceptions_)
    if (a == agent.handle) return cause ? cause : kHwExceptionGpuHang;
  return std::nullopt;
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

hsa_status_t register_system_event_handler(const HsaSymbols& api, const std::shared_ptr<FaultSink>& sink) {
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

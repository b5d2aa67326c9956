// GPU memory faults. ROCr's Runtime::VMFaultHandler calls abort() unless a
// handler registered with hsa_amd_register_system_event_handler returns
// HSA_STATUS_SUCCESS for HSA_AMD_GPU_MEMORY_FAULT_EVENT; it does not
// promise a queue error callback, and it reports one fault per process (it
// does not re-arm itself). lrrt registers one handler per initialised
// library: the fault becomes the failing device's error, at the next
// synchronizing call of each of its queues, instead of killing the process.
#pragma once

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "hsa_symbols.hpp"

namespace lrrt::rt::hsa {

// A queue's failure, set by ROCr's threads (the queue error callback, the
// memory fault handler), read by waiters.
struct QueueErrorState {
  std::atomic<bool> failed{false};
  std::atomic<int> status{0};
  // A GPU memory fault of the queue's agent (set before `failed`).
  std::atomic<bool> memory_fault{false};
  std::atomic<uint64_t> fault_address{0};
  std::atomic<uint32_t> fault_reason{0};
};

struct MemoryFault {
  uint64_t address = 0;
  uint32_t reason = 0;  // hsa_amd_memory_fault_reason_t bits
};

// "page not present or supervisor privilege, read-only page"
std::string memory_fault_reason_text(uint32_t reason_mask);

// The queues of one library's GPU agents, for the memory fault handler.
class FaultSink {
 public:
  explicit FaultSink(std::vector<hsa_agent_t> agents) : agents_(std::move(agents)) {}
  void watch(hsa_agent_t agent, const std::shared_ptr<QueueErrorState>& queue);
  // Fails every watched queue of the fault's agent; false when the agent is
  // not one of this library's (the handler then does not claim the event).
  bool deliver(const hsa_amd_gpu_memory_fault_info_t& fault);
  std::optional<MemoryFault> fault(hsa_agent_t agent) const;

 private:
  std::vector<hsa_agent_t> agents_;
  std::atomic<bool> any_fault_{false};
  mutable std::mutex mutex_;
  std::vector<std::pair<uint64_t, std::weak_ptr<QueueErrorState>>> queues_;
  std::vector<std::pair<uint64_t, MemoryFault>> faults_;
};

// Registers the handler for `sink` (call after hsa_init: ROCr forgets its
// handlers when the runtime shuts down). The handler reaches the sink
// through a process-wide table of weak references, so an event that arrives
// after the sink is gone is left unclaimed instead of touching freed memory.
hsa_status_t register_memory_fault_handler(const HsaSymbols& api, const std::shared_ptr<FaultSink>& sink);

}  // namespace lrrt::rt::hsa

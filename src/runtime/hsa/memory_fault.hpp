// GPU memory faults and hardware exceptions. ROCr's Runtime::VMFaultHandler
// and Runtime::HwExceptionHandler (core/runtime/runtime.cpp) call abort()
// unless a handler registered with hsa_amd_register_system_event_handler
// returns HSA_STATUS_SUCCESS for HSA_AMD_GPU_MEMORY_FAULT_EVENT or
// HSA_AMD_GPU_HW_EXCEPTION_EVENT (a GPU reset after a hang, an SRAM ECC
// error); neither promises a queue error callback, and each reports one event
// per process (it does not re-arm itself). lrrt registers one handler per
// initialised library: the event becomes the failing device's error, at the
// next synchronizing call of each of its queues, instead of killing the
// process. A memory fault is the running kernel's fault; a hardware exception
// loses the device (LR_ERROR_DEVICE_LOST).
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
  // A hardware exception of the queue's agent (set before `failed`):
  // hw_exception_cause_text's bits, 0 for none.
  std::atomic<uint32_t> hw_exception{0};

  // Fails this queue because another one failed: a replay's lane queue
  // (hsa_graph.cpp), whose replay's completion this queue's later work waits
  // for and never gets. `cause` says what failed, for the message.
  void fail_from(int failed_status, std::string cause);
  std::string cause() const;  // empty unless fail_from

 private:
  mutable std::mutex cause_mutex_;
  std::string cause_;
};

// HSA_AMD_GPU_HW_EXCEPTION_EVENT and its data as ROCr's hsa_ext_amd.h
// defines them (hsa_amd_event_type_t value 1, hsa_amd_gpu_hw_exception_info_t
// in the event's union). Debian's older header has neither, so lrrt reads
// them through these.
inline constexpr int kHwExceptionEvent = 1;
struct HwExceptionInfo {
  hsa_agent_t agent;
  uint32_t reset_type;   // hsa_amd_hw_exception_reset_type_t
  uint32_t reset_cause;  // hsa_amd_hw_exception_reset_cause_t
};
inline constexpr uint32_t kHwExceptionGpuHang = 1u << 0;  // HSA_AMD_HW_EXCEPTION_CAUSE_GPU_HANG
inline constexpr uint32_t kHwExceptionEcc = 1u << 1;      // HSA_AMD_HW_EXCEPTION_CAUSE_ECC

struct MemoryFault {
  uint64_t address = 0;
  uint32_t reason = 0;  // hsa_amd_memory_fault_reason_t bits
};

// "page not present or supervisor privilege, read-only page"
std::string memory_fault_reason_text(uint32_t reason_mask);
// "a GPU hang (the device was reset)", "an SRAM ECC error"
std::string hw_exception_cause_text(uint32_t cause_mask);

// The queues of one library's GPU agents, for the memory fault handler.
class FaultSink {
 public:
  explicit FaultSink(std::vector<hsa_agent_t> agents) : agents_(std::move(agents)) {}
  void watch(hsa_agent_t agent, const std::shared_ptr<QueueErrorState>& queue);
  // Fails every watched queue of the fault's agent; false when the agent is
  // not one of this library's (the handler then does not claim the event).
  bool deliver(const hsa_amd_gpu_memory_fault_info_t& fault);
  // The same for a hardware exception: every queue of the agent fails, and
  // so does every queue created for it later (the device is lost).
  bool deliver(const HwExceptionInfo& exception);
  std::optional<MemoryFault> fault(hsa_agent_t agent) const;
  std::optional<uint32_t> hw_exception(hsa_agent_t agent) const;  // the cause bits

 private:
  std::vector<hsa_agent_t> agents_;
  std::atomic<bool> any_fault_{false};
  mutable std::mutex mutex_;
  std::vector<std::pair<uint64_t, std::weak_ptr<QueueErrorState>>> queues_;
  std::vector<std::pair<uint64_t, MemoryFault>> faults_;
  std::vector<std::pair<uint64_t, uint32_t>> hw_exceptions_;
};

// Registers the handler (memory faults, hardware exceptions) for `sink` (call after hsa_init: ROCr forgets its
// handlers when the runtime shuts down). The handler reaches the sink
// through a process-wide table of weak references, so an event that arrives
// after the sink is gone is left unclaimed instead of touching freed memory.
hsa_status_t register_system_event_handler(const HsaSymbols& api, const std::shared_ptr<FaultSink>& sink);

}  // namespace lrrt::rt::hsa

// Fault injection ($LRRT_HSA_STANDIN_FAULT, lrrt_hsa_standin_set_fault) and
// the failures it causes, reported as ROCr reports them: a queue error, a
// GPU memory fault, a hardware exception; the system event handlers they go
// to.
#include <cstdio>
#include <cstdlib>

#include "standin_internal.hpp"

namespace standin {

void set_faults(const char* spec) {
  Faults f;
  std::string s = spec ? spec : "";
  size_t pos = 0;
  while (pos <= s.size() && !s.empty()) {
    size_t comma = s.find(',', pos);
    std::string item = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    size_t colon = item.find(':');
    std::string key = item.substr(0, colon);
    std::string val = colon == std::string::npos ? "" : item.substr(colon + 1);
    if (key == "queue_error") f.queue_error_kernel = val;
    else if (key == "lost_signal") f.lost_signal_kernel = val;
    else if (key == "vm_fault") f.vm_fault_kernel = val;
    else if (key == "hw_exception") f.hw_exception_kernel = val;
    else if (key == "alloc_fail") f.alloc_fail_bytes = std::strtoull(val.c_str(), nullptr, 10);
    else if (key == "init_fail") f.init_fail = true;
    else if (key == "no_gpu") f.no_gpu = true;
    else if (!key.empty()) std::fprintf(stderr, "hsa stand-in: unknown fault '%s'\n", key.c_str());
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  std::lock_guard l(state().mutex);
  state().faults = f;
}
Faults faults() {
  std::lock_guard l(state().mutex);
  return state().faults;
}

void queue_fail(SQueue* q, hsa_status_t status) {
  q->dead.store(true);
  count("queue_errors");
  if (q->callback) q->callback(status, &q->q, q->data);
}

// A GPU memory fault, as ROCr's Runtime::VMFaultHandler reports it: the
// queue stops (no queue error callback: lrrt must not count on one), and
// the system event handlers get HSA_AMD_GPU_MEMORY_FAULT_EVENT; unless one
// of them returns HSA_STATUS_SUCCESS the process aborts. The handler is not
// re-armed: a later fault in the same runtime is not reported at all.
void vm_fault(SQueue* q, uint64_t address, uint32_t reason, const char* why) {
  if (q) q->dead.store(true);
  count("vm_faults");
  std::vector<std::pair<hsa_amd_system_event_callback_t, void*>> handlers;
  {
    std::lock_guard l(state().mutex);
    if (state().vm_fault_delivered) return;
    state().vm_fault_delivered = true;
    handlers = state().event_handlers;
  }
  hsa_amd_event_t event{};
  event.event_type = HSA_AMD_GPU_MEMORY_FAULT_EVENT;
  event.memory_fault.agent = hsa_agent_t{kGpuAgent};
  event.memory_fault.virtual_address = address;
  event.memory_fault.fault_reason_mask = reason;
  bool handled = false;
  for (auto& [callback, data] : handlers) handled |= callback(&event, data) == HSA_STATUS_SUCCESS;
  if (handled) return;
  std::fprintf(stderr,
               "Memory access fault by GPU node-1 (Agent handle: %p) on address %p. Reason: Page not present or "
               "supervisor privilege. (hsa stand-in: %s)\n",
               reinterpret_cast<void*>(kGpuAgent), reinterpret_cast<void*>(address), why);
  std::abort();
}

// HSA_AMD_GPU_HW_EXCEPTION_EVENT and its data as ROCr's hsa_ext_amd.h
// defines them; Debian's older header (which this builds against) has
// neither.
constexpr int kHwExceptionEvent = 1;
struct HwExceptionInfo {
  hsa_agent_t agent;
  uint32_t reset_type;   // HSA_AMD_HW_EXCEPTION_RESET_TYPE_OTHER = 1: ROCr sets no other
  uint32_t reset_cause;  // HSA_AMD_HW_EXCEPTION_CAUSE_GPU_HANG = 1, _ECC = 2
};
static_assert(sizeof(HwExceptionInfo) <= sizeof(hsa_amd_gpu_memory_fault_info_t));

// A hardware exception (a GPU reset after a hang, an SRAM ECC error), as
// ROCr's Runtime::HwExceptionHandler reports it: the system event handlers
// get HSA_AMD_GPU_HW_EXCEPTION_EVENT; unless one of them returns
// HSA_STATUS_SUCCESS the process aborts. The handler is not re-armed (it
// returns false to the async signal handler): a later exception is not
// reported. The reset stops every queue of the agent with no queue error
// callback: their packets never complete. Not modelled: the copy engine
// (SDMA is reset too on hardware; here queued copies still run).
void hw_exception(uint32_t cause, const char* why) {
  count("hw_exceptions");
  std::vector<std::pair<hsa_amd_system_event_callback_t, void*>> handlers;
  {
    std::lock_guard l(state().mutex);
    for (SQueue* q : state().queues) q->dead.store(true);
    if (state().hw_exception_delivered) return;
    state().hw_exception_delivered = true;
    handlers = state().event_handlers;
  }
  hsa_amd_event_t event{};
  event.event_type = hsa_amd_event_type_t(kHwExceptionEvent);
  const HwExceptionInfo info{hsa_agent_t{kGpuAgent}, 1, cause};
  std::memcpy(&event.memory_fault, &info, sizeof info);  // the union's members share its start
  bool handled = false;
  for (auto& [callback, data] : handlers) handled |= callback(&event, data) == HSA_STATUS_SUCCESS;
  if (handled) return;
  std::fprintf(stderr, "HW Exception by GPU node-1 (Agent handle: %p) reason :%s (hsa stand-in: %s)\n",
               reinterpret_cast<void*>(kGpuAgent), cause == 2 ? "ECC" : "GPU Hang", why);
  std::abort();
}

}  // namespace standin

using namespace standin;

EXPORT hsa_status_t hsa_amd_register_system_event_handler(hsa_amd_system_event_callback_t callback,
                                                         void* data) {
  if (!callback) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  std::lock_guard l(state().mutex);
  if (state().init_count == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  state().event_handlers.emplace_back(callback, data);
  return HSA_STATUS_SUCCESS;
}

// ================================================================ test hooks
EXPORT void lrrt_hsa_standin_set_fault(const char* spec) { set_faults(spec); }
EXPORT void lrrt_hsa_standin_raise_vm_fault(uint64_t address) {
  vm_fault(nullptr, address, HSA_AMD_MEMORY_FAULT_PAGE_NOT_PRESENT, "lrrt_hsa_standin_raise_vm_fault");
}
EXPORT void lrrt_hsa_standin_raise_hw_exception(uint32_t cause) {
  hw_exception(cause, "lrrt_hsa_standin_raise_hw_exception");
}

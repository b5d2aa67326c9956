// The runtime's life (hsa_init, hsa_shut_down), status strings, system
// information, the state the other files share, and the hooks that read back
// what the stand-in recorded (dispatches, counters).
#include <cstdlib>
#include <optional>

#include "standin_internal.hpp"

namespace standin {

// Never destroyed: the threads of a hung device (its queue threads, the
// copy engine) may still use it while the process exits.
State& state() {
  static State* s = new State;
  return *s;
}
// Counted on the producer's hot path: atomics, not the counter map.
std::atomic<uint64_t> doorbell_rings{0}, write_index_adds{0};
void count(const char* name, uint64_t n) {
  std::lock_guard l(state().mutex);
  state().counters[name] += n;
}

}  // namespace standin

using namespace standin;

// ================================================================ HSA API
EXPORT hsa_status_t hsa_init() {
  if (const char* f = std::getenv("LRRT_HSA_STANDIN_FAULT")) set_faults(f);
  // The memory system's lock is never taken under state().mutex: its holders
  // count events (count() takes state().mutex), so the order is memory, then
  // state (a lock-order inversion under TSan otherwise).
  std::optional<std::string> first_isa;
  {
    std::lock_guard l(state().mutex);
    if (state().init_count == 0) {
      const char* i = std::getenv("LRRT_HSA_STANDIN_ISA");
      state().isa = i && *i ? i : "gfx1100";
      first_isa = state().isa;
      // A smaller HSA_AGENT_INFO_QUEUE_MAX_SIZE (a power of two, 16..4096),
      // so tests can fill a ring.
      const char* m = std::getenv("LRRT_HSA_STANDIN_QUEUE_MAX");
      const unsigned long max = m && *m ? std::strtoul(m, nullptr, 10) : 4096;
      state().queue_max_size = max >= 16 && max <= 4096 && (max & (max - 1)) == 0 ? uint32_t(max) : 4096;
    }
  }
  if (first_isa) configure_l2s(*first_isa);
  if (const char* w = std::getenv("LRRT_TEST_WORST_ORDER"); w && *w) worst_order.store(std::strcmp(w, "0") != 0);
  if (faults().init_fail) return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  std::lock_guard l(state().mutex);
  if (state().init_count++ == 0) copy_engine = start_copy_engine();
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_shut_down() {
  CopyEngine* ce = nullptr;
  {
    std::lock_guard l(state().mutex);
    if (state().init_count == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
    if (--state().init_count == 0) {
      std::swap(ce, copy_engine);
      state().event_handlers.clear();
      state().vm_fault_delivered = false;
      state().hw_exception_delivered = false;
    }
  }
  if (ce) stop_copy_engine(ce);
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_status_string(hsa_status_t status, const char** s) {
  switch (int(status)) {
    case HSA_STATUS_SUCCESS: *s = "HSA_STATUS_SUCCESS"; break;
    case HSA_STATUS_ERROR_OUT_OF_RESOURCES: *s = "HSA_STATUS_ERROR_OUT_OF_RESOURCES: the runtime failed to allocate the necessary resources"; break;
    case HSA_STATUS_ERROR_INVALID_ARGUMENT: *s = "HSA_STATUS_ERROR_INVALID_ARGUMENT"; break;
    case HSA_STATUS_ERROR_INVALID_CODE_OBJECT: *s = "HSA_STATUS_ERROR_INVALID_CODE_OBJECT"; break;
    case HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS: *s = "HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS"; break;
    case HSA_STATUS_ERROR_INVALID_SYMBOL_NAME: *s = "HSA_STATUS_ERROR_INVALID_SYMBOL_NAME"; break;
    case HSA_STATUS_ERROR_EXCEPTION: *s = "HSA_STATUS_ERROR_EXCEPTION: an HSAIL operation resulted in a hardware exception"; break;
    case HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: *s = "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: the agent attempted to access memory beyond the largest legal address"; break;
    case HSA_STATUS_ERROR_INVALID_PACKET_FORMAT: *s = "HSA_STATUS_ERROR_INVALID_PACKET_FORMAT"; break;
    case HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED: *s = "HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED: the variable is already defined"; break;
    case HSA_STATUS_ERROR_MEMORY_FAULT: *s = "HSA_STATUS_ERROR_MEMORY_FAULT: agent attempted to access an inaccessible address"; break;
    default: *s = "HSA_STATUS_ERROR (stand-in: unnamed status)"; break;
  }
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_system_get_info(hsa_system_info_t attr, void* value) {
  switch (attr) {
    case HSA_SYSTEM_INFO_VERSION_MAJOR: put<uint16_t>(value, 1); break;
    case HSA_SYSTEM_INFO_VERSION_MINOR: put<uint16_t>(value, 1); break;
    case HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY: put<uint64_t>(value, 1'000'000'000); break;
    case HSA_SYSTEM_INFO_TIMESTAMP: put<uint64_t>(value, now_ns()); break;
    default: return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
  return HSA_STATUS_SUCCESS;
}

// ================================================================ test hooks
EXPORT size_t lrrt_hsa_standin_dispatch_count() {
  std::lock_guard l(state().mutex);
  return state().dispatches.size();
}
EXPORT int lrrt_hsa_standin_get_dispatch(size_t i, lrrt_hsa_standin_dispatch_t* out) {
  std::lock_guard l(state().mutex);
  if (i >= state().dispatches.size()) return -1;
  *out = state().dispatches[i];
  return 0;
}
EXPORT void lrrt_hsa_standin_reset() {
  std::lock_guard l(state().mutex);
  state().dispatches.clear();
  uint64_t live = state().counters["live_allocations"];
  state().counters.clear();
  state().counters["live_allocations"] = live;
  doorbell_rings.store(0);
  write_index_adds.store(0);
}
EXPORT uint64_t lrrt_hsa_standin_counter(const char* name) {
  if (std::strcmp(name, "doorbell_rings") == 0) return doorbell_rings.load();
  if (std::strcmp(name, "write_index_adds") == 0) return write_index_adds.load();
  std::lock_guard l(state().mutex);
  auto it = state().counters.find(name);
  return it == state().counters.end() ? 0 : it->second;
}

// The HSA functions lrrt calls, loaded from libhsa-runtime64 with dlopen (the
// build needs only the headers). LRRT_HSA_LIBRARY overrides the path; the
// test stand-in (tests/hsa/standin) is loaded the same way.
#pragma once

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#include <string>

namespace lrrt::rt::hsa {

#define LRRT_HSA_FUNCTIONS(X)                 \
  X(hsa_init)                                 \
  X(hsa_shut_down)                            \
  X(hsa_status_string)                        \
  X(hsa_system_get_info)                      \
  X(hsa_iterate_agents)                       \
  X(hsa_agent_get_info)                       \
  X(hsa_agent_iterate_isas)                   \
  X(hsa_isa_get_info_alt)                     \
  X(hsa_amd_agent_iterate_memory_pools)       \
  X(hsa_amd_memory_pool_get_info)             \
  X(hsa_amd_memory_pool_allocate)             \
  X(hsa_amd_memory_pool_free)                 \
  X(hsa_amd_agents_allow_access)              \
  X(hsa_amd_memory_async_copy)                \
  X(hsa_signal_create)                        \
  X(hsa_signal_destroy)                       \
  X(hsa_signal_load_relaxed)                  \
  X(hsa_signal_store_relaxed)                 \
  X(hsa_signal_store_screlease)               \
  X(hsa_signal_wait_scacquire)                \
  X(hsa_queue_create)                         \
  X(hsa_queue_destroy)                        \
  X(hsa_queue_load_read_index_scacquire)      \
  X(hsa_queue_load_write_index_relaxed)       \
  X(hsa_queue_add_write_index_relaxed)        \
  X(hsa_amd_profiling_set_profiler_enabled)   \
  X(hsa_amd_profiling_async_copy_enable)      \
  X(hsa_amd_profiling_get_dispatch_time)      \
  X(hsa_amd_profiling_get_async_copy_time)    \
  X(hsa_code_object_reader_create_from_memory) \
  X(hsa_code_object_reader_destroy)           \
  X(hsa_executable_create_alt)                \
  X(hsa_executable_load_agent_code_object)    \
  X(hsa_executable_freeze)                    \
  X(hsa_executable_destroy)                   \
  X(hsa_executable_get_symbol_by_name)        \
  X(hsa_executable_symbol_get_info)

struct Api {
#define LRRT_HSA_MEMBER(name) decltype(&::name) name = nullptr;
  LRRT_HSA_FUNCTIONS(LRRT_HSA_MEMBER)
#undef LRRT_HSA_MEMBER
  void* handle = nullptr;
  std::string path;

  // "HSA_STATUS_ERROR_OUT_OF_RESOURCES (4104): ..." for messages.
  std::string describe(hsa_status_t status) const;
};

// Loads the library and every symbol. Returns "" on success, else one
// sentence saying why not. Never throws.
std::string load_api(Api& api);

}  // namespace lrrt::rt::hsa

// Throws Error(status) naming the HSA call and its status when it fails.
#define LRRT_HSA_CHECK(api, lr_status, call, ...)                                       \
  do {                                                                                  \
    hsa_status_t lrrt_hsa_status_ = (api).call(__VA_ARGS__);                            \
    if (lrrt_hsa_status_ != HSA_STATUS_SUCCESS && lrrt_hsa_status_ != HSA_STATUS_INFO_BREAK) \
      LRRT_THROW_AT(lr_status, "{} failed: {}", #call, (api).describe(lrrt_hsa_status_)); \
  } while (0)

// The HSA functions the hsa backend calls, one X(name) each: the one list
// hsa_symbols.{hpp,cpp} expand into the table's members and their dlsym
// calls. Adding a call to ROCr means adding its name here (and to the test
// stand-in, tests/hsa/standin).
#pragma once

#define LRRT_HSA_SYMBOLS(X)                    \
  X(hsa_init)                                  \
  X(hsa_shut_down)                             \
  X(hsa_status_string)                         \
  X(hsa_system_get_info)                       \
  X(hsa_iterate_agents)                        \
  X(hsa_agent_get_info)                        \
  X(hsa_agent_iterate_isas)                    \
  X(hsa_isa_get_info_alt)                      \
  X(hsa_amd_agent_iterate_memory_pools)        \
  X(hsa_amd_memory_pool_get_info)              \
  X(hsa_amd_memory_pool_allocate)              \
  X(hsa_amd_memory_pool_free)                  \
  X(hsa_amd_agents_allow_access)               \
  X(hsa_amd_memory_async_copy)                 \
  X(hsa_amd_register_system_event_handler)     \
  X(hsa_signal_create)                         \
  X(hsa_signal_destroy)                        \
  X(hsa_signal_load_relaxed)                   \
  X(hsa_signal_store_relaxed)                  \
  X(hsa_signal_store_screlease)                \
  X(hsa_signal_wait_scacquire)                 \
  X(hsa_queue_create)                          \
  X(hsa_queue_destroy)                         \
  X(hsa_queue_load_read_index_scacquire)       \
  X(hsa_queue_load_write_index_relaxed)        \
  X(hsa_queue_add_write_index_relaxed)         \
  X(hsa_amd_profiling_set_profiler_enabled)    \
  X(hsa_amd_profiling_async_copy_enable)       \
  X(hsa_amd_profiling_get_dispatch_time)       \
  X(hsa_amd_profiling_get_async_copy_time)     \
  X(hsa_code_object_reader_create_from_memory) \
  X(hsa_code_object_reader_destroy)            \
  X(hsa_executable_create_alt)                 \
  X(hsa_executable_load_agent_code_object)     \
  X(hsa_executable_freeze)                     \
  X(hsa_executable_destroy)                    \
  X(hsa_executable_get_symbol_by_name)         \
  X(hsa_executable_symbol_get_info)

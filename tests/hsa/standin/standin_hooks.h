/*
 * Test hooks exported by libhsa-standin.so next to the HSA functions. Tests
 * find them with dlsym on the same library lrrt loaded (RTLD_NOLOAD).
 */
#ifndef LRRT_HSA_STANDIN_HOOKS_H_
#define LRRT_HSA_STANDIN_HOOKS_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LRRT_STANDIN_MAX_KERNARG 1024

/* One executed (or faulted) kernel dispatch, as the packet processor saw it. */
typedef struct lrrt_hsa_standin_dispatch_t {
  char kernel[128];
  uint16_t header;
  uint16_t setup;
  uint16_t workgroup_size[3];
  uint32_t grid_size[3];         /* work-items, as in the AQL packet */
  uint32_t group_segment_size;
  uint32_t private_segment_size;
  uint32_t kernarg_size;         /* bytes copied into kernarg[] */
  uint32_t explicit_size;        /* bytes handed to the host kernel */
  uint8_t kernarg[LRRT_STANDIN_MAX_KERNARG];
  uint32_t used_hidden_args;     /* 1 when group sizes/counts came from hidden args */
  uint32_t hidden_mismatch;      /* 1 when hidden args disagreed with the packet */
} lrrt_hsa_standin_dispatch_t;

/* Fault injection, comma-separated (also read from $LRRT_HSA_STANDIN_FAULT at
 * hsa_init):
 *   queue_error:<kernel>  the queue fails (memory aperture violation) instead
 *                         of running <kernel>
 *   lost_signal:<kernel>  <kernel> runs but its completion signal is never
 *                         decremented
 *   vm_fault:<kernel>     a GPU memory fault (at the address in <kernel>'s
 *                         first argument word) instead of running <kernel>:
 *                         the queue stops and the system event handlers get
 *                         HSA_AMD_GPU_MEMORY_FAULT_EVENT; the process aborts
 *                         unless one returns HSA_STATUS_SUCCESS (as ROCr)
 *   hw_exception:<kernel> a hardware exception (a GPU hang; the GPU is reset)
 *                         instead of running <kernel>: every queue stops and
 *                         the system event handlers get
 *                         HSA_AMD_GPU_HW_EXCEPTION_EVENT; the process aborts
 *                         unless one returns HSA_STATUS_SUCCESS (as ROCr)
 *   alloc_fail:<bytes>    device-pool allocations of at least <bytes> fail
 *   init_fail             hsa_init returns HSA_STATUS_ERROR_OUT_OF_RESOURCES
 *   no_gpu                no GPU agent is reported
 *   "" clears all faults. */
typedef void (*lrrt_hsa_standin_set_fault_fn)(const char *spec);
typedef size_t (*lrrt_hsa_standin_dispatch_count_fn)(void);
typedef int (*lrrt_hsa_standin_get_dispatch_fn)(size_t index,
                                                lrrt_hsa_standin_dispatch_t *out);
typedef void (*lrrt_hsa_standin_reset_fn)(void);
/* Nonzero: the copy engine starts no queued copy until called again with 0
 * (queued copies then run in order). Makes "has the copy finished yet?"
 * deterministic for tests that count the packets lrrt emits. */
typedef void (*lrrt_hsa_standin_hold_copies_fn)(int hold);
/* Nonzero: the next hsa_amd_memory_async_copy call, once its copy is queued,
 * blocks its caller until called again with 0 (counter "copy_calls_paused"
 * counts callers that blocked). Stops lrrt between a copy it submits and
 * what it submits next, so a test can make another thread come in there. */
typedef void (*lrrt_hsa_standin_pause_next_copy_call_fn)(int pause);
/* Nonzero: worst-order mode (also $LRRT_TEST_WORST_ORDER=1 at hsa_init): the
 * processor runs each open run of dispatches without barrier bit later
 * packets first, and copies as early as their signals allow (queues.cpp
 * describes the model). 0: dispatches in ring order. */
typedef void (*lrrt_hsa_standin_set_worst_order_fn)(int on);
/* A GPU memory fault at `address` with no queue: the system event handlers,
 * or abort() when none handles it. */
typedef void (*lrrt_hsa_standin_raise_vm_fault_fn)(uint64_t address);
/* A hardware exception with cause bits `cause` (1: GPU hang, 2: SRAM ECC, as
 * hsa_amd_hw_exception_reset_cause_t): every queue stops, then the system
 * event handlers, or abort() when none handles it. */
typedef void (*lrrt_hsa_standin_raise_hw_exception_fn)(uint32_t cause);
/* Counters: packets processed by type ("packets_dispatch",
 * "packets_barrier_and", "packets_barrier_bit": packets with the barrier bit),
 * "dispatches_reordered", "doorbell_rings" (stores to any queue's doorbell),
 * "write_index_adds" (hsa_queue_add_write_index_relaxed calls), "copies",
 * "copy_bytes", "copy_calls_paused", "queue_errors", "live_allocations", "zero_byte_copies"
 * (hsa_amd_memory_async_copy calls of 0 bytes: ROCr never completes their
 * signal), "vm_faults", "hw_exceptions", "scratch_overruns", "symbols_already_defined",
 * "l2_write_backs". */
typedef uint64_t (*lrrt_hsa_standin_counter_fn)(const char *name);

#ifdef __cplusplus
}
#endif

#endif

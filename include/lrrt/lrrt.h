/*
 * lrrt — a light GPU kernel runtime with hsa (AMD), cuda (NVIDIA) and host
 * (CPU) backends.
 *
 * The C ABI is source-compatible with light-rocm-runtime's names and
 * semantics and adds what a multi-backend runtime needs (backend selection,
 * device and kernel properties, per-thread error messages).
 *
 * Rules that hold for every function:
 *  - Every function returns an lr_status_t; no C++ exception crosses the ABI.
 *  - When a function fails, lr_last_error_message() returns a sentence that
 *    explains why, for the calling thread, until that thread's next call.
 *  - Launch configurations count workgroups per dimension in `grid` (CUDA's
 *    gridDim) and work-items per workgroup in `block` (CUDA's blockDim).
 *
 * Threads (tests/cts/thread_test.cpp checks this on every backend):
 *  - lr_init and lr_shutdown must not run at the same time as any other
 *    call. Between them, every function may be called from any thread, at
 *    the same time as any other, also on the same handle, except as below.
 *  - One queue (or the device's default queue) takes launches, copies and
 *    event records from several threads at once; each is one submission,
 *    in the order the calls took effect.
 *  - A wait returns only when every submission it covers is done, whichever
 *    other thread waits for the same work at the same time: lr_synchronize,
 *    lr_free, lr_host_free, lr_memcpy and lr_module_destroy cover the whole
 *    device, lr_queue_synchronize its queue, lr_event_synchronize the work
 *    before the event's record, lr_graph_exec_synchronize the exec's last
 *    replay. A wait covers every submission whose call returned before the
 *    wait was called; a submission made while it runs may or may not be
 *    covered. An execution error is reported by a wait that covers the
 *    failed work; when several threads wait for it, which one is not
 *    specified.
 *  - Launches, patches, waits and queries of one graph exec may come from
 *    several threads: they run one after another. Graph recording calls on
 *    one graph may too.
 *  - Destroying a handle (lr_*_destroy, lr_free of a pointer) must not
 *    race another thread's call on the same handle or pointer, nor a
 *    submission that uses it: the caller orders them (a join, a mutex, a
 *    wait). Destroying work another thread submitted, after a wait on this
 *    or another thread, is fine; so is destroying a queue or exec while
 *    another thread's lr_synchronize is waiting for the device.
 *  - Recording an event while another thread records, waits for or depends
 *    on the same event is a race the caller must order; waiting for one
 *    recorded event from several threads at once is fine.
 *  - lr_last_error_message is per thread; lr_set_wait_timeout_ms and
 *    lr_set_wait_spin_us are process-wide and apply to waits that start
 *    after them.
 */
#ifndef LRRT_LRRT_H_
#define LRRT_LRRT_H_

/* One header per concept (lrrt/c/), included here in this order, which is
 * the order of the declarations (bindgen's bindings follow it):
 *   types.h         LRRT_API, the version, lr_status_t, the handles and the
 *                   structs the concepts share
 *   status.h        lr_status_string, lr_last_error_message, lr_version_string
 *   runtime.h       wait timeout and spin, the environment, lr_init, lr_shutdown
 *   device.h        backends, devices, properties, details, memory info
 *   queue.h         queues and events
 *   memory.h        allocations, pinned host memory, registration, copies, peers
 *   module.h        modules, Triton cache entries, kernels, launches, lr_synchronize
 *   memory_stats.h  lr_get_memory_stats, lr_reset_memory_stats
 *   graph.h         retained replay (graphs, access derivation, execs)
 *   tensor_map.h    tensor maps (TMA descriptors; cuda sm_90+)
 * Each includes what it needs; include lrrt/lrrt.h, not them. */
#include "lrrt/c/types.h"
#include "lrrt/c/status.h"
#include "lrrt/c/runtime.h"
#include "lrrt/c/device.h"
#include "lrrt/c/queue.h"
#include "lrrt/c/memory.h"
#include "lrrt/c/module.h"
#include "lrrt/c/memory_stats.h"
#include "lrrt/c/graph.h"
#include "lrrt/c/tensor_map.h"

#endif /* LRRT_LRRT_H_ */

/* lrrt C ABI: retained replay: graphs, access declarations and derivation, execs.
 * One concept of lrrt/lrrt.h, the header to include; its opening comment
 * states the rules every function follows (status codes, errors, threads). */
#ifndef LRRT_C_GRAPH_H_
#define LRRT_C_GRAPH_H_

#include "lrrt/c/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Retained replay (graphs)
 *
 * A graph records a sequence of steps once: kernel dispatches, copies and
 * fills. lrrt derives the dependencies between them from program order and
 * the buffers each step declares it reads or writes, lowers the graph once
 * (lr_graph_instantiate) and replays it many times at a fraction of the cost
 * of launching each step (lr_graph_exec_launch).
 *
 * Dependencies. Step B depends on an earlier step A when their declared byte
 * ranges overlap and at least one of them writes: read-after-write (RAW),
 * write-after-read (WAR) and write-after-write (WAW). Two reads, or ranges
 * that do not overlap, never order two steps, so independent steps may run
 * concurrently. lr_graph_add_dependency adds explicit edges on top. Only
 * the edges the data flow needs are kept (a transitive reduction).
 *
 * Declarations. A kernel step lists every buffer it touches. Copies and fills
 * declare themselves (read the source, write the destination). Every pointer
 * a kernel receives in its arguments that lies inside a live allocation must
 * fall inside one of the step's declared ranges; lr_graph_instantiate
 * rejects the graph otherwise, naming the step and the argument. Memory a
 * graph touches on the device side must come from lr_malloc or
 * lr_host_malloc of the graph's device, or be registered with
 * lr_memory_register; the host side of a host-to-device or
 * device-to-host copy may be any host memory.
 *
 * Capture (recording the launches a program makes on a queue) is not
 * offered: a launch does not say which buffers it reads or writes, so a
 * captured sequence could only be serialised, and the point of declaring
 * access is that lrrt can prove which steps are independent.
 *
 * Node ids (lr_graph_node_t) count the steps of one graph from 0 in the
 * order they were added; they stay valid in every exec instantiated from it.
 * ---------------------------------------------------------------------- */

typedef struct lr_graph_t lr_graph_t;
typedef struct lr_graph_exec_t lr_graph_exec_t;
typedef uint32_t lr_graph_node_t;

typedef enum lr_access_mode_t {
  LR_ACCESS_READ = 1,
  LR_ACCESS_WRITE = 2,
  LR_ACCESS_READ_WRITE = 3
} lr_access_mode_t;

/* One buffer a kernel step touches: the bytes
 * [pointer + offset, pointer + offset + bytes) of one allocation. bytes = 0
 * means "to the end of the allocation that holds pointer + offset", so
 * {buf, 0, 0, mode} declares the whole buffer. */
typedef struct lr_graph_access_t {
  const void *pointer;
  uint64_t offset;
  uint64_t bytes;
  lr_access_mode_t mode;
} lr_graph_access_t;

/* lr_graph_instantiate options; NULL or zero fields take the defaults. */
#define LR_GRAPH_DEFAULT_MAX_LANES 2
typedef enum lr_graph_instantiate_flags_t {
  /* lr_graph_exec_set_kernargs on an exec whose replay is still running
   * waits for the replay instead of returning LR_ERROR_BUSY. */
  LR_GRAPH_PATCH_WAITS = 1
} lr_graph_instantiate_flags_t;
typedef struct lr_graph_instantiate_options_t {
  /* Most queues (lanes) independent branches are spread over; the exec uses
   * min(max_lanes, the graph's widest set of independent steps). 0 means
   * LR_GRAPH_DEFAULT_MAX_LANES; at most 8. */
  uint32_t max_lanes;
  uint32_t flags; /* lr_graph_instantiate_flags_t bits */
} lr_graph_instantiate_options_t;

/* An empty graph recording for device. */
LRRT_API lr_status_t lr_graph_create(lr_device_t device, lr_graph_t **graph);
/* Releases the recording. Execs instantiated from it stay usable. */
LRRT_API lr_status_t lr_graph_destroy(lr_graph_t *graph);

/* Adds a kernel dispatch. args holds the explicit arguments packed as for
 * lr_launch; they are copied. accesses lists the buffers the dispatch
 * touches (access_count may be 0 for a kernel that touches no memory).
 * node (may be NULL) receives the step's id. The kernel's module cannot be
 * destroyed while a graph or exec uses it. */
LRRT_API lr_status_t lr_graph_add_kernel(lr_graph_t *graph, lr_kernel_t *kernel,
                                         const lr_launch_config_t *config,
                                         const void *args, size_t args_size,
                                         const lr_graph_access_t *accesses,
                                         size_t access_count,
                                         lr_graph_node_t *node);
/* Adds a copy of size bytes (> 0); it reads src and writes dst. */
LRRT_API lr_status_t lr_graph_add_copy(lr_graph_t *graph, void *dst,
                                       const void *src, size_t size,
                                       lr_memcpy_kind_t kind,
                                       lr_graph_node_t *node);
/* Adds a fill of size bytes at dst (device or pinned host memory) with a
 * pattern of pattern_size bytes (1, 2 or 4; size a multiple of it), as
 * cuMemsetD8/D16/D32 do. It writes dst. */
LRRT_API lr_status_t lr_graph_add_fill(lr_graph_t *graph, void *dst,
                                       size_t size, const void *pattern,
                                       size_t pattern_size,
                                       lr_graph_node_t *node);
/* Where a kernel argument's access comes from (docs/access.md), narrowest
 * proof first. */
typedef enum lr_access_source_t {
  LR_ACCESS_SOURCE_DEFAULT = 0,       /* nothing known: read-write */
  LR_ACCESS_SOURCE_DECLARED = 1,      /* given by the caller */
  LR_ACCESS_SOURCE_ACTUAL_ACCESS = 2, /* AMDGPU metadata .actual_access (the compiler proved it) */
  LR_ACCESS_SOURCE_ACCESS = 3,        /* AMDGPU metadata .access (the source declared it) */
  LR_ACCESS_SOURCE_TTIR = 4           /* lrrt's analysis of the kernel's Triton IR */
} lr_access_source_t;

/* The access kernel argument `index` (as lr_kernel_get_arg) gets when a
 * graph derives it: the Triton IR analysis (lr_kernel_set_triton_ir), else
 * the code object's .actual_access, else its .access, else read-write
 * (LR_ACCESS_SOURCE_DEFAULT; also for arguments that are not buffers). */
LRRT_API lr_status_t lr_kernel_get_arg_access(lr_kernel_t *kernel, uint32_t index,
                                              lr_access_mode_t *mode,
                                              lr_access_source_t *source);

/* Gives a kernel the Triton IR it was compiled from (the .ttir text, e.g.
 * CompiledKernel.asm["ttir"]): lrrt analyses which pointer parameters are
 * only read, only written or both (docs/access.md) and derived accesses use
 * it (source LR_ACCESS_SOURCE_TTIR). Parameters are matched to the kernel's
 * arguments by Triton's packing (natural alignment, in order). Fails with
 * LR_ERROR_INVALID_IMAGE when the text has no `tt.func public @<kernel's
 * name>` signature lrrt reads, LR_ERROR_INVALID_ARGUMENT when a pointer
 * parameter lands where the kernel's recorded layout has no 8-byte
 * argument. An IR whose body the analysis cannot read leaves every pointer
 * read-write (LR_ACCESS_SOURCE_DEFAULT; lr_triton_describe_texts says why).
 * Replaces what an earlier call set; affects graph steps instantiated later. */
LRRT_API lr_status_t lr_kernel_set_triton_ir(lr_kernel_t *kernel, const char *ir_text);

/* lr_graph_add_kernel_ex flags. */
typedef enum lr_graph_kernel_flags_t {
  /* Derive the accesses the caller does not declare: every pointer argument
   * (a global_buffer, or any 8-byte argument whose value lies inside an
   * allocation) that no declared range covers gets, at lr_graph_instantiate,
   * the access lr_kernel_get_arg_access reports for it, over the whole
   * allocation it points into. An explicit declaration still wins. The
   * plan (lr_graph_exec_get_plan) names each access's "source". */
  LR_GRAPH_KERNEL_DERIVE_ACCESS = 1
} lr_graph_kernel_flags_t;
/* lr_graph_add_kernel with lr_graph_kernel_flags_t bits (0: the same call).
 * Unknown bits are LR_ERROR_INVALID_ARGUMENT. */
LRRT_API lr_status_t lr_graph_add_kernel_ex(lr_graph_t *graph, lr_kernel_t *kernel,
                                            const lr_launch_config_t *config,
                                            const void *args, size_t args_size,
                                            const lr_graph_access_t *accesses,
                                            size_t access_count, uint32_t flags,
                                            lr_graph_node_t *node);

/* Makes node `to` run after node `from` finished, whatever they access. */
LRRT_API lr_status_t lr_graph_add_dependency(lr_graph_t *graph,
                                             lr_graph_node_t from,
                                             lr_graph_node_t to);

/* Validates the graph and lowers it once for replay: derives the edges,
 * assigns queues (lanes), prepares every step's arguments. Fails with
 * LR_ERROR_INVALID_ARGUMENT and a message for a cycle through explicit
 * dependencies, a kernel pointer argument without an access declaration,
 * a pointer outside every allocation of the device, or a launch the device
 * cannot run. options may be NULL. The graph can be changed and
 * instantiated again afterwards; the exec keeps what it was given. */
LRRT_API lr_status_t lr_graph_instantiate(
    lr_graph_t *graph, const lr_graph_instantiate_options_t *options,
    lr_graph_exec_t **exec);
/* Waits for the exec's replays still running, then releases it. An
 * execution error of those replays is returned after the exec is gone.
 * After a timeout or a failure the replays' packets may still run: on hsa
 * what they read (argument copies, staging, signals) is kept to the end of
 * the process, never freed under them. */
LRRT_API lr_status_t lr_graph_exec_destroy(lr_graph_exec_t *exec);

/* Enqueues one replay on queue (NULL: the device's default queue) and
 * returns once it is submitted. The replay follows work submitted to queue
 * before it, and work submitted to queue afterwards follows the replay, as
 * with one lr_launch_on_queue. Replays of one exec run one after another,
 * also when launched on different queues. Several replays of one exec may
 * be in flight (launched, not finished): on hsa up to the exec's
 * max_in_flight (lr_graph_exec_set_max_in_flight), and a launch beyond it
 * waits on the host for the oldest replay in flight; a launch on another
 * queue than the replays in flight waits for them all. cuda, host and the
 * generic replay queue replays behind each other without a bound. Execution errors surface at the
 * next synchronizing call (lr_graph_exec_synchronize, lr_queue_synchronize,
 * lr_synchronize). A buffer the exec uses that was freed since it was
 * instantiated makes the launch fail with LR_ERROR_INVALID_ARGUMENT. */
LRRT_API lr_status_t lr_graph_exec_launch(lr_graph_exec_t *exec,
                                          lr_queue_t *queue);
/* As lr_graph_exec_launch; completion (may be NULL) is recorded on queue
 * and completes when every step of this replay finished. */
LRRT_API lr_status_t lr_graph_exec_launch_with_event(lr_graph_exec_t *exec,
                                                     lr_queue_t *queue,
                                                     lr_event_t *completion);
/* Waits until the exec's last launched replay (and so every earlier one)
 * finished; returns the first execution error. Returns at once for an exec
 * never launched. */
LRRT_API lr_status_t lr_graph_exec_synchronize(lr_graph_exec_t *exec);
/* *complete = 1 when no replay of the exec is running, 0 otherwise. */
LRRT_API lr_status_t lr_graph_exec_query(lr_graph_exec_t *exec,
                                         uint32_t *complete);
/* Overwrites size bytes of kernel node `node`'s explicit arguments at byte
 * offset, for the replays launched afterwards, without re-recording. Grid,
 * workgroup, shared memory and kernel are fixed at instantiation (changing
 * them means instantiating again). A pointer argument the bytes overlap must
 * still point inside one of the node's declared ranges. A patch applies to
 * the replays launched after it, never to one in flight. On hsa it never
 * waits: each replay in flight has its own copy of the arguments, and the
 * patch goes to the next replay launched (LR_GRAPH_PATCH_WAITS changes
 * nothing there). On the other backends, while a replay of the exec is
 * running this returns LR_ERROR_BUSY and changes nothing, unless the exec
 * was instantiated with LR_GRAPH_PATCH_WAITS: then it waits for the replay
 * first. */
LRRT_API lr_status_t lr_graph_exec_set_kernargs(lr_graph_exec_t *exec,
                                                lr_graph_node_t node,
                                                size_t offset,
                                                const void *bytes,
                                                size_t size);
/* Replays of one exec that may be in flight at once (default
 * LR_GRAPH_DEFAULT_MAX_IN_FLIGHT, or $LRRT_GRAPH_MAX_IN_FLIGHT when the exec
 * was instantiated; 0 means the default; at most 64), for later launches.
 * Waits for the replays in flight first. On hsa each one in flight has its
 * own signals, packet images and kernarg copy; an exec whose kernels call
 * OpenCL printf keeps one in flight (one printf buffer). cuda, host and the
 * generic replay accept the setting and do not need it (their replays queue
 * behind each other). */
#define LR_GRAPH_DEFAULT_MAX_IN_FLIGHT 2
LRRT_API lr_status_t lr_graph_exec_set_max_in_flight(lr_graph_exec_t *exec,
                                                     uint32_t count);

/* What an exec's launches did, for tests and tuning. Read without waiting
 * for a launch in progress on another thread. */
typedef struct lr_graph_exec_stats_t {
  uint64_t replays;         /* lr_graph_exec_launch calls that submitted a replay */
  uint64_t launch_waits;    /* of them, launches that waited on the host for an
                               earlier replay of the exec (all sets in flight, or
                               another queue) */
  uint32_t max_in_flight;   /* the bound the backend keeps; 0: none (cuda, host) */
  uint32_t peak_in_flight;  /* most replays in flight at once (hsa; 0 elsewhere) */
} lr_graph_exec_stats_t;
LRRT_API lr_status_t lr_graph_exec_get_stats(lr_graph_exec_t *exec,
                                             lr_graph_exec_stats_t *stats);

/* The plan the exec runs, as JSON: nodes, edges with their hazard kinds
 * (RAW, WAR, WAW, explicit), the lane of each node and every
 * synchronisation the lowering placed, with the reason. *length receives
 * the JSON's length without the terminating NUL. With capacity 0 (json may
 * be NULL) only the length is returned; otherwise the JSON and its NUL are
 * written to json, or the call fails with LR_ERROR_INVALID_ARGUMENT when
 * capacity is too small. */
LRRT_API lr_status_t lr_graph_exec_get_plan(lr_graph_exec_t *exec, char *json,
                                            size_t capacity, size_t *length);

#ifdef __cplusplus
}
#endif

#endif /* LRRT_C_GRAPH_H_ */

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

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define LRRT_API __declspec(dllexport)
#else
#define LRRT_API __attribute__((visibility("default")))
#endif

#define LRRT_VERSION_MAJOR 0
#define LRRT_VERSION_MINOR 1
#define LRRT_VERSION_PATCH 0

typedef enum lr_status_t {
  LR_SUCCESS = 0,
  LR_ERROR_INVALID_ARGUMENT = 1,
  LR_ERROR_NOT_INITIALIZED = 2,
  LR_ERROR_ALREADY_INITIALIZED = 3,
  LR_ERROR_NOT_SUPPORTED = 4,
  LR_ERROR_RUNTIME = 5,
  /* Additions beyond light-rocm-runtime. */
  LR_ERROR_OUT_OF_MEMORY = 6,
  LR_ERROR_INVALID_IMAGE = 7,   /* corrupt or wrong-architecture code object */
  LR_ERROR_NOT_FOUND = 8,       /* unknown kernel, backend or device */
  LR_ERROR_KERNEL_FAULT = 9,    /* a kernel failed while executing */
  LR_ERROR_TIMEOUT = 10,        /* a wait exceeded its limit (hang) */
  LR_ERROR_UNAVAILABLE = 11,    /* backend library or device missing */
  LR_ERROR_DEVICE_LOST = 12,    /* the device context is no longer usable */
  LR_ERROR_BUSY = 13            /* the object is still in use by pending work */
} lr_status_t;

typedef enum lr_memcpy_kind_t {
  LR_MEMCPY_HOST_TO_DEVICE = 0,
  LR_MEMCPY_DEVICE_TO_HOST = 1,
  LR_MEMCPY_DEVICE_TO_DEVICE = 2
} lr_memcpy_kind_t;

typedef struct lr_device_t {
  uint32_t index;
} lr_device_t;

typedef struct lr_event_t lr_event_t;
typedef struct lr_queue_t lr_queue_t;
typedef struct lr_module_t lr_module_t;
typedef struct lr_kernel_t lr_kernel_t;

typedef struct lr_dim3_t {
  uint32_t x;
  uint32_t y;
  uint32_t z;
} lr_dim3_t;

typedef struct lr_launch_config_t {
  lr_dim3_t grid;  /* workgroups per dimension */
  lr_dim3_t block; /* work-items per workgroup, per dimension */
  uint32_t shared_memory_bytes; /* dynamic shared (LDS) memory per workgroup */
} lr_launch_config_t;

typedef struct lr_memory_stats_t {
  uint64_t live_bytes;
  uint64_t peak_live_bytes;
  uint64_t total_allocated_bytes;
  uint64_t total_freed_bytes;
  uint64_t allocation_count;
  uint64_t free_count;
  uint64_t pinned_host_live_bytes;
  uint64_t pinned_host_peak_live_bytes;
  uint64_t pinned_host_total_allocated_bytes;
  uint64_t pinned_host_total_freed_bytes;
  uint64_t pinned_host_allocation_count;
  uint64_t pinned_host_free_count;
  uint64_t h2d_copy_bytes;
  uint64_t d2h_copy_bytes;
  uint64_t d2d_copy_bytes;
  uint64_t memcpy_count;
} lr_memory_stats_t;

#define LR_NAME_CAPACITY 128
#define LR_MESSAGE_CAPACITY 512

typedef struct lr_backend_info_t {
  char name[16];                     /* "hsa", "cuda", "host" */
  uint32_t usable;                   /* 1 when at least one device is usable */
  uint32_t device_count;
  char message[LR_MESSAGE_CAPACITY]; /* why not usable, or library version */
} lr_backend_info_t;

typedef struct lr_device_properties_t {
  char backend[16];
  char name[LR_NAME_CAPACITY];  /* marketing or agent name */
  char arch[LR_NAME_CAPACITY];  /* gfx1100, sm_90, x86_64 */
  uint32_t backend_ordinal;     /* index among the backend's own devices */
  uint32_t compute_units;       /* CUs, SMs or CPU cores */
  uint32_t wave_size;           /* wavefront / warp size; 1 on host */
  uint32_t max_workgroup_size;
  lr_dim3_t max_workgroup_dims;
  uint64_t max_shared_memory_per_workgroup;
  uint64_t memory_bytes;
} lr_device_properties_t;

typedef enum lr_arg_kind_t {
  LR_ARG_BY_VALUE = 0,
  LR_ARG_GLOBAL_BUFFER = 1,   /* a device pointer */
  LR_ARG_DYNAMIC_SHARED = 2,  /* pointer to dynamic shared memory (AMD) */
  LR_ARG_HIDDEN = 3,          /* filled by the runtime (AMD implicit args) */
  LR_ARG_OTHER = 4
} lr_arg_kind_t;

typedef struct lr_kernel_arg_t {
  uint32_t offset;
  uint32_t size;
  lr_arg_kind_t kind;
  char value_kind[48];  /* code object's own name: by_value, hidden_block_count_x, ... */
  char name[64];        /* argument name when the code object records it */
  char type_name[64];   /* source type when recorded: "float", "uint32_t", PTX "f32"; "" otherwise */
} lr_kernel_arg_t;

typedef struct lr_kernel_properties_t {
  char name[LR_NAME_CAPACITY];
  uint32_t has_arg_layout;        /* 1 when the code object describes its args */
  uint32_t arg_count;             /* explicit + hidden */
  uint32_t explicit_arg_count;
  uint32_t kernarg_size;          /* total kernarg segment bytes */
  uint32_t explicit_kernarg_size; /* bytes the caller passes to lr_launch */
  uint32_t kernarg_align;
  uint32_t group_segment_size;    /* static shared memory */
  uint32_t private_segment_size;
  uint32_t max_workgroup_size;    /* 0 when unknown */
} lr_kernel_properties_t;

LRRT_API const char *lr_status_string(lr_status_t status);
/* Message of the last failed call on this thread; "" after success. */
LRRT_API const char *lr_last_error_message(void);
LRRT_API const char *lr_version_string(void);

/* Longest any synchronizing call waits for device work before it returns
 * LR_ERROR_TIMEOUT (a hung kernel); 0 waits forever (the default); at most
 * 10^12 ms (LR_ERROR_INVALID_ARGUMENT above). Process-wide,
 * callable before lr_init. Without a call, lr_init reads LRRT_WAIT_TIMEOUT_MS. */
LRRT_API lr_status_t lr_set_wait_timeout_ms(uint64_t milliseconds);
/* The limit in force (set, read from LRRT_WAIT_TIMEOUT_MS, or 0). */
LRRT_API lr_status_t lr_get_wait_timeout_ms(uint64_t *milliseconds);

/* How a synchronizing call waits: it polls the device for up to this long
 * (lowest latency for short work), then blocks, sleeping until the device
 * signals completion (no CPU burnt on long work). Default 2000 us; 0 blocks at
 * once; at most 60 s. The host backend caps the poll at 50 us (a polling
 * thread takes a core from its kernels). Process-wide, callable before
 * lr_init. Without a call, lr_init reads LRRT_WAIT_SPIN_US. */
LRRT_API lr_status_t lr_set_wait_spin_us(uint64_t microseconds);
/* The spin window in force (set, read from LRRT_WAIT_SPIN_US, or the default). */
LRRT_API lr_status_t lr_get_wait_spin_us(uint64_t *microseconds);

/* Checks every LRRT_* environment variable lrrt reads (docs/environment.md):
 * LR_ERROR_INVALID_ARGUMENT, with a message naming the first one set to a value
 * it does not take (counts are digits only and range-checked: "abc", "2s", "-1"
 * are refused), else LR_SUCCESS. Unset or empty is not set. lr_init makes the
 * same check first. Callable before lr_init. */
LRRT_API lr_status_t lr_check_environment(void);
/* Reads the LRRT_* number variable `name` as lrrt does: *is_set = 1 and *value,
 * or *is_set = 0 (and *value = 0) when it is unset or empty;
 * LR_ERROR_INVALID_ARGUMENT when its value is malformed or out of range,
 * LR_ERROR_NOT_FOUND when lrrt reads no number of that name. Callable before lr_init. */
LRRT_API lr_status_t lr_get_environment_u64(const char *name, uint64_t *value, int *is_set);

/* Initialises every backend that can be loaded; unusable ones stay listed.
 * Fails with LR_ERROR_INVALID_ARGUMENT when an LRRT_* variable is bad
 * (lr_check_environment). */
LRRT_API lr_status_t lr_init(void);
/* Waits for pending work on all devices before releasing runtime resources. */
LRRT_API lr_status_t lr_shutdown(void);

LRRT_API lr_status_t lr_backend_count(uint32_t *count);
LRRT_API lr_status_t lr_backend_get_info(uint32_t index, lr_backend_info_t *info);

/* Devices are numbered across backends: GPU backends (hsa, cuda) first, host
 * last, so device 0 is what "auto" picks. */
LRRT_API lr_status_t lr_device_count(uint32_t *count);
LRRT_API lr_status_t lr_device_open(uint32_t index, lr_device_t *device);
/* backend: "auto", "host", "hsa" or "cuda"; ordinal counts that backend's
 * devices. "auto" picks the first GPU device and falls back to host. */
LRRT_API lr_status_t lr_device_select(const char *backend, uint32_t ordinal,
                                      lr_device_t *device);
LRRT_API lr_status_t lr_device_name(lr_device_t device, char *name,
                                    size_t name_size);
LRRT_API lr_status_t lr_device_get_properties(lr_device_t device,
                                              lr_device_properties_t *props);
/* Backend-specific facts beyond lr_device_properties_t, as key/value text in
 * display order: driver version, clocks, PCIe link, ISA names, xnack mode,
 * queue sizes... */
LRRT_API lr_status_t lr_device_detail_count(lr_device_t device, uint32_t *count);
LRRT_API lr_status_t lr_device_get_detail(lr_device_t device, uint32_t index,
                                          char *key, size_t key_size,
                                          char *value, size_t value_size);

/* Where a device's peak memory bandwidth comes from. */
typedef enum lr_peak_bandwidth_source_t {
  LR_PEAK_BANDWIDTH_UNKNOWN = 0,
  LR_PEAK_BANDWIDTH_REPORTED = 1, /* the device's memory clock and bus width (cuda, hsa) */
  LR_PEAK_BANDWIDTH_MEASURED = 2  /* measured by lrrt (host: a parallel memcpy) */
} lr_peak_bandwidth_source_t;

/* What sweeps need to judge memory-bound kernels: the last-level cache (to
 * flush it for cold measurements) and the peak memory bandwidth (to report a
 * kernel's share of it). Zero means unknown; the method strings say how each
 * was found ("CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE", "sysfs cpu0 cache index3",
 * "memory clock 2619 MHz x 6144-bit bus x 2 (DDR)"). */
typedef struct lr_device_memory_info_t {
  uint64_t last_level_cache_bytes;
  double peak_bandwidth_bytes_per_second;
  uint32_t peak_bandwidth_source; /* lr_peak_bandwidth_source_t */
  char last_level_cache_method[128];
  char peak_bandwidth_method[128];
} lr_device_memory_info_t;

/* Fills info. The host backend measures its bandwidth on the first call for
 * a device (a parallel memcpy of a few hundred MiB, tens of milliseconds) and
 * returns the same numbers afterwards. */
LRRT_API lr_status_t lr_device_get_memory_info(lr_device_t device,
                                               lr_device_memory_info_t *info);

LRRT_API lr_status_t lr_queue_create(lr_device_t device, lr_queue_t **queue);
/* Waits for queue work before releasing the queue. An execution error of
 * that work is returned after the handle is gone. When the wait times out
 * (LR_ERROR_TIMEOUT), the work may still run: the handle is gone, the
 * queue itself is kept to the end of the process and the device is treated
 * as hung (as lr_free keeps memory after a timeout). */
LRRT_API lr_status_t lr_queue_destroy(lr_queue_t *queue);
/* Waits for work submitted to queue. */
LRRT_API lr_status_t lr_queue_synchronize(lr_queue_t *queue);

LRRT_API lr_status_t lr_event_create(lr_device_t device, lr_event_t **event);
/* Waits for the event if it is still pending, then releases the handle. */
LRRT_API lr_status_t lr_event_destroy(lr_event_t *event);
/* Enqueues a marker after previously submitted work on the device's default
 * queue. */
LRRT_API lr_status_t lr_event_record(lr_event_t *event);
/* Enqueues a marker after work previously submitted to queue. */
LRRT_API lr_status_t lr_event_record_on_queue(lr_event_t *event,
                                              lr_queue_t *queue);
/* Waits for a recorded marker to complete. */
LRRT_API lr_status_t lr_event_synchronize(lr_event_t *event);
/* Elapsed nanoseconds between two completed markers. */
LRRT_API lr_status_t lr_event_elapsed_time_ns(const lr_event_t *start,
                                              const lr_event_t *end,
                                              uint64_t *elapsed_ns);
/* Execution time of the single operation (copy or launch) that completed the
 * event when it was passed as a signal; LR_ERROR_NOT_SUPPORTED when the
 * backend cannot time it. */
LRRT_API lr_status_t lr_event_duration_ns(const lr_event_t *event,
                                          uint64_t *duration_ns);

LRRT_API lr_status_t lr_malloc(lr_device_t device, size_t size, void **ptr);
/* Waits for pending work on the device before releasing ptr. When that wait
 * times out (LR_ERROR_TIMEOUT: a hung kernel may still use the memory), ptr
 * stays allocated. */
LRRT_API lr_status_t lr_free(lr_device_t device, void *ptr);
/* Page-locked host memory the device can reach directly. */
LRRT_API lr_status_t lr_host_malloc(lr_device_t device, size_t size, void **ptr);
LRRT_API lr_status_t lr_host_free(lr_device_t device, void *ptr);

/* Declares memory lrrt did not allocate (a torch tensor's storage, a buffer
 * of another runtime, plain host memory on the host backend) so that graphs
 * of the device accept it like an allocation: steps may take pointers into
 * [ptr, ptr + bytes) and declare accesses there. lrrt never maps, copies or
 * frees it and does not check that the device can reach it: the caller
 * keeps it alive and reachable while any graph exec that uses it may
 * replay. Registering exactly the same range again counts a reference; a
 * range that overlaps an lrrt allocation or a different registered range is
 * LR_ERROR_INVALID_ARGUMENT naming both. Direct launches (lr_launch) take
 * any pointer and need no registration. */
LRRT_API lr_status_t lr_memory_register(lr_device_t device, void *ptr,
                                        size_t bytes);
/* Drops one reference of the range registered at ptr (its start). When the
 * last goes, graph execs that use the range fail their next launch with
 * LR_ERROR_INVALID_ARGUMENT naming the pointer, as after lr_free. */
LRRT_API lr_status_t lr_memory_unregister(lr_device_t device, void *ptr);

/* Waits for pending work on the device before performing the copy. */
LRRT_API lr_status_t lr_memcpy(lr_device_t device, void *dst, const void *src,
                               size_t size, lr_memcpy_kind_t kind);
/* Starts an asynchronous copy and records completion in event (may be NULL).
 * The copy depends on earlier dispatches on the device side; later lr_launch
 * calls depend on it. */
LRRT_API lr_status_t lr_memcpy_async(lr_device_t device, void *dst,
                                     const void *src, size_t size,
                                     lr_memcpy_kind_t kind, lr_event_t *event);
/* Starts an asynchronous copy after the listed events complete, without the
 * implicit dependency on earlier dispatches. */
LRRT_API lr_status_t lr_memcpy_async_with_dependencies(
    lr_device_t device, void *dst, const void *src, size_t size,
    lr_memcpy_kind_t kind, lr_event_t *event, lr_event_t *const *dependencies,
    size_t dependency_count);

/* Peer access between two devices of one backend (several GPUs in one
 * machine; lrrt bench p2p). can_access: 1 when `device`'s kernels and copies
 * can reach `peer`'s memory once peer access is enabled (cuda:
 * cuDeviceCanAccessPeer; host: every host device of LRRT_HOST_DEVICES, one
 * address space; hsa: not yet), else 0. A device is not its own peer, and
 * devices of different backends never are (0). */
LRRT_API lr_status_t lr_device_can_access_peer(lr_device_t device,
                                               lr_device_t peer,
                                               uint32_t *can_access);
/* Lets `device` reach `peer`'s memory (cuda: cuCtxEnablePeerAccess from
 * device's context; host: nothing to do). Idempotent; one direction.
 * LR_ERROR_NOT_SUPPORTED naming both devices when they cannot reach each
 * other, LR_ERROR_INVALID_ARGUMENT when they are the same device. */
LRRT_API lr_status_t lr_device_enable_peer_access(lr_device_t device,
                                                  lr_device_t peer);
/* Copies size bytes from src (memory of src_device) to dst (memory of
 * dst_device) on dst_device's copy queue, after the listed events (of either
 * device; NULL and 0 for none) and with no implicit dependency on earlier
 * work of either device. event (of dst_device, may be NULL) completes with
 * the copy. Needs lr_device_enable_peer_access(dst_device, src_device)
 * first (else LR_ERROR_INVALID_ARGUMENT naming both devices); the same
 * device twice is a device-to-device copy on its copy queue. */
LRRT_API lr_status_t lr_memcpy_peer_async(
    lr_device_t dst_device, void *dst, lr_device_t src_device, const void *src,
    size_t size, lr_event_t *event, lr_event_t *const *dependencies,
    size_t dependency_count);
/* Waits for pending work on both devices, copies as lr_memcpy_peer_async,
 * and waits for the copy. */
LRRT_API lr_status_t lr_memcpy_peer(lr_device_t dst_device, void *dst,
                                    lr_device_t src_device, const void *src,
                                    size_t size);

/* Loads a code object from memory; its format (HSACO, clang offload bundle,
 * cubin, fatbin, PTX, host shared object) is detected from its bytes. */
LRRT_API lr_status_t lr_module_load(lr_device_t device, const void *image,
                                    size_t image_size, lr_module_t **module);
/* light-rocm-runtime's name for lr_module_load. */
LRRT_API lr_status_t lr_module_load_hsaco(lr_device_t device, const void *image,
                                          size_t image_size,
                                          lr_module_t **module);
/* Waits for pending work on the module's device before destroying it.
 * Fails with LR_ERROR_BUSY while a graph or graph exec uses its kernels. */
LRRT_API lr_status_t lr_module_destroy(lr_module_t *module);
LRRT_API lr_status_t lr_module_kernel_count(lr_module_t *module, uint32_t *count);
LRRT_API lr_status_t lr_module_kernel_name(lr_module_t *module, uint32_t index,
                                           char *name, size_t name_size);
/* Which code object of the image was loaded and why, as one sentence:
 * "entry 'sm_90 cubin' of fatbin 0 in section .nv_fatbin: exact SASS for the
 * device (sm_90)", "the whole file: an AMDGPU code object". *size is the
 * buffer's capacity on entry and the bytes needed (with the NUL) on return;
 * LR_ERROR_INVALID_ARGUMENT when text is NULL or too small (*size then says
 * how much to allocate). */
LRRT_API lr_status_t lr_module_source(lr_module_t *module, char *text, size_t *size);

/* Triton cache entries (docs/triton.md). Reads the entry at `path` (its
 * folder or its <name>.json) and writes a JSON description: name, backend
 * ("cuda"/"hsa"), arch, warp_size, num_warps, block, shared, binary (the
 * code object's path), signature (Triton's AOT notation), params [{name,
 * type, pointer, divisibility, size, aot}] and hidden [{name, size, align,
 * per_program_factor}] (the scratch pointers lrrt appends: null when size is
 * 0, else per_program_factor x size bytes per program). Needs no device and
 * no lr_init. LR_ERROR_INVALID_IMAGE: not an entry lrrt launches faithfully
 * (the message names the file and field). *size as for lr_module_source. */
LRRT_API lr_status_t lr_triton_describe(const char *path, char *json, size_t *size);
/* The same from the metadata JSON and IR texts, as an in-process compiled
 * kernel holds them ("binary" is then ""). */
LRRT_API lr_status_t lr_triton_describe_texts(const char *metadata_json, const char *ir_text,
                                              char *json, size_t *size);

/* Kernel handles are owned by their module. LR_ERROR_NOT_SUPPORTED: the
 * kernel needs a runtime service the backend does not provide (hsa: a
 * hostcall buffer, a device heap, device-side enqueue, ...; the message names
 * the kernel and each service, docs/backends/hsa.md lists them). */
LRRT_API lr_status_t lr_kernel_get(lr_module_t *module, const char *name,
                                   lr_kernel_t **kernel);
LRRT_API lr_status_t lr_kernel_get_properties(lr_kernel_t *kernel,
                                              lr_kernel_properties_t *props);
LRRT_API lr_status_t lr_kernel_get_arg(lr_kernel_t *kernel, uint32_t index,
                                       lr_kernel_arg_t *arg);

/* What a kernel promises about itself, opt-in (lr_kernel_set_flags). */
typedef enum lr_kernel_flags_t {
  /* Programmatic dependent launch (cuda, sm_90+): the kernel waits for the
   * grid it depends on (griddepcontrol.wait / cudaGridDependencySynchronize)
   * before it reads or writes any memory another kernel touches (RAW, WAR
   * and WAW alike: the producer may still be running). cuda may then start
   * it while its producer drains: a graph edge between two such kernels is
   * programmatic, and an eager launch gets programmatic stream
   * serialization. A kernel that does not wait computes wrong results under
   * this flag, which is why it is opt-in. hsa and host accept the flag and
   * ignore it. Triton kernels whose metadata says launch_pdl get it from the
   * manifest layer. */
  LR_KERNEL_WAITS_FOR_PRODUCER = 1
} lr_kernel_flags_t;
/* Sets the kernel's lr_kernel_flags_t bits, for launches and graph steps
 * added afterwards (a graph step keeps the flags it was recorded with).
 * Unknown bits are LR_ERROR_INVALID_ARGUMENT. */
LRRT_API lr_status_t lr_kernel_set_flags(lr_kernel_t *kernel, uint32_t flags);
LRRT_API lr_status_t lr_kernel_get_flags(lr_kernel_t *kernel, uint32_t *flags);

/* Enqueues a dispatch on the device's default queue and returns once it is
 * submitted. Execution errors surface at the next synchronizing call. args
 * holds the explicit kernel arguments packed as the kernel expects them;
 * hidden arguments are added by the runtime. */
LRRT_API lr_status_t lr_launch(lr_kernel_t *kernel,
                               const lr_launch_config_t *config,
                               const void *args, size_t args_size);
LRRT_API lr_status_t lr_launch_with_dependencies(
    lr_kernel_t *kernel, const lr_launch_config_t *config, const void *args,
    size_t args_size, lr_event_t *const *dependencies, size_t dependency_count);
/* Enqueues on queue without implicit dependencies. */
LRRT_API lr_status_t lr_launch_on_queue(lr_queue_t *queue, lr_kernel_t *kernel,
                                        const lr_launch_config_t *config,
                                        const void *args, size_t args_size);
LRRT_API lr_status_t lr_launch_on_queue_with_dependencies(
    lr_queue_t *queue, lr_kernel_t *kernel, const lr_launch_config_t *config,
    const void *args, size_t args_size, lr_event_t *const *dependencies,
    size_t dependency_count);

/* One launch as one block, for callers that pay per call argument (a
 * Python launcher through ctypes): this header, then args_size bytes of
 * packed kernel arguments starting at offset sizeof(lr_launch_block_t) (32).
 * queue NULL launches on the kernel's device's default queue (as lr_launch),
 * else on queue (as lr_launch_on_queue). The block is read during the call
 * only, and needs no particular alignment. The handles are looked up before
 * use: one that is not live is LR_ERROR_INVALID_ARGUMENT. */
typedef struct lr_launch_block_t {
  lr_kernel_t *kernel;
  const lr_launch_config_t *config;
  lr_queue_t *queue;
  uint64_t args_size;
} lr_launch_block_t;
LRRT_API lr_status_t lr_launch_block(const lr_launch_block_t *block);

/* Waits for all previously enqueued work on the device (every queue). */
LRRT_API lr_status_t lr_synchronize(lr_device_t device);

LRRT_API lr_status_t lr_get_memory_stats(lr_device_t device,
                                         lr_memory_stats_t *stats);
/* Keeps live bytes, sets peak to live and every counter to zero. */
LRRT_API lr_status_t lr_reset_memory_stats(lr_device_t device);

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

/* ---- Tensor maps (TMA descriptors; cuda, compute capability 9.0+) -------
 * A tensor map is the 128-byte opaque descriptor a Hopper kernel's TMA
 * copies read (CUtensorMap): a tiled view of a tensor in device memory. It is
 * passed to a kernel by value (a `const __grid_constant__ CUtensorMap`
 * parameter: 128 bytes at a 64-byte aligned offset). The enums' values are
 * CUDA's (CUtensorMapDataType, ...), so they mean what the CUDA driver API
 * documents. Dimension 0 is the innermost (contiguous) one. */
#define LR_TENSOR_MAP_BYTES 128
#define LR_TENSOR_MAP_ALIGN 64
#define LR_TENSOR_MAP_MAX_RANK 5

typedef enum lr_tensor_map_dtype_t {
  LR_TENSOR_MAP_U8 = 0,
  LR_TENSOR_MAP_U16 = 1,
  LR_TENSOR_MAP_U32 = 2,
  LR_TENSOR_MAP_I32 = 3,
  LR_TENSOR_MAP_U64 = 4,
  LR_TENSOR_MAP_I64 = 5,
  LR_TENSOR_MAP_F16 = 6,
  LR_TENSOR_MAP_F32 = 7,
  LR_TENSOR_MAP_F64 = 8,
  LR_TENSOR_MAP_BF16 = 9,
  LR_TENSOR_MAP_F32_FTZ = 10,
  LR_TENSOR_MAP_TF32 = 11,
  LR_TENSOR_MAP_TF32_FTZ = 12
} lr_tensor_map_dtype_t;

typedef enum lr_tensor_map_interleave_t {
  LR_TENSOR_MAP_INTERLEAVE_NONE = 0,
  LR_TENSOR_MAP_INTERLEAVE_16B = 1,
  LR_TENSOR_MAP_INTERLEAVE_32B = 2
} lr_tensor_map_interleave_t;

typedef enum lr_tensor_map_swizzle_t {
  LR_TENSOR_MAP_SWIZZLE_NONE = 0,
  LR_TENSOR_MAP_SWIZZLE_32B = 1,
  LR_TENSOR_MAP_SWIZZLE_64B = 2,
  LR_TENSOR_MAP_SWIZZLE_128B = 3
} lr_tensor_map_swizzle_t;

typedef enum lr_tensor_map_l2_promotion_t {
  LR_TENSOR_MAP_L2_PROMOTION_NONE = 0,
  LR_TENSOR_MAP_L2_PROMOTION_64B = 1,
  LR_TENSOR_MAP_L2_PROMOTION_128B = 2,
  LR_TENSOR_MAP_L2_PROMOTION_256B = 3
} lr_tensor_map_l2_promotion_t;

typedef enum lr_tensor_map_oob_fill_t {
  LR_TENSOR_MAP_OOB_FILL_ZERO = 0, /* out-of-bounds elements read as zero */
  LR_TENSOR_MAP_OOB_FILL_NAN = 1   /* ... as NaN (float types only) */
} lr_tensor_map_oob_fill_t;

typedef struct lr_tensor_map_desc_t {
  uint32_t dtype; /* lr_tensor_map_dtype_t */
  uint32_t rank;  /* 1..5 (3..5 with interleave) */
  /* A device pointer (lr_malloc), 16-byte aligned (32 with 32B interleave). */
  void *global_address;
  uint64_t global_dims[LR_TENSOR_MAP_MAX_RANK];      /* elements, 1..2^32 */
  uint64_t global_strides[LR_TENSOR_MAP_MAX_RANK - 1]; /* bytes, of dims 1..rank-1 */
  uint32_t box_dims[LR_TENSOR_MAP_MAX_RANK];         /* elements, 1..256 */
  uint32_t element_strides[LR_TENSOR_MAP_MAX_RANK];  /* 1..8 */
  uint32_t interleave;   /* lr_tensor_map_interleave_t */
  uint32_t swizzle;      /* lr_tensor_map_swizzle_t */
  uint32_t l2_promotion; /* lr_tensor_map_l2_promotion_t */
  uint32_t oob_fill;     /* lr_tensor_map_oob_fill_t */
} lr_tensor_map_desc_t;

/* Writes the LR_TENSOR_MAP_BYTES-byte descriptor of `desc` to out128 (any
 * alignment; copy it into the kernel's arguments at a 64-byte aligned
 * offset). LR_ERROR_INVALID_ARGUMENT naming the field when desc breaks one of
 * the CUDA driver's rules (checked on every backend, before the device is
 * asked); LR_ERROR_NOT_SUPPORTED on host and hsa ("tensor maps are a CUDA
 * sm_90+ feature"), on a cuda device below compute capability 9.0, and with a
 * driver without cuTensorMapEncodeTiled. */
/* The same rules without a device (no lr_init needed): LR_SUCCESS, or
 * LR_ERROR_INVALID_ARGUMENT with a message naming the field ("tensor map
 * box_dims[0]: ..."). Manifest parsers check a descriptor with it before any
 * device is opened. */
LRRT_API lr_status_t lr_tensor_map_validate(const lr_tensor_map_desc_t *desc);

LRRT_API lr_status_t lr_tensor_map_encode(lr_device_t device,
                                          const lr_tensor_map_desc_t *desc,
                                          void *out128);

#ifdef __cplusplus
}
#endif

#endif /* LRRT_LRRT_H_ */

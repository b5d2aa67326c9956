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
  LR_ERROR_DEVICE_LOST = 12     /* the device context is no longer usable */
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
 * LR_ERROR_TIMEOUT (a hung kernel); 0 waits forever (the default). Process-wide,
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

/* Initialises every backend that can be loaded; unusable ones stay listed. */
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

LRRT_API lr_status_t lr_queue_create(lr_device_t device, lr_queue_t **queue);
/* Waits for queue work before releasing the queue. */
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
/* Waits for pending work on the device before releasing ptr. */
LRRT_API lr_status_t lr_free(lr_device_t device, void *ptr);
/* Page-locked host memory the device can reach directly. */
LRRT_API lr_status_t lr_host_malloc(lr_device_t device, size_t size, void **ptr);
LRRT_API lr_status_t lr_host_free(lr_device_t device, void *ptr);

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

/* Loads a code object from memory; its format (HSACO, clang offload bundle,
 * cubin, fatbin, PTX, host shared object) is detected from its bytes. */
LRRT_API lr_status_t lr_module_load(lr_device_t device, const void *image,
                                    size_t image_size, lr_module_t **module);
/* light-rocm-runtime's name for lr_module_load. */
LRRT_API lr_status_t lr_module_load_hsaco(lr_device_t device, const void *image,
                                          size_t image_size,
                                          lr_module_t **module);
/* Waits for pending work on the module's device before destroying it. */
LRRT_API lr_status_t lr_module_destroy(lr_module_t *module);
LRRT_API lr_status_t lr_module_kernel_count(lr_module_t *module, uint32_t *count);
LRRT_API lr_status_t lr_module_kernel_name(lr_module_t *module, uint32_t index,
                                           char *name, size_t name_size);

/* Kernel handles are owned by their module. */
LRRT_API lr_status_t lr_kernel_get(lr_module_t *module, const char *name,
                                   lr_kernel_t **kernel);
LRRT_API lr_status_t lr_kernel_get_properties(lr_kernel_t *kernel,
                                              lr_kernel_properties_t *props);
LRRT_API lr_status_t lr_kernel_get_arg(lr_kernel_t *kernel, uint32_t index,
                                       lr_kernel_arg_t *arg);

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

/* Waits for all previously enqueued work on the device (every queue). */
LRRT_API lr_status_t lr_synchronize(lr_device_t device);

LRRT_API lr_status_t lr_get_memory_stats(lr_device_t device,
                                         lr_memory_stats_t *stats);
/* Keeps live bytes, sets peak to live and every counter to zero. */
LRRT_API lr_status_t lr_reset_memory_stats(lr_device_t device);

#ifdef __cplusplus
}
#endif

#endif /* LRRT_LRRT_H_ */

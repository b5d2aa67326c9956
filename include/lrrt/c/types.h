/* lrrt C ABI: the export macro, the version, and the status codes, handles and
 * structs the concepts share (declared together, in lrrt.h's order).
 * One concept of lrrt/lrrt.h, the header to include; its opening comment
 * states the rules every function follows (status codes, errors, threads). */
#ifndef LRRT_C_TYPES_H_
#define LRRT_C_TYPES_H_

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

#ifdef __cplusplus
}
#endif

#endif /* LRRT_C_TYPES_H_ */

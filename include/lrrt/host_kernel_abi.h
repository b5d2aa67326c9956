/*
 * The host backend's kernel ABI: how a shared object built for the CPU
 * exposes kernels to lrrt. Modelled on IREE's local executable ABI: the
 * runtime calls one entry point per workgroup with a read-only dispatch state
 * (shared by every workgroup of the launch) and a per-workgroup state.
 *
 * A host code object is an ELF shared object for the host architecture that
 * exports `lrrt_host_library_query` (and, for tools, one kernel record per
 * kernel: see below). Kernels written with kernels/lrrt_kernel.h get all of
 * this generated; hand-written libraries can fill the tables themselves.
 */
#ifndef LRRT_HOST_KERNEL_ABI_H_
#define LRRT_HOST_KERNEL_ABI_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LRRT_HOST_ABI_VERSION 1u

typedef struct lrrt_host_dispatch_state_t {
  uint32_t workgroup_size[3];   /* work-items per workgroup (blockDim) */
  uint32_t workgroup_count[3];  /* workgroups per dimension (gridDim) */
  const void *kernargs;         /* explicit arguments, packed as on a GPU */
  size_t kernarg_size;
  uint32_t dynamic_shared_bytes;
} lrrt_host_dispatch_state_t;

typedef struct lrrt_host_workgroup_state_t {
  uint32_t workgroup_id[3];
  void *dynamic_shared;  /* dynamic_shared_bytes of scratch, 64-byte aligned */
  uint32_t worker_id;    /* which pool thread runs this workgroup */
} lrrt_host_workgroup_state_t;

/* Returns 0 on success; any other value is reported as a kernel fault with
 * this code. Exceptions must not escape (the generated entry catches them). */
typedef int (*lrrt_host_kernel_fn_t)(const lrrt_host_dispatch_state_t *dispatch,
                                     const lrrt_host_workgroup_state_t *workgroup);

typedef enum lrrt_host_arg_kind_t {
  LRRT_HOST_ARG_VALUE = 0,
  LRRT_HOST_ARG_POINTER = 1
} lrrt_host_arg_kind_t;

typedef struct lrrt_host_arg_t {
  const char *name;
  const char *type_name;
  uint32_t offset;
  uint32_t size;
  uint32_t kind; /* lrrt_host_arg_kind_t */
} lrrt_host_arg_t;

typedef struct lrrt_host_kernel_t {
  const char *name;
  lrrt_host_kernel_fn_t entry;
  uint32_t arg_count;
  const lrrt_host_arg_t *args;
  uint32_t kernarg_size;
  uint32_t kernarg_align;
  uint32_t static_shared_bytes; /* informational */
} lrrt_host_kernel_t;

typedef struct lrrt_host_library_t {
  uint32_t abi_version;  /* LRRT_HOST_ABI_VERSION */
  uint32_t kernel_count;
  const lrrt_host_kernel_t *kernels;
} lrrt_host_library_t;

/* Exported by every host code object. Returns NULL when the library cannot
 * serve abi_version. */
typedef const lrrt_host_library_t *(*lrrt_host_library_query_fn_t)(
    uint32_t abi_version);
#define LRRT_HOST_LIBRARY_QUERY_SYMBOL "lrrt_host_library_query"

/* Kernel records: a description of each kernel that tools read from the
 * library's ELF file without loading it (no constructor runs), e.g.
 * `lrrt inspect`. Each kernel exports one relocation-free data object named
 * LRRT_HOST_KERNEL_RECORD_PREFIX + kernel name (lrrt_host_kernel_record_saxpy)
 * in the dynamic symbol table. kernels/lrrt_kernel.h generates them; a
 * library without records still loads and runs (the runtime uses the query
 * function above), only tools cannot list its kernels.
 *
 * Layout, little-endian, every offset counted from the record's first byte:
 *   lrrt_host_kernel_record_t                   (32 bytes)
 *   lrrt_host_arg_record_t[arg_count]           (20 bytes each)
 *   NUL-terminated strings the offsets point at
 * `size` covers all of it (padding included) and is at most the symbol's
 * st_size. */
#define LRRT_HOST_KERNEL_RECORD_PREFIX "lrrt_host_kernel_record_"
#define LRRT_HOST_KERNEL_RECORD_MAGIC 0x4b48524cu /* "LRHK" */
#define LRRT_HOST_KERNEL_RECORD_VERSION 1u

typedef struct lrrt_host_kernel_record_t {
  uint32_t magic;   /* LRRT_HOST_KERNEL_RECORD_MAGIC */
  uint32_t version; /* LRRT_HOST_KERNEL_RECORD_VERSION */
  uint32_t size;    /* bytes of the whole record */
  uint32_t name;    /* offset of the kernel's name */
  uint32_t kernarg_size;
  uint32_t kernarg_align;
  uint32_t static_shared_bytes;
  uint32_t arg_count;
} lrrt_host_kernel_record_t;

typedef struct lrrt_host_arg_record_t {
  uint32_t name;      /* offset of the argument's name */
  uint32_t type_name; /* offset of the type as written in the source */
  uint32_t offset;
  uint32_t size;
  uint32_t kind; /* lrrt_host_arg_kind_t */
} lrrt_host_arg_record_t;

#ifdef __cplusplus
}
#endif

#endif /* LRRT_HOST_KERNEL_ABI_H_ */

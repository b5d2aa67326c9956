/* lrrt C ABI: modules (code objects), Triton cache entries, kernels, kernel flags,
 * launches, launch blocks, and lr_synchronize (the wait for every queue).
 * One concept of lrrt/lrrt.h, the header to include; its opening comment
 * states the rules every function follows (status codes, errors, threads). */
#ifndef LRRT_C_MODULE_H_
#define LRRT_C_MODULE_H_

#include "lrrt/c/types.h"

#ifdef __cplusplus
extern "C" {
#endif

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

#ifdef __cplusplus
}
#endif

#endif /* LRRT_C_MODULE_H_ */

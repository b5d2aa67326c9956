/* lrrt C ABI: allocations, pinned host memory, registration, copies, peer access.
 * One concept of lrrt/lrrt.h, the header to include; its opening comment
 * states the rules every function follows (status codes, errors, threads). */
#ifndef LRRT_C_MEMORY_H_
#define LRRT_C_MEMORY_H_

#include "lrrt/c/types.h"

#ifdef __cplusplus
extern "C" {
#endif

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

#ifdef __cplusplus
}
#endif

#endif /* LRRT_C_MEMORY_H_ */

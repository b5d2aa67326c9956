/* lrrt C ABI: queues and events.
 * One concept of lrrt/lrrt.h, the header to include; its opening comment
 * states the rules every function follows (status codes, errors, threads). */
#ifndef LRRT_C_QUEUE_H_
#define LRRT_C_QUEUE_H_

#include "lrrt/c/types.h"

#ifdef __cplusplus
extern "C" {
#endif

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

#ifdef __cplusplus
}
#endif

#endif /* LRRT_C_QUEUE_H_ */

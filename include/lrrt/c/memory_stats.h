/* lrrt C ABI: the device's memory counters (lr_memory_stats_t is in types.h).
 * One concept of lrrt/lrrt.h, the header to include; its opening comment
 * states the rules every function follows (status codes, errors, threads). */
#ifndef LRRT_C_MEMORY_STATS_H_
#define LRRT_C_MEMORY_STATS_H_

#include "lrrt/c/types.h"

#ifdef __cplusplus
extern "C" {
#endif

LRRT_API lr_status_t lr_get_memory_stats(lr_device_t device,
                                         lr_memory_stats_t *stats);
/* Keeps live bytes, sets peak to live and every counter to zero. */
LRRT_API lr_status_t lr_reset_memory_stats(lr_device_t device);

#ifdef __cplusplus
}
#endif

#endif /* LRRT_C_MEMORY_STATS_H_ */

/* lrrt C ABI: process-wide wait settings, the environment check, lr_init and
 * lr_shutdown.
 * One concept of lrrt/lrrt.h, the header to include; its opening comment
 * states the rules every function follows (status codes, errors, threads). */
#ifndef LRRT_C_RUNTIME_H_
#define LRRT_C_RUNTIME_H_

#include "lrrt/c/types.h"

#ifdef __cplusplus
extern "C" {
#endif

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

#ifdef __cplusplus
}
#endif

#endif /* LRRT_C_RUNTIME_H_ */

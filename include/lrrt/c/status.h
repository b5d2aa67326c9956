/* lrrt C ABI: status strings, the per-thread error message, the version string.
 * One concept of lrrt/lrrt.h, the header to include; its opening comment
 * states the rules every function follows (status codes, errors, threads). */
#ifndef LRRT_C_STATUS_H_
#define LRRT_C_STATUS_H_

#include "lrrt/c/types.h"

#ifdef __cplusplus
extern "C" {
#endif

LRRT_API const char *lr_status_string(lr_status_t status);
/* Message of the last failed call on this thread; "" after success. */
LRRT_API const char *lr_last_error_message(void);
LRRT_API const char *lr_version_string(void);

#ifdef __cplusplus
}
#endif

#endif /* LRRT_C_STATUS_H_ */

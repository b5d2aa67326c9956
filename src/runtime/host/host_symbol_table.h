// The symbols the host backend resolves with dlsym, one X(name, type) each.
// The host backend loads no driver library; what it loads are kernel
// libraries (shared objects built against include/lrrt/host_kernel_abi.h),
// and this is what it looks up in each. One entry today: the library's
// kernel table is reached through its query function.
#pragma once

#include "lrrt/host_kernel_abi.h"

#define LRRT_HOST_SYMBOLS(X) X(lrrt_host_library_query, lrrt_host_library_query_fn_t)

// Does nothing: measures dispatch overhead. The argument keeps the kernarg
// path exercised.
#include "lrrt_kernel.h"

LRRT_KERNEL(empty, (uint32_t, unused)) {
  (void)unused;
}

// Writes through a bad pointer: the GPU reports an illegal address, which
// lrrt must turn into LR_ERROR_KERNEL_FAULT naming this kernel (and `lrrt run`
// into exit code 3) instead of hanging.
#include "lrrt_kernel.h"

LRRT_KERNEL(write_bad_pointer, (uint64_t, address), (uint32_t, value)) {
  LRRT_FOR_EACH_THREAD {
    uint32_t* p = (uint32_t*)(address + 4096ull * LRRT_GLOBAL_ID_X);
    *p = value;
  }
}

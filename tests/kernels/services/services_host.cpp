// The stand-in libhsa's build of printf.cl and of hip_services.hip's
// services_plain (services.host.so in build/tests/kernels/services): the
// stand-in runs a dispatch with the host
// build of the kernel of the same name, handing it the whole AQL kernarg
// buffer, so these kernels do what the AMD code does: read the printf
// buffer's address from the hidden_printf_buffer slot (offset 88: the
// implicit arguments start at 16, after the explicit ones, and the slot is
// at 72 in code object v5), reserve each record with the same
// compare-and-swap on the buffer's first word and the same capacity check as
// printf.cl's __printf_alloc, and write the format id and the arguments at
// the sizes the code object's amdhsa.printf lists. test_hsa_services.cpp
// checks that services_printf.gfx1100.hsaco has exactly these offsets, ids
// and sizes, so a change to either side fails there.
//
// Only for the stand-in: on the host backend the kernarg buffer holds the
// explicit arguments only.
#include <atomic>
#include <cstring>

#include "lrrt_kernel.h"

namespace {

constexpr size_t kPrintfSlot = 88;
constexpr uint32_t kIdEach = 1;   // "item %u of %u\n"
constexpr uint32_t kIdLine = 2;   // services_printf's line

// printf.cl's __printf_alloc on the host: nullptr when the record does not fit.
unsigned char* printf_alloc(const void* kernargs, uint32_t bytes) {
  uint64_t address;
  std::memcpy(&address, static_cast<const unsigned char*>(kernargs) + kPrintfSlot, 8);
  auto* header = reinterpret_cast<uint32_t*>(address);
  if (!header) return nullptr;
  std::atomic_ref<uint32_t> used_ref(header[0]);
  const uint32_t capacity = header[1];
  uint32_t used = used_ref.load(std::memory_order_relaxed);
  do {
    if (8u + used + bytes > capacity) return nullptr;
  } while (!used_ref.compare_exchange_strong(used, used + bytes, std::memory_order_relaxed));
  return reinterpret_cast<unsigned char*>(header) + 8 + used;
}

template <typename T>
unsigned char* put(unsigned char* p, T value) {
  std::memcpy(p, &value, sizeof value);
  return p + sizeof value;
}

}  // namespace

LRRT_KERNEL(services_printf, (int32_t*, out), (int32_t, n), (float, f)) {
  LRRT_FOR_EACH_THREAD {
    const uint32_t i = LRRT_GLOBAL_ID_X;
    if (i == 0) {
      // The id, n, f (a float stays 4 bytes), n, 'Q' (widened to int), "str"
      // and "a:b" (inline, 4 bytes each), a long, an int4: 52 bytes.
      if (unsigned char* r = printf_alloc(lrrt_dispatch->kernargs, 52)) {
        r = put<uint32_t>(r, kIdLine);
        r = put<int32_t>(r, n);
        r = put<float>(r, f);
        r = put<int32_t>(r, n);
        r = put<int32_t>(r, 'Q');
        std::memcpy(r, "str", 4);  // with its NUL: 4 bytes, as the GPU writes it
        std::memcpy(r + 4, "a:b", 4);
        r += 8;
        r = put<int64_t>(r, int64_t(n) * 1000000007LL);
        const int32_t v[4] = {n, n + 1, -n, 7};
        std::memcpy(r, v, sizeof v);
      }
    }
    out[i] = n;
  }
}

LRRT_KERNEL(services_printf_each, (uint32_t*, out), (uint32_t, count)) {
  LRRT_FOR_EACH_THREAD {
    const uint32_t i = LRRT_GLOBAL_ID_X;
    if (i < count) {
      if (unsigned char* r = printf_alloc(lrrt_dispatch->kernargs, 12)) {
        r = put<uint32_t>(r, kIdEach);
        r = put<uint32_t>(r, i);
        put<uint32_t>(r, count);
      }
      out[i] = i;
    }
  }
}

// hip_services.hip's kernel that needs no service.
LRRT_KERNEL(services_plain, (int32_t*, out), (int32_t, n)) {
  LRRT_FOR_EACH_THREAD { out[LRRT_LOCAL_ID_X] = n; }
}

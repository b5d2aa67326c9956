// Test-only OpenCL kernels that call printf (tests/hsa/CMakeLists.txt builds
// services_printf.gfx1100.hsaco with clang-19 -x cl -cl-std=CL2.0
// -nogpulib). clang's AMDGPUPrintfRuntimeBinding pass turns each printf into
// a call to __printf_alloc (reserve the record's bytes in the printf buffer)
// and stores of the format id and the arguments, and lists the format in the
// metadata (amdhsa.printf) and hidden_printf_buffer among the kernel's
// arguments. Without ROCm's device libraries (-nogpulib) __printf_alloc is
// not there, so it is written here from the ABI: the buffer's address is
// the hidden_printf_buffer argument (offset 72 of the implicit arguments in
// code object v5); its first word is the bytes written so far, its second
// the capacity; a record that would pass the capacity is not written.
//
// The stand-in libhsa runs printf_host.cpp instead of this code: it writes
// the records these printf calls write (test_hsa_services.cpp checks the
// metadata says so).

__global char* __printf_alloc(uint bytes) {
  __constant ulong* implicit = (__constant ulong*)__builtin_amdgcn_implicitarg_ptr();
  __global atomic_uint* header = (__global atomic_uint*)implicit[9];
  uint capacity = ((__global uint*)header)[1];
  uint used = __opencl_atomic_load(header, memory_order_relaxed, memory_scope_device);
  do {
    if (8u + used + bytes > capacity) return 0;
  } while (!__opencl_atomic_compare_exchange_strong(header, &used, used + bytes, memory_order_relaxed,
                                                    memory_order_relaxed, memory_scope_device));
  return (__global char*)header + 8 + used;
}

uint global_id(void) {
  return __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() +
         __builtin_amdgcn_workitem_id_x();
}

// services_printf_variant.gfx1100.hsaco is built with -DSERVICES_VARIANT:
// the same kernels, ids and argument sizes, another text, so a record decoded
// with the wrong code object's table shows.
#ifdef SERVICES_VARIANT
#define SERVICES_PREFIX "variant"
#else
#define SERVICES_PREFIX "services_printf"
#endif

// Format id 2: one line from work-item 0 with every kind of argument.
__kernel void services_printf(__global int* out, int n, float f) {
  uint i = global_id();
  if (i == 0)
    printf(SERVICES_PREFIX ": n=%d f=%.3f hex=%#x c=%c s=%s:%s wide=%ld v=%v4hld 100%%\n", n, f, n, 'Q',
           "str", "a:b", (long)n * 1000000007L, (int4)(n, n + 1, -n, 7));
  out[i] = n;
}

// Format id 1: one line from every work-item.
__kernel void services_printf_each(__global uint* out, uint count) {
  uint i = global_id();
  if (i < count) {
    printf("item %u of %u\n", i, count);
    out[i] = i;
  }
}

// Test-only HIP kernels that need runtime services lrrt does not provide
// (tests/hsa/CMakeLists.txt builds services_hip.gfx1100.hsaco with the
// project's HIP flags, -nogpuinc -nogpulib; services_hip_buffered with
// -mprintf-kind=buffered; services_hip_o0 at -O0, where every kernel, the
// plain one too, lists every service). The hsa backend must refuse them by
// name, and run services_plain of services_hip.
//
// Without ROCm's device libraries the functions HIP's printf and malloc call
// are not there, so they are stubs here that read what ROCm's ockl reads:
// the hostcall buffer's address (implicit argument at 80 in code object v5)
// and the heap's (at 96). That access is what makes clang list
// hidden_hostcall_buffer and hidden_heap_v1 in the metadata, as it does for
// the real printf and malloc. The stubs do not implement the services; the
// kernels are never run.
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
typedef unsigned long long u64;

extern "C" __device__ int printf(const char*, ...);

// clang lowers printf (-mprintf-kind=hostcall, HIP's default) to these three.
extern "C" __device__ u64 __ockl_printf_begin(u64 v) {
  const u64* implicit = (const u64*)__builtin_amdgcn_implicitarg_ptr();
  return implicit[10] + v;  // hidden_hostcall_buffer
}
extern "C" __device__ u64 __ockl_printf_append_string_n(u64 d, const char*, u64 n, int) { return d + n; }
extern "C" __device__ u64 __ockl_printf_append_args(u64 d, int, u64 a, u64, u64, u64, u64, u64, u64, int) {
  *(volatile u64*)d = a;
  return d;
}

// clang -mprintf-kind=buffered lowers printf to this instead (HIP's buffered
// printf, whose records lrrt does not decode): the printf buffer's address,
// hidden_printf_buffer, at 72.
extern "C" __device__ char* __printf_alloc(unsigned bytes) {
  const u64* implicit = (const u64*)__builtin_amdgcn_implicitarg_ptr();
  return (char*)implicit[9] + bytes;
}

// What device-side malloc reaches: the heap (hidden_heap_v1).
__device__ void* heap_alloc(u64 bytes) {
  const u64* implicit = (const u64*)__builtin_amdgcn_implicitarg_ptr();
  return (void*)(implicit[12] + bytes);
}

extern "C" __global__ void services_hostcall(int* out, int n) {
  printf("hostcall %d\n", n);
  out[0] = n;
}

extern "C" __global__ void services_heap(int* out, int n) {
  int* p = (int*)heap_alloc(64);
  p[0] = n;
  out[0] = p[0];
}

// Needs nothing: lrrt runs it (the same code object holds it).
extern "C" __global__ void services_plain(int* out, int n) { out[__builtin_amdgcn_workitem_id_x()] = n; }

// Portable kernel sources for lrrt: one source file builds for the host
// backend (C++ shared object), for NVIDIA (nvcc, -x cu) and for AMD (clang-19
// -x hip, no HIP headers).
//
// A kernel is written per workgroup:
//
//   LRRT_KERNEL(saxpy, (float, a), (const float*, x), (float*, y), (uint32_t, n)) {
//     LRRT_FOR_EACH_THREAD {
//       uint32_t i = LRRT_GLOBAL_ID_X;
//       if (i < n) y[i] = a * x[i] + y[i];
//     }
//   }
//
// Rules that keep one source correct everywhere:
//  - Code that runs per work-item goes inside LRRT_FOR_EACH_THREAD { ... }.
//    On a GPU it runs once per thread; on the host it loops over the
//    workgroup's work-items. Separate phases with LRRT_BARRIER between two
//    such blocks; never put LRRT_BARRIER inside one.
//  - Values that must survive a barrier live in LRRT_SHARED arrays indexed by
//    LRRT_LOCAL_LINEAR_ID, not in local variables.
//  - No `return` inside LRRT_FOR_EACH_THREAD (on the host it would end the
//    whole workgroup): guard with `if` instead.
#pragma once

#define LRRT_EXPAND(x) x
#define LRRT_NARGS_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, N, ...) N
#define LRRT_NARGS(...) \
  LRRT_EXPAND(LRRT_NARGS_(__VA_ARGS__, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0))
#define LRRT_CAT_(a, b) a##b
#define LRRT_CAT(a, b) LRRT_CAT_(a, b)

// Applies M to each "(type, name)" pair, separated by SEP().
#define LRRT_MAP_1(M, S, p) M p
#define LRRT_MAP_2(M, S, p, ...) M p S() LRRT_EXPAND(LRRT_MAP_1(M, S, __VA_ARGS__))
#define LRRT_MAP_3(M, S, p, ...) M p S() LRRT_EXPAND(LRRT_MAP_2(M, S, __VA_ARGS__))
#define LRRT_MAP_4(M, S, p, ...) M p S() LRRT_EXPAND(LRRT_MAP_3(M, S, __VA_ARGS__))
#define LRRT_MAP_5(M, S, p, ...) M p S() LRRT_EXPAND(LRRT_MAP_4(M, S, __VA_ARGS__))
#define LRRT_MAP_6(M, S, p, ...) M p S() LRRT_EXPAND(LRRT_MAP_5(M, S, __VA_ARGS__))
#define LRRT_MAP_7(M, S, p, ...) M p S() LRRT_EXPAND(LRRT_MAP_6(M, S, __VA_ARGS__))
#define LRRT_MAP_8(M, S, p, ...) M p S() LRRT_EXPAND(LRRT_MAP_7(M, S, __VA_ARGS__))
#define LRRT_MAP_9(M, S, p, ...) M p S() LRRT_EXPAND(LRRT_MAP_8(M, S, __VA_ARGS__))
#define LRRT_MAP_10(M, S, p, ...) M p S() LRRT_EXPAND(LRRT_MAP_9(M, S, __VA_ARGS__))
#define LRRT_MAP_11(M, S, p, ...) M p S() LRRT_EXPAND(LRRT_MAP_10(M, S, __VA_ARGS__))
#define LRRT_MAP_12(M, S, p, ...) M p S() LRRT_EXPAND(LRRT_MAP_11(M, S, __VA_ARGS__))
#define LRRT_MAP(M, S, ...) \
  LRRT_EXPAND(LRRT_CAT(LRRT_MAP_, LRRT_NARGS(__VA_ARGS__))(M, S, __VA_ARGS__))

#define LRRT_SEP_COMMA() ,
#define LRRT_SEP_NONE()
#define LRRT_PARAM(type, name) type name
#define LRRT_FIELD(type, name) type name;
#define LRRT_UNPACK(type, name) lrrt_args->name

#if defined(__CUDACC__)
// ---------------------------------------------------------------- NVIDIA
#include <stdint.h>
#define LRRT_DEVICE_FN __device__ __forceinline__
#define LRRT_KERNEL(name, ...) \
  extern "C" __global__ void name(LRRT_MAP(LRRT_PARAM, LRRT_SEP_COMMA, __VA_ARGS__))
#define LRRT_FOR_EACH_THREAD if (1)
#define LRRT_BARRIER __syncthreads()
#define LRRT_SHARED __shared__
#define LRRT_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#define LRRT_LOCAL_ID_X threadIdx.x
#define LRRT_LOCAL_ID_Y threadIdx.y
#define LRRT_LOCAL_ID_Z threadIdx.z
#define LRRT_GROUP_ID_X blockIdx.x
#define LRRT_GROUP_ID_Y blockIdx.y
#define LRRT_GROUP_ID_Z blockIdx.z
#define LRRT_GROUP_SIZE_X blockDim.x
#define LRRT_GROUP_SIZE_Y blockDim.y
#define LRRT_GROUP_SIZE_Z blockDim.z
#define LRRT_GROUP_COUNT_X gridDim.x
#define LRRT_GROUP_COUNT_Y gridDim.y
#define LRRT_GROUP_COUNT_Z gridDim.z

#elif defined(__HIP__) && defined(__AMDGPU__)
// ---------------------------------------------------------------- AMD
// Built with clang-19 -x hip --cuda-device-only -nogpuinc -nogpulib: no HIP
// headers, so the few attributes and builtins are spelled out here.
typedef unsigned char uint8_t;
typedef signed char int8_t;
typedef unsigned short uint16_t;
typedef short int16_t;
typedef unsigned int uint32_t;
typedef int int32_t;
typedef unsigned long long uint64_t;
typedef long long int64_t;
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define LRRT_DEVICE_FN __attribute__((device)) inline __attribute__((always_inline))
#define LRRT_KERNEL(name, ...) \
  extern "C" __global__ void name(LRRT_MAP(LRRT_PARAM, LRRT_SEP_COMMA, __VA_ARGS__))
#define LRRT_FOR_EACH_THREAD if (1)
#define LRRT_BARRIER                                        \
  do {                                                      \
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");  \
    __builtin_amdgcn_s_barrier();                           \
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");  \
  } while (0)
#define LRRT_SHARED __shared__
#define LRRT_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#define LRRT_LOCAL_ID_X __builtin_amdgcn_workitem_id_x()
#define LRRT_LOCAL_ID_Y __builtin_amdgcn_workitem_id_y()
#define LRRT_LOCAL_ID_Z __builtin_amdgcn_workitem_id_z()
#define LRRT_GROUP_ID_X __builtin_amdgcn_workgroup_id_x()
#define LRRT_GROUP_ID_Y __builtin_amdgcn_workgroup_id_y()
#define LRRT_GROUP_ID_Z __builtin_amdgcn_workgroup_id_z()
// Reads the hidden arguments (v5) or the dispatch packet (v4): the runtime
// must fill them, which is exactly what the hsa tests check.
#define LRRT_GROUP_SIZE_X __builtin_amdgcn_workgroup_size_x()
#define LRRT_GROUP_SIZE_Y __builtin_amdgcn_workgroup_size_y()
#define LRRT_GROUP_SIZE_Z __builtin_amdgcn_workgroup_size_z()
#define LRRT_GROUP_COUNT_X (__builtin_amdgcn_grid_size_x() / __builtin_amdgcn_workgroup_size_x())
#define LRRT_GROUP_COUNT_Y (__builtin_amdgcn_grid_size_y() / __builtin_amdgcn_workgroup_size_y())
#define LRRT_GROUP_COUNT_Z (__builtin_amdgcn_grid_size_z() / __builtin_amdgcn_workgroup_size_z())

#else
// ---------------------------------------------------------------- host
#include <stdint.h>

#include <exception>

#include "lrrt/host_kernel_abi.h"

#define LRRT_DEVICE_FN static inline
#define LRRT_HOST_KERNEL_ENTRY_PREFIX lrrt_host_entry_

// The generated code: an argument struct with the kernel's parameters (its
// layout is natural alignment, as on the GPUs), a body taking the unpacked
// parameters, an entry with the host ABI that catches exceptions, a
// registration in the library's kernel table, and an exported kernel record
// (the same facts as constant data, for tools that read the ELF file).
#define LRRT_ARG_INFO(type, name) \
  lrrt_host_arg_t{#name, #type, 0, sizeof(type), lrrt::host_kernel::arg_kind<type>()},
#define LRRT_ARG_OFFSET(type, name) offsetof(lrrt_args_t, name),
#define LRRT_ARG_RECORD(type, name)                                                   \
  ::lrrt::host_kernel::ArgRecordSpec{#name, #type, offsetof(lrrt_args_t, name), sizeof(type), \
                                     ::lrrt::host_kernel::arg_kind<type>()},

#define LRRT_KERNEL(kname, ...)                                                     \
  namespace lrrt_kernel_##kname {                                                    \
  struct lrrt_args_t {                                                               \
    LRRT_MAP(LRRT_FIELD, LRRT_SEP_NONE, __VA_ARGS__)                                 \
  };                                                                                 \
  static void body(const lrrt_host_dispatch_state_t* lrrt_dispatch,                  \
                   const lrrt_host_workgroup_state_t* lrrt_workgroup,                \
                   LRRT_MAP(LRRT_PARAM, LRRT_SEP_COMMA, __VA_ARGS__));               \
  static int entry(const lrrt_host_dispatch_state_t* d,                              \
                   const lrrt_host_workgroup_state_t* w) {                           \
    try {                                                                            \
      const lrrt_args_t* lrrt_args = static_cast<const lrrt_args_t*>(d->kernargs);   \
      body(d, w, LRRT_MAP(LRRT_UNPACK, LRRT_SEP_COMMA, __VA_ARGS__));                \
      return 0;                                                                      \
    } catch (...) {                                                                  \
      return -1;                                                                     \
    }                                                                                \
  }                                                                                  \
  static const lrrt::host_kernel::Registration registration(                        \
      #kname, &entry, sizeof(lrrt_args_t), alignof(lrrt_args_t),                     \
      {LRRT_MAP(LRRT_ARG_INFO, LRRT_SEP_NONE, __VA_ARGS__)},                         \
      {LRRT_MAP(LRRT_ARG_OFFSET, LRRT_SEP_NONE, __VA_ARGS__)});                      \
  static constexpr ::lrrt::host_kernel::ArgRecordSpec record_args[] = {              \
      LRRT_MAP(LRRT_ARG_RECORD, LRRT_SEP_NONE, __VA_ARGS__)};                        \
  extern "C" __attribute__((visibility("default"), used)) const                      \
      ::lrrt::host_kernel::KernelRecord<::lrrt::host_kernel::record_size(#kname, record_args)> \
          lrrt_host_kernel_record_##kname =                                          \
              ::lrrt::host_kernel::make_record<::lrrt::host_kernel::record_size(     \
                  #kname, record_args)>(#kname, sizeof(lrrt_args_t), alignof(lrrt_args_t), \
                                        record_args);                                \
  }                                                                                  \
  static void lrrt_kernel_##kname::body(                                             \
      [[maybe_unused]] const lrrt_host_dispatch_state_t* lrrt_dispatch,              \
      [[maybe_unused]] const lrrt_host_workgroup_state_t* lrrt_workgroup,            \
      LRRT_MAP(LRRT_PARAM, LRRT_SEP_COMMA, __VA_ARGS__))

// Loops over the workgroup's work-items in x-fastest order.
#define LRRT_FOR_EACH_THREAD                                                         \
  for (uint32_t lrrt_lz = 0; lrrt_lz < lrrt_dispatch->workgroup_size[2]; ++lrrt_lz)  \
    for (uint32_t lrrt_ly = 0; lrrt_ly < lrrt_dispatch->workgroup_size[1]; ++lrrt_ly) \
      for (uint32_t lrrt_lx = 0; lrrt_lx < lrrt_dispatch->workgroup_size[0]; ++lrrt_lx)
#define LRRT_BARRIER ((void)0)
#define LRRT_SHARED
#define LRRT_DYNAMIC_SHARED(type, name) \
  type* name = static_cast<type*>(lrrt_workgroup->dynamic_shared)
#define LRRT_LOCAL_ID_X lrrt_lx
#define LRRT_LOCAL_ID_Y lrrt_ly
#define LRRT_LOCAL_ID_Z lrrt_lz
#define LRRT_GROUP_ID_X lrrt_workgroup->workgroup_id[0]
#define LRRT_GROUP_ID_Y lrrt_workgroup->workgroup_id[1]
#define LRRT_GROUP_ID_Z lrrt_workgroup->workgroup_id[2]
#define LRRT_GROUP_SIZE_X lrrt_dispatch->workgroup_size[0]
#define LRRT_GROUP_SIZE_Y lrrt_dispatch->workgroup_size[1]
#define LRRT_GROUP_SIZE_Z lrrt_dispatch->workgroup_size[2]
#define LRRT_GROUP_COUNT_X lrrt_dispatch->workgroup_count[0]
#define LRRT_GROUP_COUNT_Y lrrt_dispatch->workgroup_count[1]
#define LRRT_GROUP_COUNT_Z lrrt_dispatch->workgroup_count[2]

#include <cstddef>
#include <initializer_list>
#include <type_traits>
#include <vector>

namespace lrrt::host_kernel {

template <typename T>
constexpr uint32_t arg_kind() {
  return std::is_pointer_v<T> ? LRRT_HOST_ARG_POINTER : LRRT_HOST_ARG_VALUE;
}

// The library's kernel table, filled by static registrations when the shared
// object loads. Defined (not inline) in host_library.cpp: an inline function's
// static would be a process-wide unique symbol shared by every loaded kernel
// library.
struct Table {
  std::vector<lrrt_host_kernel_t> kernels;
  std::vector<std::vector<lrrt_host_arg_t>> args;  // owns each kernel's args
  lrrt_host_library_t library{LRRT_HOST_ABI_VERSION, 0, nullptr};
};
Table& table();

struct Registration {
  Registration(const char* name, lrrt_host_kernel_fn_t entry, size_t size, size_t align,
               std::initializer_list<lrrt_host_arg_t> args,
               std::initializer_list<size_t> offsets) {
    Table& t = table();
    std::vector<lrrt_host_arg_t> a(args);
    size_t i = 0;
    for (size_t off : offsets) a[i++].offset = static_cast<uint32_t>(off);
    t.args.push_back(std::move(a));
    // Re-point every kernel at its args: push_back may have moved the vectors.
    t.kernels.push_back(lrrt_host_kernel_t{name, entry, 0, nullptr,
                                           static_cast<uint32_t>(size),
                                           static_cast<uint32_t>(align), 0});
    for (size_t k = 0; k < t.kernels.size(); ++k) {
      t.kernels[k].args = t.args[k].data();
      t.kernels[k].arg_count = static_cast<uint32_t>(t.args[k].size());
    }
    t.library.kernel_count = static_cast<uint32_t>(t.kernels.size());
    t.library.kernels = t.kernels.data();
  }
};

// A kernel record (include/lrrt/host_kernel_abi.h) built at compile time:
// plain bytes, no pointers, so it needs no relocation and tools read it
// straight from the file.
struct ArgRecordSpec {
  const char* name;
  const char* type_name;
  size_t offset;
  size_t size;
  uint32_t kind;
};

constexpr size_t record_strlen(const char* s) {
  size_t n = 0;
  while (s[n]) ++n;
  return n;
}

template <size_t NArgs>
constexpr size_t record_size(const char* kernel, const ArgRecordSpec (&args)[NArgs]) {
  size_t n = sizeof(lrrt_host_kernel_record_t) + NArgs * sizeof(lrrt_host_arg_record_t) +
             record_strlen(kernel) + 1;
  for (const ArgRecordSpec& a : args) n += record_strlen(a.name) + 1 + record_strlen(a.type_name) + 1;
  return (n + 7) / 8 * 8;
}

template <size_t Size>
struct KernelRecord {
  alignas(8) unsigned char bytes[Size];
};

template <size_t Size, size_t NArgs>
constexpr KernelRecord<Size> make_record(const char* kernel, size_t kernarg_size,
                                         size_t kernarg_align, const ArgRecordSpec (&args)[NArgs]) {
  KernelRecord<Size> r{};
  size_t strings = sizeof(lrrt_host_kernel_record_t) + NArgs * sizeof(lrrt_host_arg_record_t);
  auto put32 = [&r](size_t at, size_t value) {
    for (size_t i = 0; i < 4; ++i) r.bytes[at + i] = static_cast<unsigned char>(value >> (8 * i));
  };
  auto put_string = [&r, &strings](const char* s) {
    size_t at = strings;
    for (size_t i = 0; s[i]; ++i) r.bytes[strings++] = static_cast<unsigned char>(s[i]);
    r.bytes[strings++] = 0;
    return at;
  };
  put32(0, LRRT_HOST_KERNEL_RECORD_MAGIC);
  put32(4, LRRT_HOST_KERNEL_RECORD_VERSION);
  put32(8, Size);
  put32(12, put_string(kernel));
  put32(16, kernarg_size);
  put32(20, kernarg_align);
  put32(24, 0);  // static shared bytes: not known to the preprocessor
  put32(28, NArgs);
  for (size_t i = 0; i < NArgs; ++i) {
    size_t at = sizeof(lrrt_host_kernel_record_t) + i * sizeof(lrrt_host_arg_record_t);
    put32(at, put_string(args[i].name));
    put32(at + 4, put_string(args[i].type_name));
    put32(at + 8, args[i].offset);
    put32(at + 12, args[i].size);
    put32(at + 16, args[i].kind);
  }
  return r;
}

}  // namespace lrrt::host_kernel

// Exactly one translation unit per shared object defines the query function:
// the build adds kernels/host_library.cpp to every host kernel library.
#endif

// A 32-bit word shared with the host or another dispatch while the kernel
// runs (a gate, a rendezvous flag): loaded with acquire and stored with
// release ordering where the compiler has the builtins (host, AMD), so the
// host backend's accesses are real atomics (ThreadSanitizer sees them as
// such); nvcc reads and writes it volatile, with a fence around it.
// LRRT_POLL_PAUSE(polls) in a polling loop: on host builds every 1024th
// poll yields the core, so a poll limit means time on a loaded 2-core host
// too (there a busy spinner can starve the very thread that would release
// it, and the limit passed in ~15 ms); a no-op on GPUs.
#if defined(__CUDACC__) || (defined(__HIP__) && defined(__AMDGPU__))
#define LRRT_POLL_PAUSE(polls) ((void)(polls))
#else
#include <sched.h>
#define LRRT_POLL_PAUSE(polls) ((void)((polls) % 1024u == 0 && sched_yield() == 0))
#endif

#if defined(__CUDACC__) && !defined(__clang__)
#define LRRT_LOAD_ACQUIRE_U32(p) (*(const volatile uint32_t*)(p))
#define LRRT_STORE_RELEASE_U32(p, v) (__threadfence(), (void)(*(volatile uint32_t*)(p) = (v)))
#else
#define LRRT_LOAD_ACQUIRE_U32(p) __atomic_load_n((const uint32_t*)(p), __ATOMIC_ACQUIRE)
#define LRRT_STORE_RELEASE_U32(p, v) __atomic_store_n((uint32_t*)(p), (uint32_t)(v), __ATOMIC_RELEASE)
#endif

// Derived indices, the same on every target.
#define LRRT_GLOBAL_ID_X (LRRT_GROUP_ID_X * LRRT_GROUP_SIZE_X + LRRT_LOCAL_ID_X)
#define LRRT_GLOBAL_ID_Y (LRRT_GROUP_ID_Y * LRRT_GROUP_SIZE_Y + LRRT_LOCAL_ID_Y)
#define LRRT_GLOBAL_ID_Z (LRRT_GROUP_ID_Z * LRRT_GROUP_SIZE_Z + LRRT_LOCAL_ID_Z)
#define LRRT_LOCAL_LINEAR_ID \
  ((LRRT_LOCAL_ID_Z * LRRT_GROUP_SIZE_Y + LRRT_LOCAL_ID_Y) * LRRT_GROUP_SIZE_X + LRRT_LOCAL_ID_X)

// Programmatic dependent launch (cuda, sm_90+; lr_kernel_set_flags
// LR_KERNEL_WAITS_FOR_PRODUCER): LRRT_WAIT_FOR_PRODUCER() returns once the
// grids this one depends on finished and their memory is visible;
// LRRT_LAUNCH_DEPENDENTS() lets the grids that depend on this one start. A
// kernel launched without programmatic dependencies passes the wait at once.
// No-ops on host, AMD and NVIDIA before sm_90.
#if defined(__CUDACC__) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define LRRT_WAIT_FOR_PRODUCER() asm volatile("griddepcontrol.wait;" ::: "memory")
#define LRRT_LAUNCH_DEPENDENTS() asm volatile("griddepcontrol.launch_dependents;" ::: "memory")
#else
#define LRRT_WAIT_FOR_PRODUCER() ((void)0)
#define LRRT_LAUNCH_DEPENDENTS() ((void)0)
#endif

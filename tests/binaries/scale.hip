// A HIP translation unit as hipcc users write it, compiled by clang-19
// without ROCm headers (-nogpuinc): the device side is a kernel, the host
// side what clang generates around it (a constructor registering the
// fatbin with __hipRegisterFatBinary, which lrrt must never run).
#define __global__ __attribute__((global))
typedef struct { unsigned x, y, z; } dim3;
typedef struct ihipStream_t* hipStream_t;
extern "C" int hipLaunchKernel(const void*, dim3, dim3, void**, unsigned long, hipStream_t);

extern "C" __global__ void scale_f32(float* x, float s, unsigned n) {
#ifdef __HIP_DEVICE_COMPILE__
  unsigned i = __builtin_amdgcn_workgroup_id_x() * 64 + __builtin_amdgcn_workitem_id_x();
  if (i < n) x[i] *= s;
#endif
}

extern "C" __global__ void offset_i32(int* x, int d, unsigned n) {
#ifdef __HIP_DEVICE_COMPILE__
  unsigned i = __builtin_amdgcn_workgroup_id_x() * 64 + __builtin_amdgcn_workitem_id_x();
  if (i < n) x[i] += d;
#endif
}

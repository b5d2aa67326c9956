// A TMA copy through a tensor map (lr_tensor_map_encode, sm_90+): each block
// loads one box of the 2-D f32 tensor the map describes into shared memory
// with cp.async.bulk.tensor (completion counted on an mbarrier) and writes
// the in-bounds part to `out` (rows x cols, dense). Out-of-bounds box
// elements are the map's fill and are not written. Built only for the GPU
// check (scripts/tensormap-check, tests/cuda/tma_copy/manifest.json).
#include <cuda.h>
#include <stdint.h>

#define BOX_ROWS 32
#define BOX_COLS 32

__device__ static inline uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

extern "C" __global__ void __launch_bounds__(128) tma_copy(const __grid_constant__ CUtensorMap map, float* out, int rows, int cols) {
  __shared__ alignas(128) float tile[BOX_ROWS][BOX_COLS];
  __shared__ alignas(8) uint64_t barrier;
  const uint32_t bar = shared_address(&barrier);
  const int col0 = blockIdx.x * BOX_COLS, row0 = blockIdx.y * BOX_ROWS;
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar) : "memory");
    // The barrier's initialisation must be visible to the async (TMA) proxy.
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(uint32_t(sizeof(tile))) : "memory");
    // Coordinates innermost first: (column, row).
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
            shared_address(tile)),
        "l"(reinterpret_cast<uint64_t>(&map)), "r"(col0), "r"(row0), "r"(bar)
        : "memory");
  }
  uint32_t done = 0;
  while (!done)
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
        : "=r"(done)
        : "r"(bar)
        : "memory");
  for (int i = threadIdx.x; i < BOX_ROWS * BOX_COLS; i += blockDim.x) {
    const int r = row0 + i / BOX_COLS, c = col0 + i % BOX_COLS;
    if (r < rows && c < cols) out[size_t(r) * cols + c] = tile[i / BOX_COLS][i % BOX_COLS];
  }
}

// The other direction (tests/cuda/tma_copy/sequence.json): each block reads
// one box of the dense rows x cols `src` into shared memory and stores it
// through the map with cp.async.bulk.tensor (the store clips at the map's
// bounds). The kernel writes only through the map: a sequence's fences must
// take a tensor map as written unless it is declared "read".
extern "C" __global__ void __launch_bounds__(128) tma_store(const float* src, int rows, int cols,
                                                             const __grid_constant__ CUtensorMap map) {
  __shared__ alignas(128) float tile[BOX_ROWS][BOX_COLS];
  const int col0 = blockIdx.x * BOX_COLS, row0 = blockIdx.y * BOX_ROWS;
  for (int i = threadIdx.x; i < BOX_ROWS * BOX_COLS; i += blockDim.x) {
    const int r = row0 + i / BOX_COLS, c = col0 + i % BOX_COLS;
    tile[i / BOX_COLS][i % BOX_COLS] = r < rows && c < cols ? src[size_t(r) * cols + c] : 0.0f;
  }
  // The generic proxy's writes to shared memory, then visible to the TMA (async proxy).
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];" ::"l"(
                     reinterpret_cast<uint64_t>(&map)),
                 "r"(col0), "r"(row0), "r"(shared_address(tile))
                 : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  }
}

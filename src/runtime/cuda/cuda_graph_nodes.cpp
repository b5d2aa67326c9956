// The parameters of a CUDA graph's nodes, made from lrrt's lowering: kernel
// nodes, memcpy nodes, and the memset shape of a fill (the graph exec that
// adds them is cuda_graph.cpp).
#include <bit>
#include <cstring>

#include "cuda_graph.hpp"

namespace lrrt::rt::cuda {

static_assert(std::endian::native == std::endian::little,
              "memset values are the pattern's bytes read as a little-endian integer");

std::optional<MemsetShape> memset_shape(uintptr_t dst, size_t size, uint32_t pattern, uint32_t pattern_size) {
  if (pattern_size != 1 && pattern_size != 2 && pattern_size != 4) return std::nullopt;
  if (pattern_size < 4) pattern &= (uint32_t(1) << (8 * pattern_size)) - 1;
  // A pattern of one repeated byte is a 1-byte pattern.
  const uint32_t byte = pattern & 0xff;
  if ((pattern_size == 2 && pattern == byte * 0x0101u) || (pattern_size == 4 && pattern == byte * 0x01010101u)) {
    pattern = byte;
    pattern_size = 1;
  }
  auto fits = [&](uint32_t element) { return dst % element == 0 && size % element == 0; };
  auto shape = [&](uint32_t element, uint32_t value) { return MemsetShape{element, value, size / element}; };
  switch (pattern_size) {
    case 1:
      if (fits(4)) return shape(4, pattern * 0x01010101u);
      if (fits(2)) return shape(2, pattern * 0x0101u);
      return shape(1, pattern);
    case 2:
      if (fits(4)) return shape(4, pattern | (pattern << 16));
      if (fits(2)) return shape(2, pattern);
      return std::nullopt;
    default:
      if (fits(4)) return shape(4, pattern);
      return std::nullopt;
  }
}

CUDA_MEMSET_NODE_PARAMS memset_node_params(void* dst, const MemsetShape& shape) {
  CUDA_MEMSET_NODE_PARAMS p{};
  p.dst = reinterpret_cast<CUdeviceptr>(dst);
  p.value = shape.value;
  p.elementSize = shape.element_size;
  p.width = shape.width;
  p.height = 1;
  p.pitch = 0;  // unused for one row (and a large row would exceed the largest pitch)
  return p;
}

CUDA_MEMCPY3D memcpy_node_params(void* dst, const void* src, size_t size, CopyKind kind) {
  CUDA_MEMCPY3D p{};
  if (kind == CopyKind::HostToDevice) {
    p.srcMemoryType = CU_MEMORYTYPE_HOST;
    p.srcHost = src;
  } else {
    p.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    p.srcDevice = reinterpret_cast<CUdeviceptr>(src);
  }
  if (kind == CopyKind::DeviceToHost) {
    p.dstMemoryType = CU_MEMORYTYPE_HOST;
    p.dstHost = dst;
  } else {
    p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    p.dstDevice = reinterpret_cast<CUdeviceptr>(dst);
  }
  // One row of one slice: pitches and heights are not read.
  p.WidthInBytes = size;
  p.Height = 1;
  p.Depth = 1;
  return p;
}

CUDA_KERNEL_NODE_PARAMS kernel_node_params(CUfunction function, const LaunchConfig& config, void** extra) {
  CUDA_KERNEL_NODE_PARAMS p{};
  p.func = function;
  p.gridDimX = config.grid.x;
  p.gridDimY = config.grid.y;
  p.gridDimZ = config.grid.z;
  p.blockDimX = config.block.x;
  p.blockDimY = config.block.y;
  p.blockDimZ = config.block.z;
  p.sharedMemBytes = config.dynamic_shared_bytes;
  p.kernelParams = nullptr;
  p.extra = extra;
  p.kern = nullptr;  // func is set: kern and ctx are ignored
  p.ctx = nullptr;
  return p;
}

}  // namespace lrrt::rt::cuda

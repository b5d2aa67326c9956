// Retained replay on cuda: the recorded graph becomes a CUDA graph built node
// by node from the derived edges (not from stream capture): kernel nodes with
// the packed argument bytes (CU_LAUNCH_PARAM_BUFFER_POINTER), memcpy nodes,
// memset nodes for fills, one dependency per edge. It is instantiated once
// and replayed with cuGraphLaunch on the launch queue's stream; argument
// patches go through cuGraphExecKernelNodeSetParams.
//
// The mapping from graph steps to CUDA node parameters is pure and declared
// here, so it is tested without a GPU (tests/unit/test_cuda_backend.cpp).
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "backend.hpp"
#include "graph/exec.hpp"

namespace lrrt::rt::cuda {

class CudaDevice;

// A fill as one memset node: elements of 1, 2 or 4 bytes, `width` of them,
// each `value` (little-endian: the pattern's bytes in memory order).
struct MemsetShape {
  uint32_t element_size = 1;
  uint32_t value = 0;
  size_t width = 0;
};

// The widest element (4, 2, then 1 bytes) that the destination's alignment,
// the size and the pattern allow: a pattern of one repeated byte widens to
// any aligned element; a 2-byte pattern needs 2-byte alignment, a 4-byte one
// 4-byte alignment. nullopt when the pattern does not fit the alignment (the
// lowering then copies the pattern from device memory instead). `pattern`
// holds the low `pattern_size` bytes in memory order (graph::FillStep);
// `size` is a multiple of pattern_size.
std::optional<MemsetShape> memset_shape(uintptr_t dst, size_t size, uint32_t pattern, uint32_t pattern_size);

// The memset node parameters for a shape: one row (height 1).
CUDA_MEMSET_NODE_PARAMS memset_node_params(void* dst, const MemsetShape& shape);

// A one-dimensional copy as a memcpy node: the host side of a host-to-device
// or device-to-host copy as CU_MEMORYTYPE_HOST (pinned or pageable), the
// device side as CU_MEMORYTYPE_DEVICE; width `size` bytes, one row, one slice.
CUDA_MEMCPY3D memcpy_node_params(void* dst, const void* src, size_t size, CopyKind kind);

// Kernel node parameters (the _v2 struct: `kern` and `ctx` unused, `func`
// set). `extra` is the CU_LAUNCH_PARAM_* list of the packed arguments, or
// null for a kernel without arguments.
CUDA_KERNEL_NODE_PARAMS kernel_node_params(CUfunction function, const LaunchConfig& config, void** extra);

// The lowering, or nullptr when the driver lacks the graph entry points
// (then the caller uses the generic replay).
std::unique_ptr<graph::GraphExec> make_cuda_graph_exec(CudaDevice& device, const graph::Lowering& lowering);

}  // namespace lrrt::rt::cuda

// The cuda backend where no GPU may be present: initialize() never throws and
// says in one line why the backend is unusable.
#if defined(LRRT_HAVE_CUDA)
#include <doctest/doctest.h>

#include "backend.hpp"

namespace lrrt::rt {
std::unique_ptr<Backend> make_cuda_backend();
}

TEST_CASE("cuda backend: initialize never throws and says why when unusable") {
  auto backend = lrrt::rt::make_cuda_backend();
  auto status = backend->initialize();
  if (status.usable) {
    CHECK(backend->device_count() > 0);
  } else {
    MESSAGE("cuda backend unusable here: ", status.message);
    CHECK_FALSE(status.message.empty());
    CHECK(status.message.find('\n') == std::string::npos);
    CHECK(backend->device_count() == 0);
  }
}
#endif

// The mapping from graph steps to CUDA graph node parameters (cuda_graph.hpp):
// pure, so it is checked here without a GPU; the H200 runs the replays
// themselves (test_graph_replay*.cpp's cuda cases).
#if defined(LRRT_HAVE_CUDA)
#include <array>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#include "cuda/cuda_graph.hpp"
#include "cuda/cuda_symbols.hpp"

namespace {

namespace cuda = lrrt::rt::cuda;

std::mt19937& cuda_rng() {
  static std::mt19937 gen(std::random_device{}());
  return gen;
}

// What the memset writes at dst, as bytes: width elements of element_size
// bytes, each the value's low bytes in little-endian order.
std::vector<uint8_t> memset_bytes(const cuda::MemsetShape& s) {
  std::vector<uint8_t> out(s.width * s.element_size);
  for (size_t i = 0; i < s.width; ++i)
    for (uint32_t b = 0; b < s.element_size; ++b) out[i * s.element_size + b] = uint8_t(s.value >> (8 * b));
  return out;
}

std::vector<uint8_t> fill_bytes(size_t size, uint32_t pattern, uint32_t pattern_size) {
  std::vector<uint8_t> out(size);
  for (size_t i = 0; i < size; ++i) out[i] = uint8_t(pattern >> (8 * (i % pattern_size)));
  return out;
}

}  // namespace

// The kernel node struct the lowering fills is the one the requested entry
// points take (the _v2 names since CUDA 12.0).
static_assert(std::is_same_v<decltype(cuda::CudaGraphSymbols{}.cuGraphAddKernelNode),
                             CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
                                          const CUDA_KERNEL_NODE_PARAMS_v2*)>);
static_assert(std::is_same_v<decltype(cuda::CudaGraphSymbols{}.cuGraphExecKernelNodeSetParams),
                             CUresult (*)(CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS_v2*)>);
static_assert(std::is_same_v<CUDA_KERNEL_NODE_PARAMS, CUDA_KERNEL_NODE_PARAMS_v2>);

TEST_CASE("cuda graph lowering: fills become the widest memset the alignment allows, byte for byte") {
  auto& gen = cuda_rng();
  for (int trial = 0; trial < 2000; ++trial) {
    const uint32_t pattern_size = std::array{1u, 2u, 4u}[gen() % 3];
    uint32_t pattern = gen();
    if (trial % 5 == 0) pattern = (pattern & 0xff) * 0x01010101u;  // one repeated byte
    if (pattern_size < 4) pattern &= (1u << (8 * pattern_size)) - 1;
    const uintptr_t dst = 0x7f0000000000ull + (gen() % 64);
    const size_t size = pattern_size * (1 + gen() % 300);
    CAPTURE(pattern_size);
    CAPTURE(pattern);
    CAPTURE(dst % 4);
    CAPTURE(size);
    auto shape = cuda::memset_shape(dst, size, pattern, pattern_size);
    const bool one_byte = pattern_size == 1 || pattern == (pattern & 0xff) * (pattern_size == 2 ? 0x0101u : 0x01010101u);
    const uint32_t align = pattern_size == 1 || one_byte ? 1 : pattern_size;
    if (dst % align != 0) {
      CHECK_FALSE(shape.has_value());
      continue;
    }
    REQUIRE(shape.has_value());
    CHECK(dst % shape->element_size == 0);
    CHECK(shape->width * shape->element_size == size);
    CHECK(memset_bytes(*shape) == fill_bytes(size, pattern, pattern_size));
    // The widest element the address and size allow.
    uint32_t widest = dst % 4 == 0 && size % 4 == 0 ? 4 : dst % 2 == 0 && size % 2 == 0 ? 2 : 1;
    CHECK(shape->element_size == widest);
    auto p = cuda::memset_node_params(reinterpret_cast<void*>(dst), *shape);
    CHECK(p.dst == CUdeviceptr(dst));
    CHECK(p.elementSize == shape->element_size);
    CHECK(p.value == shape->value);
    CHECK(p.width == shape->width);
    CHECK(p.height == 1);
  }
  // The cases the lowering copies instead.
  CHECK_FALSE(cuda::memset_shape(0x1001, 8, 0xBEEF, 2).has_value());
  CHECK_FALSE(cuda::memset_shape(0x1002, 8, 0xA5A5C3C3u, 4).has_value());
  CHECK(cuda::memset_shape(0x1002, 8, 0xC3C3C3C3u, 4)->element_size == 2);
  CHECK(cuda::memset_shape(0x1001, 8, 0x7777, 2)->element_size == 1);
}

TEST_CASE("cuda graph lowering: copies become one-row memcpy nodes with the host side as host memory") {
  auto& gen = cuda_rng();
  std::vector<uint8_t> host(64);
  void* device = reinterpret_cast<void*>(uintptr_t(0x7f0000100000ull + 256 * (gen() % 1000)));
  void* device2 = reinterpret_cast<void*>(uintptr_t(0x7f0000900000ull + 256 * (gen() % 1000)));
  const size_t size = 1 + gen() % 100000;
  auto common = [&](const CUDA_MEMCPY3D& p) {
    CHECK(p.WidthInBytes == size);
    CHECK(p.Height == 1);
    CHECK(p.Depth == 1);
    CHECK(p.srcXInBytes == 0);
    CHECK(p.dstXInBytes == 0);
    CHECK(p.srcY == 0);
    CHECK(p.dstY == 0);
    CHECK(p.srcZ == 0);
    CHECK(p.dstZ == 0);
    CHECK(p.srcArray == nullptr);
    CHECK(p.dstArray == nullptr);
    CHECK(p.reserved0 == nullptr);
    CHECK(p.reserved1 == nullptr);
  };
  {
    auto p = cuda::memcpy_node_params(device, host.data(), size, lrrt::rt::CopyKind::HostToDevice);
    common(p);
    CHECK(p.srcMemoryType == CU_MEMORYTYPE_HOST);
    CHECK(p.srcHost == host.data());
    CHECK(p.dstMemoryType == CU_MEMORYTYPE_DEVICE);
    CHECK(p.dstDevice == reinterpret_cast<CUdeviceptr>(device));
  }
  {
    auto p = cuda::memcpy_node_params(host.data(), device, size, lrrt::rt::CopyKind::DeviceToHost);
    common(p);
    CHECK(p.srcMemoryType == CU_MEMORYTYPE_DEVICE);
    CHECK(p.srcDevice == reinterpret_cast<CUdeviceptr>(device));
    CHECK(p.dstMemoryType == CU_MEMORYTYPE_HOST);
    CHECK(p.dstHost == host.data());
  }
  {
    auto p = cuda::memcpy_node_params(device2, device, size, lrrt::rt::CopyKind::DeviceToDevice);
    common(p);
    CHECK(p.srcMemoryType == CU_MEMORYTYPE_DEVICE);
    CHECK(p.srcDevice == reinterpret_cast<CUdeviceptr>(device));
    CHECK(p.dstMemoryType == CU_MEMORYTYPE_DEVICE);
    CHECK(p.dstDevice == reinterpret_cast<CUdeviceptr>(device2));
  }
}

TEST_CASE("cuda graph lowering: kernel nodes carry the launch shape and the packed argument list") {
  auto& gen = cuda_rng();
  lrrt::rt::LaunchConfig config;
  config.grid = {1 + uint32_t(gen() % 1000), 1 + uint32_t(gen() % 7), 1 + uint32_t(gen() % 3)};
  config.block = {1 + uint32_t(gen() % 1024), 1, 1};
  config.dynamic_shared_bytes = uint32_t(gen() % 100000);
  auto function = reinterpret_cast<CUfunction>(uintptr_t(0x1000 + 16 * (gen() % 100)));
  std::vector<std::byte> args(8 * (1 + gen() % 8));
  size_t size = args.size();
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, args.data(), CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                   CU_LAUNCH_PARAM_END};
  auto p = cuda::kernel_node_params(function, config, extra);
  CHECK(p.func == function);
  CHECK(p.gridDimX == config.grid.x);
  CHECK(p.gridDimY == config.grid.y);
  CHECK(p.gridDimZ == config.grid.z);
  CHECK(p.blockDimX == config.block.x);
  CHECK(p.blockDimY == config.block.y);
  CHECK(p.blockDimZ == config.block.z);
  CHECK(p.sharedMemBytes == config.dynamic_shared_bytes);
  CHECK(p.kernelParams == nullptr);  // the driver refuses both forms at once
  CHECK(p.extra == extra);
  CHECK(p.kern == nullptr);
  CHECK(p.ctx == nullptr);
  CHECK(cuda::kernel_node_params(function, config, nullptr).extra == nullptr);
}
#endif

// LRRT_CUDA_SYNC's values (issue 22, part 4): read when a cuda device opens,
// before it makes anything, so a typo fails lr_device_open, never silently polls.
#if defined(LRRT_HAVE_CUDA)
#include "cuda/cuda_queue.hpp"
#include "error.hpp"

TEST_CASE("cuda: LRRT_CUDA_SYNC takes query (the default), flag or launch, and names anything else") {
  using lrrt::rt::cuda::SyncMode;
  using lrrt::rt::cuda::sync_mode;
  CHECK(sync_mode(nullptr) == SyncMode::Query);
  CHECK(sync_mode("") == SyncMode::Query);
  CHECK(sync_mode("query") == SyncMode::Query);
  CHECK(sync_mode("flag") == SyncMode::Flag);
  CHECK(sync_mode("launch") == SyncMode::Launch);
  for (const char* bad : {"Flag", "flags", "query ", "spin", "1", "Launch", "launches"}) {
    CAPTURE(bad);
    try {
      sync_mode(bad);
      FAIL("accepted");
    } catch (const lrrt::Error& e) {
      CHECK(e.status() == LR_ERROR_INVALID_ARGUMENT);
      const std::string message = e.what();
      CHECK(message.find("LRRT_CUDA_SYNC") != std::string::npos);
      CHECK(message.find(std::string("'") + bad + "'") != std::string::npos);
      CHECK(message.find("query, flag or launch") != std::string::npos);
    }
  }
}
#endif

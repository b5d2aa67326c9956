#include "cuda_device.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "cuda_event.hpp"
#include "env.hpp"
#include "cuda_executable.hpp"
#include "cuda_graph.hpp"
#include "cuda_queue.hpp"
#include "cuda_ticketed_launch.hpp"

namespace lrrt::rt::cuda {
namespace {

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (in) std::getline(in, line);
  return line;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string bytes_text(uint64_t bytes) {
  if (bytes >= (1ull << 30)) return fmt::format("{:.1f} GiB", double(bytes) / double(1ull << 30));
  if (bytes >= (1ull << 20)) return fmt::format("{:.1f} MiB", double(bytes) / double(1ull << 20));
  return fmt::format("{} KiB", bytes / 1024);
}

}  // namespace

SyncMode sync_mode(const char* setting) {
  const std::string_view s = setting ? setting : "";
  if (s.empty() || s == "query") return SyncMode::Query;
  if (s == "flag") return SyncMode::Flag;
  if (s == "launch") return SyncMode::Launch;
  LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "LRRT_CUDA_SYNC='{}': expected query, flag or launch", s);
}

CudaDevice::CudaDevice(uint32_t ordinal, CUdevice device) : ordinal_(ordinal), device_(device) {
  // First: a bad LRRT_CUDA_SYNC throws before anything is made.
  const auto sync_setting = env::text(env::kCudaSync);
  const SyncMode asked_sync = cuda::sync_mode(sync_setting ? sync_setting->c_str() : nullptr);
  const CudaSymbols& s = cu();
  LRRT_CUDA_CHECK(s, LR_ERROR_RUNTIME, cuDevicePrimaryCtxRetain(&context_, device_));
  LRRT_CUDA_CHECK(s, LR_ERROR_RUNTIME, cuCtxSetCurrent(context_));

  auto attr = [&](CUdevice_attribute a) {
    int v = 0;
    return s.cuDeviceGetAttribute(&v, a, device_) == CUDA_SUCCESS ? v : 0;
  };
  char name[256] = {};
  LRRT_CUDA_CHECK(s, LR_ERROR_RUNTIME, cuDeviceGetName(name, sizeof(name), device_));
  int major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  int minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  sm_ = static_cast<uint32_t>(major * 10 + minor);
  pdl_ = sm_ >= 90 && env::flag(env::kCudaPdl, true);
  size_t total = 0;
  LRRT_CUDA_CHECK(s, LR_ERROR_RUNTIME, cuDeviceTotalMem(&total, device_));

  DeviceProperties& p = properties_;
  p.backend = "cuda";
  p.name = name;
  p.arch = fmt::format("sm_{}", sm_);
  p.isas = {p.arch, fmt::format("compute_{}", sm_)};
  p.compute_units = static_cast<uint32_t>(attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT));
  p.wave_size = static_cast<uint32_t>(attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE));
  p.max_workgroup_size = static_cast<uint32_t>(attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK));
  p.max_workgroup_dims = {static_cast<uint32_t>(attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)),
                          static_cast<uint32_t>(attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)),
                          static_cast<uint32_t>(attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z))};
  int shared_default = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  int shared_optin = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  // What a launch can get: lrrt raises a kernel's limit past the default.
  p.max_shared_memory_per_workgroup = static_cast<uint64_t>(std::max(shared_default, shared_optin));
  p.memory_bytes = total;
  description_ = fmt::format("device {} ({}, {})", ordinal_, p.name, p.arch);

  auto& x = p.extra;
  int v = s.driver_version;
  x.emplace_back("driver API version", fmt::format("{}.{}", v / 1000, (v % 1000) / 10));
  if (std::string kmd = read_line("/sys/module/nvidia/version"); !kmd.empty())
    x.emplace_back("kernel driver", kmd);
  x.emplace_back("library", s.library_name);
  x.emplace_back("retained replay", cu_graph().available
                                        ? std::string("CUDA graph (graph entry points at API 12.0)")
                                        : "generic (the driver lacks " + cu_graph().missing + ")");
  x.emplace_back("compute capability", fmt::format("{}.{}", major, minor));
  x.emplace_back("SM count", std::to_string(p.compute_units));
  if (int clock = attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE))
    x.emplace_back("SM clock (max)", fmt::format("{} MHz", clock / 1000));
  if (int mclock = attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE))
    x.emplace_back("memory clock", fmt::format("{} MHz", mclock / 1000));
  if (int bus = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH))
    x.emplace_back("memory bus", fmt::format("{} bit", bus));
  x.emplace_back("memory", bytes_text(total));
  if (int l2 = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)) x.emplace_back("L2 cache", bytes_text(l2));
  // The link to each other GPU, as far as the driver API says: access,
  // a relative performance rank and atomics (it does not name NVLink or
  // PCIe; NVML would). `lrrt info` shows it beside peer access.
  int gpus = 0;
  if (s.cuDeviceGetP2PAttribute && s.cuDeviceGetCount(&gpus) == CUDA_SUCCESS)
    for (int j = 0; j < gpus; ++j) {
      CUdevice other{};
      if (j == static_cast<int>(ordinal_) || s.cuDeviceGet(&other, j) != CUDA_SUCCESS) continue;
      auto p2p = [&](CUdevice_P2PAttribute a) {
        int value = -1;
        return s.cuDeviceGetP2PAttribute(&value, a, device_, other) == CUDA_SUCCESS ? value : -1;
      };
      const int access = p2p(CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED);
      const int rank = p2p(CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK);
      const int atomics = p2p(CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED);
      auto yes_no = [](int v) { return v < 0 ? std::string("?") : v ? std::string("yes") : std::string("no"); };
      x.emplace_back(fmt::format("link to cuda device {}", j),
                     fmt::format("peer access {}, performance rank {} (cuDeviceGetP2PAttribute: relative, lower is "
                                 "faster), native atomics {}",
                                 yes_no(access), rank < 0 ? std::string("?") : std::to_string(rank), yes_no(atomics)));
    }
  if (int l2 = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)) {
    memory_info_.last_level_cache_bytes = static_cast<uint64_t>(l2);
    memory_info_.last_level_cache_method = "CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE";
  }
  // Peak: memory clock (kHz) x bus width (bits) / 8 x 2 (double data rate).
  if (int mclock = attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE), bus = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
      mclock > 0 && bus > 0) {
    memory_info_.peak_bandwidth = double(mclock) * 1e3 * double(bus) / 8.0 * 2.0;
    memory_info_.peak_source = LR_PEAK_BANDWIDTH_REPORTED;
    memory_info_.peak_method = fmt::format("memory clock {} MHz x {}-bit bus x 2 (cuDeviceGetAttribute)", mclock / 1000, bus);
  }
  x.emplace_back("shared memory per block",
                 fmt::format("{} KiB default, {} KiB opt-in", shared_default / 1024, shared_optin / 1024));
  x.emplace_back("shared memory per SM",
                 fmt::format("{} KiB", attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR) / 1024));
  x.emplace_back("registers per block", std::to_string(attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)));
  x.emplace_back("max threads per SM",
                 std::to_string(attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)));
  x.emplace_back("max grid", fmt::format("{} x {} x {}", attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X),
                                         attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y),
                                         attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)));
  x.emplace_back("ECC", attr(CU_DEVICE_ATTRIBUTE_ECC_ENABLED) ? "on" : "off");
  char bus_id[64] = {};
  if (s.cuDeviceGetPCIBusId(bus_id, sizeof(bus_id), device_) == CUDA_SUCCESS) {
    x.emplace_back("PCI bus id", bus_id);
    std::string dir = "/sys/bus/pci/devices/" + lower(bus_id);
    std::string speed = read_line(dir + "/current_link_speed");
    std::string width = read_line(dir + "/current_link_width");
    if (!speed.empty() && !width.empty()) {
      std::string link = fmt::format("{} x{}", speed, width);
      std::string max_speed = read_line(dir + "/max_link_speed");
      std::string max_width = read_line(dir + "/max_link_width");
      if (!max_speed.empty() && !max_width.empty())
        link += fmt::format(" (max {} x{})", max_speed, max_width);
      x.emplace_back("PCIe link", link);
    } else {
      x.emplace_back("PCIe link", "unknown (not in sysfs)");
    }
  }

  LRRT_CUDA_CHECK(s, LR_ERROR_RUNTIME, cuStreamCreate(&copy_stream_, CU_STREAM_NON_BLOCKING));
  LRRT_CUDA_CHECK(s, LR_ERROR_RUNTIME,
                  cuEventCreate(&copy_stream_done_, CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING));

  // The completion words of LRRT_CUDA_SYNC=flag or launch, pinned now, while
  // nothing runs here. Without them (no stream memory operations, or no
  // pinned memory) every queue polls its stream.
  if (asked_sync != SyncMode::Query && s.cuStreamWriteValue32 && s.cuMemHostGetDevicePointer) {
    constexpr size_t kWords = 256, kStride = 64;  // a cache line each: no false sharing between spinners
    void* page = nullptr;
    if (s.cuMemHostAlloc(&page, kWords * kStride, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP) ==
        CUDA_SUCCESS) {
      sync_words_page_.reset(static_cast<std::byte*>(page));
      CUdeviceptr mapped = 0;
      if (s.cuMemHostGetDevicePointer(&mapped, page, 0) == CUDA_SUCCESS) {
        free_sync_words_.reserve(kWords);
        for (size_t i = kWords; i-- > 0;) {
          auto* word = reinterpret_cast<uint32_t*>(sync_words_page_.get() + i * kStride);
          *word = 0;
          free_sync_words_.push_back({word, mapped + i * kStride, 0});
        }
      } else {
        sync_words_page_.reset();
      }
    }
  }
  // `lrrt info` says which wait took effect.
  const char* asked = asked_sync == SyncMode::Launch ? "launch" : "flag";
  if (free_sync_words_.empty()) {
    sync_mode_ = SyncMode::Query;
    x.emplace_back("queue wait", asked_sync == SyncMode::Query
                                     ? std::string("cuStreamQuery (LRRT_CUDA_SYNC=query)")
                                     : fmt::format("cuStreamQuery (LRRT_CUDA_SYNC={} unavailable: no stream memory "
                                                   "operations or pinned page)",
                                                   asked));
  } else if (asked_sync == SyncMode::Launch && TicketedLaunch::supported()) {
    sync_mode_ = SyncMode::Launch;
    x.emplace_back("queue wait", fmt::format("a word each launch writes, a kernel and its ticket as one graph "
                                             "replay (LRRT_CUDA_SYNC=launch; {} words pinned)",
                                             free_sync_words_.size()));
  } else {
    sync_mode_ = SyncMode::Flag;
    x.emplace_back("queue wait",
                   fmt::format("a word the stream writes (LRRT_CUDA_SYNC={}; {} words pinned{})", asked,
                               free_sync_words_.size(),
                               asked_sync == SyncMode::Launch ? "; launch unavailable: no batch memory-operation "
                                                                "graph node, synchronize writes the word"
                                                              : ""));
  }
}

CudaDevice::SyncWord CudaDevice::acquire_sync_word() {
  std::lock_guard lock(sync_words_mutex_);
  if (free_sync_words_.empty()) return {};
  SyncWord word = free_sync_words_.back();
  free_sync_words_.pop_back();
  return word;
}

void CudaDevice::release_sync_word(const SyncWord& word) {
  if (!word.host) return;
  std::lock_guard lock(sync_words_mutex_);
  free_sync_words_.push_back(word);
}

CudaDevice::~CudaDevice() {
  release_utility_queue();
  const CudaSymbols& s = cu();
  make_current();
  if (copy_stream_done_) s.cuEventDestroy(copy_stream_done_);
  if (copy_stream_) s.cuStreamDestroy(copy_stream_);
  sync_words_page_.reset();
  if (context_) s.cuDevicePrimaryCtxRelease(device_);
}

std::string CudaDevice::last_kernel_name() const {
  const std::string* name = last_kernel_.load(std::memory_order_relaxed);
  return name ? "'" + *name + "'" : std::string();
}

void CudaDevice::fail(CUresult result, std::string_view what, const std::string& kernels,
                      const char* file, int line) {
  if (!cu_is_sticky_fault(result)) throw_cu_error(result, LR_ERROR_RUNTIME, what, file, line);
  std::lock_guard lock(fault_mutex_);
  const std::string at = fmt::format(" [at {}:{}]", file_basename(file), line);
  if (first_fault_.empty()) {
    std::string who = kernels.empty() ? last_kernel_name() : kernels;
    if (who.empty()) who = "(no kernel was launched through lrrt)";
    first_fault_ = fmt::format("kernel {} faulted on {}: {}", who, description_, cu_error_text(result));
    lr_status_t status = cu_status(result, LR_ERROR_KERNEL_FAULT);
    throw Error(status, first_fault_ +
                            "; the CUDA context is unusable now, so every later call on this "
                            "device fails (restart the process)" + at);
  }
  throw Error(LR_ERROR_DEVICE_LOST,
              fmt::format("{} failed: {} is unusable since an earlier fault ({}){}", what,
                          description_, first_fault_, at));
}

void* CudaDevice::allocate(size_t size) {
  make_current();
  CUdeviceptr ptr = 0;
  CUresult r = cu().cuMemAlloc(&ptr, std::max<size_t>(size, 1));
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    size_t free_bytes = 0, total = 0;
    cu().cuMemGetInfo(&free_bytes, &total);
    LRRT_THROW_AT(LR_ERROR_OUT_OF_MEMORY,
                  "cuMemAlloc of {} bytes failed on {}: out of memory ({} free of {})", size,
                  description_, bytes_text(free_bytes), bytes_text(total));
  }
  if (r != CUDA_SUCCESS) fail(r, fmt::format("cuMemAlloc of {} bytes", size), "", __FILE__, __LINE__);
  return reinterpret_cast<void*>(ptr);
}

void CudaDevice::free(void* ptr) {
  if (!ptr) return;
  make_current();
  LRRT_CUDA_CHECK_DEVICE(*this, "", cuMemFree(reinterpret_cast<CUdeviceptr>(ptr)));
}

bool CudaDevice::can_access_peer(const Device& peer) const {
  const auto* p = dynamic_cast<const CudaDevice*>(&peer);
  if (!p || p == this) return false;
  int can = 0;
  return cu().cuDeviceCanAccessPeer(&can, device_, p->device_) == CUDA_SUCCESS && can != 0;
}

// The ABI's enums are CUDA's, value for value (lrrt.h), so they pass as they are.
namespace {
constexpr bool same_value(auto a, auto b) { return static_cast<long long>(a) == static_cast<long long>(b); }
}  // namespace
static_assert(same_value(LR_TENSOR_MAP_TF32_FTZ, CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ));
static_assert(same_value(LR_TENSOR_MAP_BF16, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16));
static_assert(same_value(LR_TENSOR_MAP_INTERLEAVE_32B, CU_TENSOR_MAP_INTERLEAVE_32B));
static_assert(same_value(LR_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_SWIZZLE_128B));
static_assert(same_value(LR_TENSOR_MAP_L2_PROMOTION_256B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B));
static_assert(same_value(LR_TENSOR_MAP_OOB_FILL_NAN, CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA));
static_assert(sizeof(CUtensorMap) == LR_TENSOR_MAP_BYTES);

void CudaDevice::encode_tensor_map(const lr_tensor_map_desc_t& d, void* out128) {
  if (sm_ < 90)
    LRRT_THROW(LR_ERROR_NOT_SUPPORTED, "tensor maps are a CUDA sm_90+ feature; {} is sm_{}", description_, sm_);
  const CudaSymbols& s = cu();
  if (!s.cuTensorMapEncodeTiled)
    LRRT_THROW(LR_ERROR_NOT_SUPPORTED, "the CUDA driver in {} (CUDA {}.{}) has no cuTensorMapEncodeTiled (CUDA 12.0+)",
               s.library_name, s.driver_version / 1000, (s.driver_version % 1000) / 10);
  make_current();
  LRRT_CUDA_CHECK(s, LR_ERROR_INVALID_ARGUMENT,
                  cuTensorMapEncodeTiled(static_cast<CUtensorMap*>(out128), static_cast<CUtensorMapDataType>(d.dtype),
                                         d.rank, d.global_address, d.global_dims, d.global_strides, d.box_dims,
                                         d.element_strides, static_cast<CUtensorMapInterleave>(d.interleave),
                                         static_cast<CUtensorMapSwizzle>(d.swizzle),
                                         static_cast<CUtensorMapL2promotion>(d.l2_promotion),
                                         static_cast<CUtensorMapFloatOOBfill>(d.oob_fill)));
}

void CudaDevice::enable_peer_access(Device& peer) {
  auto* p = dynamic_cast<CudaDevice*>(&peer);
  if (!p) return Device::enable_peer_access(peer);
  make_current();
  const CUresult r = cu().cuCtxEnablePeerAccess(p->context_, 0);
  if (r != CUDA_SUCCESS && r != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
    fail(r, fmt::format("cuCtxEnablePeerAccess (from {} to {})", description_, p->description_), "", __FILE__,
         __LINE__);
}

void CudaDevice::copy_from_peer(Queue& queue, void* dst, Device& src_device, const void* src, size_t size,
                                EventList wait_for, Event* signal) {
  auto* p = dynamic_cast<CudaDevice*>(&src_device);
  if (!p) return Device::copy_from_peer(queue, dst, src_device, src, size, wait_for, signal);
  static_cast<CudaQueue&>(queue).copy_peer(dst, context_, src, p->context_, size, wait_for, signal);
}

void* CudaDevice::do_allocate_host(size_t size) {
  make_current();
  void* ptr = nullptr;
  CUresult r = cu().cuMemHostAlloc(&ptr, std::max<size_t>(size, 1), CU_MEMHOSTALLOC_PORTABLE);
  if (r == CUDA_ERROR_OUT_OF_MEMORY)
    LRRT_THROW_AT(LR_ERROR_OUT_OF_MEMORY, "cuMemHostAlloc of {} pinned bytes failed: out of memory",
                  size);
  if (r != CUDA_SUCCESS)
    fail(r, fmt::format("cuMemHostAlloc of {} bytes", size), "", __FILE__, __LINE__);
  return ptr;
}

void CudaDevice::do_free_host(void* ptr) {
  make_current();
  LRRT_CUDA_CHECK_DEVICE(*this, "", cuMemFreeHost(ptr));
}

std::unique_ptr<Queue> CudaDevice::create_queue() { return std::make_unique<CudaQueue>(*this); }

std::unique_ptr<Event> CudaDevice::create_event() { return std::make_unique<CudaEvent>(*this); }

std::unique_ptr<graph::GraphExec> CudaDevice::instantiate_graph(const graph::Lowering& lowering) {
  if (auto exec = make_cuda_graph_exec(*this, lowering)) return exec;
  return Device::instantiate_graph(lowering);
}

void CudaDevice::copy_sync(void* dst, const void* src, size_t size, CopyKind kind) {
  if (size == 0) return;
  make_current();
  const CudaSymbols& s = cu();
  auto d = [](const void* p) { return reinterpret_cast<CUdeviceptr>(p); };
  // Every direction goes on the copy stream and is waited for. Not the
  // blocking cuMemcpyHtoD: from pageable memory it returns once the source is
  // staged, before the DMA lands, and it runs on the legacy stream, which
  // lrrt's non-blocking streams do not wait for — a kernel launched next
  // could read (or have its output overwritten by) a copy still in flight.
  switch (kind) {
    case CopyKind::HostToDevice:
      LRRT_CUDA_CHECK_DEVICE(*this, "", cuMemcpyHtoDAsync(d(dst), src, size, copy_stream_));
      break;
    case CopyKind::DeviceToHost:
      LRRT_CUDA_CHECK_DEVICE(*this, "", cuMemcpyDtoHAsync(dst, d(src), size, copy_stream_));
      break;
    case CopyKind::DeviceToDevice:
      LRRT_CUDA_CHECK_DEVICE(*this, "", cuMemcpyDtoDAsync(d(dst), d(src), size, copy_stream_));
      break;
  }
  synchronize_stream(copy_stream_, copy_stream_done_, "a blocking copy", [] { return std::string(); });
}

}  // namespace lrrt::rt::cuda

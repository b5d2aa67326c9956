// The host backend's native baseline (bench-only, include/lrrt/native_baseline.hpp):
// the kernel entry called directly, one workgroup after the other on the
// calling thread, and plain memcpy (also split over N threads of a pool).
// There is no native graph on the host (has_graph() stays false): a direct
// sequential call of the entries is already launch(), and `lrrt bench replay`
// reports that as its native per-launch row.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "error.hpp"
#include "host_executable.hpp"
#include "lrrt/native_baseline.hpp"
#include "thread_pool.hpp"

namespace lrrt::rt {
namespace {

class HostNativeBaseline final : public native::Baseline {
 public:
  std::string description() const override {
    return "direct call of the kernel entry per workgroup on the calling thread; memcpy";
  }

  int load_kernel(std::span<const std::byte> image, std::string_view name) override {
    // lrrt's own loader maps the shared object; what is timed is the call of
    // the entry it exports, which does not depend on how it was loaded.
    auto module = std::make_unique<host::HostModule>(image);
    auto& kernel = static_cast<host::HostKernel&>(module->kernel(name));
    kernels_.push_back({kernel.entry(), std::max<uint32_t>(kernel.info().kernarg_size, 8)});
    modules_.push_back(std::move(module));
    return static_cast<int>(kernels_.size() - 1);
  }

  void launch(int kernel, lr_dim3_t grid, lr_dim3_t block, std::span<const std::byte> args) override {
    const Entry& e = kernels_.at(static_cast<size_t>(kernel));
    alignas(64) std::byte kernargs[256] = {};
    if (args.size() > sizeof(kernargs)) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "arguments too large");
    if (!args.empty()) std::memcpy(kernargs, args.data(), args.size());
    lrrt_host_dispatch_state_t dispatch{};
    dispatch.workgroup_size[0] = block.x;
    dispatch.workgroup_size[1] = block.y;
    dispatch.workgroup_size[2] = block.z;
    dispatch.workgroup_count[0] = grid.x;
    dispatch.workgroup_count[1] = grid.y;
    dispatch.workgroup_count[2] = grid.z;
    dispatch.kernargs = kernargs;
    dispatch.kernarg_size = std::max<size_t>(e.kernarg_size, args.size());
    lrrt_host_workgroup_state_t wg{};
    for (uint32_t z = 0; z < grid.z; ++z)
      for (uint32_t y = 0; y < grid.y; ++y)
        for (uint32_t x = 0; x < grid.x; ++x) {
          wg.workgroup_id[0] = x;
          wg.workgroup_id[1] = y;
          wg.workgroup_id[2] = z;
          if (int rc = e.entry(&dispatch, &wg); rc != 0)
            LRRT_THROW(LR_ERROR_KERNEL_FAULT, "native call of the kernel entry returned {}", rc);
        }
  }

  void synchronize() override {}
  bool has_synchronize() const override { return false; }

  bool copy(void* dst, const void* src, size_t size, lr_memcpy_kind_t, bool) override {
    std::memcpy(dst, src, size);
    return true;
  }
  bool copy_from_peer(Baseline& src_baseline, void* dst, const void* src, size_t size) override {
    if (!dynamic_cast<const HostNativeBaseline*>(&src_baseline)) return false;
    std::memcpy(dst, src, size);  // one address space
    return true;
  }
  bool parallel_host_memcpy(void* dst, const void* src, size_t size, unsigned threads) override {
    // As the staging lanes' pool: workers spin 200 us before sleeping.
    if (!pool_ || pool_->threads() != threads) pool_ = std::make_unique<ThreadPool>(threads, std::chrono::microseconds(200));
    const size_t part = (size + threads - 1) / threads;
    pool_->run(threads, [&](unsigned i) {
      size_t begin = std::min(size, part * i), end = std::min(size, begin + part);
      std::memcpy(static_cast<std::byte*>(dst) + begin, static_cast<const std::byte*>(src) + begin, end - begin);
    });
    return true;
  }

  void* alloc_device(size_t size) override { return allocate(size); }
  void free_device(void* ptr) override { std::free(ptr); }
  void* alloc_pinned(size_t size) override { return allocate(size); }
  void free_pinned(void* ptr) override { std::free(ptr); }

 private:
  static void* allocate(size_t size) {
    size_t rounded = (size + 255) / 256 * 256;
    void* p = std::aligned_alloc(256, rounded ? rounded : 256);
    if (!p) throw std::bad_alloc();
    return p;
  }
  struct Entry {
    lrrt_host_kernel_fn_t entry;
    uint32_t kernarg_size;
  };
  std::vector<std::unique_ptr<host::HostModule>> modules_;
  std::vector<Entry> kernels_;
  std::unique_ptr<ThreadPool> pool_;  // parallel_host_memcpy's threads
};

}  // namespace

std::unique_ptr<native::Baseline> make_host_native_baseline(Device&) {
  return std::make_unique<HostNativeBaseline>();
}

}  // namespace lrrt::rt

// lrrt::native::make_baseline (include/lrrt/native_baseline.hpp): the public,
// bench-only face of the backends' native baselines (native_bench.hpp).
#include "lrrt/native_baseline.hpp"

#include <cstring>
#include <memory>

#include "error.hpp"
#include "native_bench.hpp"
#include "runtime.hpp"
#include "thread_pool.hpp"

namespace lrrt::native {
namespace {

template <typename F>
auto translate(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const rt::Error& e) {
    throw lrrt::Error(e.status(), e.what());
  }
}

class Adapter final : public Baseline {
 public:
  Adapter(std::unique_ptr<rt::NativeBaseline> impl, bool host) : impl_(std::move(impl)), host_(host) {}
  std::string description() const override { return impl_->description(); }
  int load_kernel(std::span<const std::byte> image, std::string_view name) override {
    return translate([&] { return impl_->load_kernel(image, name); });
  }
  void launch(int kernel, lr_dim3_t grid, lr_dim3_t block, std::span<const std::byte> args) override {
    translate([&] {
      impl_->launch(kernel, {grid.x, grid.y, grid.z}, {block.x, block.y, block.z}, args);
    });
  }
  void synchronize() override { translate([&] { impl_->synchronize(); }); }
  bool has_synchronize() const override { return impl_->has_synchronize(); }
  bool synchronize_blocking() override { return translate([&] { return impl_->synchronize_blocking(); }); }
  bool copy(void* dst, const void* src, size_t size, lr_memcpy_kind_t kind, bool async) override {
    return translate([&] { return impl_->copy(dst, src, size, rt::to_copy_kind(kind), async); });
  }
  bool parallel_host_memcpy(void* dst, const void* src, size_t size, unsigned threads) override {
    if (!host_) return false;
    if (!pool_ || pool_->threads() != threads) pool_ = std::make_unique<rt::ThreadPool>(threads, std::chrono::microseconds(200));
    const size_t part = (size + threads - 1) / threads;
    pool_->run(threads, [&](unsigned i) {
      size_t begin = std::min(size, part * i), end = std::min(size, begin + part);
      std::memcpy(static_cast<std::byte*>(dst) + begin, static_cast<const std::byte*>(src) + begin, end - begin);
    });
    return true;
  }
  void* alloc_device(size_t size) override { return translate([&] { return impl_->alloc_device(size); }); }
  void free_device(void* ptr) override { translate([&] { impl_->free_device(ptr); }); }
  void* alloc_pinned(size_t size) override { return translate([&] { return impl_->alloc_pinned(size); }); }
  void free_pinned(void* ptr) override { translate([&] { impl_->free_pinned(ptr); }); }

 private:
  std::unique_ptr<rt::NativeBaseline> impl_;
  bool host_;
  std::unique_ptr<rt::ThreadPool> pool_;
};

}  // namespace

std::unique_ptr<Baseline> make_baseline(lrrt::Device device) {
  return translate([&]() -> std::unique_ptr<Baseline> {
    rt::Runtime* r = rt::Runtime::instance();
    if (!r) throw rt::Error(LR_ERROR_NOT_INITIALIZED, "the runtime is not initialised");
    rt::DeviceState& state = r->device(device.get());
    rt::Device& d = r->opened(state);
    return std::make_unique<Adapter>(rt::make_native_baseline(state.backend->name, d),
                                     state.backend->name == "host");
  });
}

}  // namespace lrrt::native

// The cuda backend: loads the driver (cuda_symbols.cpp), counts devices and
// opens them. Never throws from initialize(): an unusable backend says why in
// one sentence.
#include "cuda_device.hpp"

namespace lrrt::rt::cuda {
namespace {

class CudaBackend final : public Backend {
 public:
  std::string_view name() const override { return "cuda"; }

  BackendStatus initialize() override {
    try {
      std::string error = load_cuda();
      if (!error.empty()) return {false, error};
      int count = 0;
      CUresult r = cu().cuDeviceGetCount(&count);
      if (r != CUDA_SUCCESS)
        return {false, fmt::format("cuDeviceGetCount failed: {}", cu_error_text(r))};
      if (count == 0)
        return {false, fmt::format("the CUDA driver ({}) sees no NVIDIA GPU", cu().library_name)};
      device_count_ = static_cast<uint32_t>(count);
      int v = cu().driver_version;
      return {true, fmt::format("CUDA driver API {}.{} ({}), {} device(s)", v / 1000, (v % 1000) / 10,
                                cu().library_name, count)};
    } catch (const std::exception& e) {
      return {false, e.what()};
    }
  }

  uint32_t device_count() const override { return device_count_; }

  std::unique_ptr<Device> open_device(uint32_t ordinal) override {
    if (ordinal >= device_count_)
      LRRT_THROW(LR_ERROR_NOT_FOUND, "cuda device {} does not exist: {} device(s) found", ordinal,
                 device_count_);
    CUdevice device = 0;
    LRRT_CUDA_CHECK(cu(), LR_ERROR_RUNTIME, cuDeviceGet(&device, static_cast<int>(ordinal)));
    return std::make_unique<CudaDevice>(ordinal, device);
  }

 private:
  uint32_t device_count_ = 0;
};

}  // namespace
}  // namespace lrrt::rt::cuda

namespace lrrt::rt {
std::unique_ptr<Backend> make_cuda_backend() {
  return std::make_unique<cuda::CudaBackend>();
}
}  // namespace lrrt::rt

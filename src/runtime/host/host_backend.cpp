#include <thread>

#include <fmt/format.h>

#include "error.hpp"
#include "host_device.hpp"

namespace lrrt::rt {
namespace host {

class HostBackend final : public Backend {
 public:
  std::string_view name() const override { return "host"; }
  BackendStatus initialize() override {
    return {true, fmt::format("CPU device with {} hardware threads; runs *.host.so kernels",
                              std::thread::hardware_concurrency())};
  }
  uint32_t device_count() const override { return 1; }
  std::unique_ptr<Device> open_device(uint32_t ordinal) override {
    if (ordinal != 0) LRRT_THROW(LR_ERROR_NOT_FOUND, "the host backend has one device (0), not {}", ordinal);
    return std::make_unique<HostDevice>();
  }
};

}  // namespace host

std::unique_ptr<Backend> make_host_backend() { return std::make_unique<host::HostBackend>(); }

}  // namespace lrrt::rt

#include <cstdlib>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "error.hpp"
#include "host_device.hpp"

namespace lrrt::rt {
namespace host {

// LRRT_HOST_DEVICES=N, a whole number from 1 to kMaxHostDevices (digits
// only): the host backend exposes N devices, each with its own thread pool,
// queues and allocations, so that every path over several devices (lrrt run
// --device all, peer copies, lrrt bench p2p) runs on a machine without
// several GPUs. The CLI checks the same rule (src/cli/common.cpp).
constexpr unsigned long kMaxHostDevices = 64;

class HostBackend final : public Backend {
 public:
  std::string_view name() const override { return "host"; }
  BackendStatus initialize() override {
    count_ = 1;
    if (const char* env = std::getenv("LRRT_HOST_DEVICES"); env && *env) {
      const std::string_view text = env;
      const bool digits = text.size() <= 9 && text.find_first_not_of("0123456789") == std::string_view::npos;
      const unsigned long v = digits ? std::strtoul(env, nullptr, 10) : 0;
      if (v < 1 || v > kMaxHostDevices)
        return {false, fmt::format("LRRT_HOST_DEVICES='{}' is not a whole number of devices from 1 to {}",
                                   text.substr(0, 64), kMaxHostDevices)};
      count_ = static_cast<uint32_t>(v);
    }
    return {true, fmt::format("CPU device with {} hardware threads; runs *.host.so kernels{}",
                              std::thread::hardware_concurrency(),
                              count_ > 1 ? fmt::format("; {} devices (LRRT_HOST_DEVICES)", count_) : "")};
  }
  uint32_t device_count() const override { return count_; }
  std::unique_ptr<Device> open_device(uint32_t ordinal) override {
    if (ordinal >= count_)
      LRRT_THROW(LR_ERROR_NOT_FOUND, "the host backend has {} device(s) (LRRT_HOST_DEVICES), not {}", count_, ordinal);
    return std::make_unique<HostDevice>(ordinal, count_);
  }

 private:
  uint32_t count_ = 1;
};

}  // namespace host

std::unique_ptr<Backend> make_host_backend() { return std::make_unique<host::HostBackend>(); }

}  // namespace lrrt::rt

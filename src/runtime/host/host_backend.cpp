#include <cstdlib>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "env.hpp"
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
    static_assert(env::kHostDevices.max == kMaxHostDevices);
    try {
      if (const auto devices = env::number(env::kHostDevices)) count_ = static_cast<uint32_t>(*devices);
    } catch (const Error& e) {
      return {false, e.what()};
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

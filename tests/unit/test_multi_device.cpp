// Several devices in one process (issue 23) on the host backend, which
// exposes N devices with LRRT_HOST_DEVICES=N: each device runs its own work
// on its own allocations, peer access is asked for and enabled per pair, and
// peer copies move fresh random data (destinations poisoned, every element
// checked). The cuda backend implements the same calls (cuDeviceCanAccessPeer,
// cuCtxEnablePeerAccess, cuMemcpyPeerAsync); no machine with several GPUs
// has run them yet.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "lrrt/lrrt.hpp"
#include "replay_test_support.hpp"

using namespace lrrt::test;

namespace {

// LRRT_HOST_DEVICES for one scope (read at lr_init).
struct HostDevices {
  explicit HostDevices(const char* n) { setenv("LRRT_HOST_DEVICES", n, 1); }
  ~HostDevices() { unsetenv("LRRT_HOST_DEVICES"); }
};

std::vector<lrrt::Device> host_devices(uint32_t n) {
  std::vector<lrrt::Device> out;
  for (uint32_t i = 0; i < n; ++i) out.push_back(lrrt::Device::select("host", i));
  return out;
}

}  // namespace

TEST_CASE("multi-device: LRRT_HOST_DEVICES=3 gives three host devices, each runs its own saxpy at once") {
  HostDevices env("3");
  lrrt::Runtime runtime;
  auto devices = host_devices(3);
  lr_device_t none{};
  CHECK(lr_device_select("host", 3, &none) != LR_SUCCESS);
  CHECK(std::string(lr_last_error_message()).find("3 device(s)") != std::string::npos);
  for (uint32_t i = 0; i < 3; ++i) {
    bool named = false;
    for (const auto& [key, value] : devices[i].details())
      named |= key == "host device" && value.find(std::to_string(i) + " of 3") == 0;
    CHECK_MESSAGE(named, "device ", i, " says which host device it is");
  }
  const uint32_t n = 5003;
  std::vector<std::thread> threads;
  std::vector<int> wrong(3, -1);
  for (uint32_t d = 0; d < 3; ++d)
    threads.emplace_back([&, d] {
      lrrt::Device& dev = devices[d];
      lrrt::Module module(dev, read_file(kernel_file("host", "saxpy")));
      lrrt::Kernel saxpy = module.kernel("saxpy");
      std::vector<float> x(n), y0(n);
      for (uint32_t i = 0; i < n; ++i) {
        x[i] = float((i * 7 + d * 13) % 97);
        y0[i] = float((i * 3 + d) % 89);
      }
      lrrt::DeviceBuffer dx(dev, n * 4), dy(dev, n * 4);
      lrrt::copy_to_device(dx, x);
      lrrt::copy_to_device(dy, y0);
      const float a = float(d + 2);
      lrrt::launch(saxpy, config_for(n, 64), SaxpyArgs{a, dx.data(), dy.data(), n});
      dev.synchronize();
      std::vector<float> y(n, kPoison);
      lrrt::copy_to_host(y, dy);
      int bad = 0;
      for (uint32_t i = 0; i < n; ++i) bad += y[i] != y0[i] + a * x[i];
      wrong[d] = bad;
    });
  for (auto& t : threads) t.join();
  CHECK(wrong == std::vector<int>{0, 0, 0});
}

TEST_CASE("multi-device: a kernel of one host device does not launch on another's queue") {
  HostDevices env("2");
  lrrt::Runtime runtime;
  auto devices = host_devices(2);
  lrrt::Module module(devices[0], read_file(kernel_file("host", "saxpy")));
  lrrt::Queue other(devices[1]);
  SaxpyArgs args{1.0f, nullptr, nullptr, 0};
  lr_launch_config_t cfg{{1, 1, 1}, {1, 1, 1}, 0};
  CHECK(lr_launch_on_queue(other.get(), module.kernel("saxpy").get(), &cfg, &args, sizeof args) ==
        LR_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(lr_last_error_message()).find("belongs to device 0 but the queue to device 1") != std::string::npos);
}

TEST_CASE("multi-device: peer access is asked for and enabled per pair, copies move every element") {
  HostDevices env("3");
  lrrt::Runtime runtime;
  auto devices = host_devices(3);
  for (uint32_t a = 0; a < 3; ++a)
    for (uint32_t b = 0; b < 3; ++b) CHECK(devices[a].can_access_peer(devices[b]) == (a != b));
  // Not its own peer.
  CHECK(lr_device_enable_peer_access(devices[1].get(), devices[1].get()) == LR_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(lr_last_error_message()).find("not its own peer") != std::string::npos);

  const size_t n = 70001;  // not a multiple of anything
  auto data = random_whole(n, -1000000, 1000000);
  lrrt::DeviceBuffer src(devices[0], n * 4), dst(devices[2], n * 4), back(devices[0], n * 4);
  lrrt::copy_to_device(src, data);
  std::vector<float> poison(n, kPoison);
  lrrt::copy_to_device(dst, poison);

  // Before enabling: refused, naming both devices and what to call.
  CHECK(lr_memcpy_peer(devices[2].get(), dst.data(), devices[0].get(), src.data(), n * 4) == LR_ERROR_INVALID_ARGUMENT);
  std::string msg = lr_last_error_message();
  CHECK_MESSAGE(msg.find("device 2 (host") != std::string::npos, msg);
  CHECK_MESSAGE(msg.find("device 0 (host") != std::string::npos, msg);
  CHECK_MESSAGE(msg.find("lr_device_enable_peer_access(2, 0)") != std::string::npos, msg);
  std::vector<float> got(n);
  lrrt::copy_to_host(got, dst);
  CHECK(std::isnan(got[0]));  // nothing was copied

  devices[2].enable_peer_access(devices[0]);
  devices[2].enable_peer_access(devices[0]);  // idempotent
  lrrt::copy_peer(dst, src, n * 4);
  lrrt::copy_to_host(got, dst);
  size_t wrong = 0;
  for (size_t i = 0; i < n; ++i) wrong += got[i] != data[i];
  CHECK(wrong == 0);

  // One direction: 0 may not read 2's memory yet.
  CHECK(lr_memcpy_peer(devices[0].get(), back.data(), devices[2].get(), dst.data(), n * 4) == LR_ERROR_INVALID_ARGUMENT);

  // Async, with an event of the destination and a dependency of the source:
  // a kernel on device 0 rewrites src, then the copy takes the new values.
  devices[0].enable_peer_access(devices[2]);
  lrrt::Module module(devices[0], read_file(kernel_file("host", "saxpy")));
  lrrt::Event produced(devices[0]), copied(devices[2]), wrong_device(devices[1]);
  auto ones = std::vector<float>(n, 1.0f);
  lrrt::DeviceBuffer x(devices[0], n * 4);
  lrrt::copy_to_device(x, ones);
  lrrt::launch(module.kernel("saxpy"), config_for(uint32_t(n), 64), SaxpyArgs{3.0f, x.data(), src.data(), uint32_t(n)});
  produced.record();
  lrrt::copy_to_device(dst, poison);
  lr_event_t* deps[] = {produced.get()};
  CHECK(lr_memcpy_peer_async(devices[2].get(), dst.data(), devices[0].get(), src.data(), n * 4, copied.get(), deps, 1) ==
        LR_SUCCESS);
  copied.synchronize();
  lrrt::copy_to_host(got, dst);
  wrong = 0;
  for (size_t i = 0; i < n; ++i) wrong += got[i] != data[i] + 3.0f;
  CHECK(wrong == 0);

  // Events of a third device are refused, naming it; so is an event that is
  // not the destination's.
  lr_event_t* third[] = {wrong_device.get()};
  CHECK(lr_memcpy_peer_async(devices[2].get(), dst.data(), devices[0].get(), src.data(), 64, nullptr, third, 1) ==
        LR_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(lr_last_error_message()).find("belongs to device 1") != std::string::npos);
  CHECK(lr_memcpy_peer_async(devices[2].get(), dst.data(), devices[0].get(), src.data(), 64, produced.get(), nullptr, 0) ==
        LR_ERROR_INVALID_ARGUMENT);
  CHECK(lr_memcpy_peer_async(devices[2].get(), nullptr, devices[0].get(), src.data(), 64, nullptr, nullptr, 0) ==
        LR_ERROR_INVALID_ARGUMENT);
  uint32_t can = 7;
  CHECK(lr_device_can_access_peer(devices[0].get(), devices[1].get(), nullptr) == LR_ERROR_INVALID_ARGUMENT);
  CHECK(lr_device_can_access_peer(devices[0].get(), lr_device_t{99}, &can) == LR_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("multi-device: LRRT_HOST_DEVICES takes a whole number from 1 to 64, anything else says why") {
  for (const char* bad : {"0", "65", "-1", "two", "1.5", " 2"}) {
    CAPTURE(bad);
    HostDevices env(bad);
    // lr_init checks every LRRT_* variable first (lr_check_environment).
    REQUIRE(lr_init() == LR_ERROR_INVALID_ARGUMENT);
    const std::string msg = lr_last_error_message();
    CHECK_MESSAGE(msg.find(std::string("LRRT_HOST_DEVICES='") + bad + "'") != std::string::npos, msg);
  }
}

#if defined(LRRT_TEST_HSA)
TEST_CASE("multi-device: devices of different backends are never peers, and the error names both") {
  point_hsa_at_standin();
  lrrt::Runtime runtime;
  auto host = lrrt::Device::select("host");
  auto hsa = lrrt::Device::select("hsa");
  CHECK_FALSE(host.can_access_peer(hsa));
  CHECK(lr_device_enable_peer_access(hsa.get(), host.get()) == LR_ERROR_NOT_SUPPORTED);
  const std::string msg = lr_last_error_message();
  CHECK_MESSAGE(msg.find("different backends") != std::string::npos, msg);
  CHECK_MESSAGE(msg.find("(hsa,") != std::string::npos, msg);
  CHECK_MESSAGE(msg.find("(host,") != std::string::npos, msg);
}
#endif

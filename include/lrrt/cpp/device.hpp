// lrrt C++ wrapper: Device: selection, properties, details, memory info, peer access,
// tensor maps, memory stats, synchronize.
// One concept of lrrt/lrrt.hpp, the header to include.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "lrrt/c/device.h"
#include "lrrt/c/memory.h"
#include "lrrt/c/memory_stats.h"
#include "lrrt/c/module.h"
#include "lrrt/c/tensor_map.h"
#include "lrrt/cpp/error.hpp"

namespace lrrt {

using MemoryStats = lr_memory_stats_t;

class Device {
 public:
  Device() = default;
  explicit Device(lr_device_t device) : device_(device) {}
  static Device open(uint32_t index) {
    lr_device_t d{};
    check(lr_device_open(index, &d), "lr_device_open");
    return Device(d);
  }
  // backend: "auto", "host", "hsa", "cuda".
  static Device select(const std::string& backend, uint32_t ordinal = 0) {
    lr_device_t d{};
    check(lr_device_select(backend.c_str(), ordinal, &d), "lr_device_select");
    return Device(d);
  }

  lr_device_t get() const { return device_; }
  uint32_t index() const { return device_.index; }
  lr_device_properties_t properties() const {
    lr_device_properties_t p{};
    check(lr_device_get_properties(device_, &p), "lr_device_get_properties");
    return p;
  }
  std::string name() const { return properties().name; }
  // Backend-specific facts (driver version, clocks, PCIe link, ...).
  std::vector<std::pair<std::string, std::string>> details() const {
    uint32_t n = 0;
    check(lr_device_detail_count(device_, &n), "lr_device_detail_count");
    std::vector<std::pair<std::string, std::string>> out;
    for (uint32_t i = 0; i < n; ++i) {
      char key[LR_NAME_CAPACITY] = {}, value[LR_MESSAGE_CAPACITY] = {};
      check(lr_device_get_detail(device_, i, key, sizeof(key), value, sizeof(value)), "lr_device_get_detail");
      out.emplace_back(key, value);
    }
    return out;
  }
  // Last-level cache and peak memory bandwidth (lr_device_get_memory_info).
  lr_device_memory_info_t memory_info() const {
    lr_device_memory_info_t m{};
    check(lr_device_get_memory_info(device_, &m), "lr_device_get_memory_info");
    return m;
  }
  std::string backend() const { return properties().backend; }
  void synchronize() const { check(lr_synchronize(device_), "lr_synchronize"); }
  // Peer access (lr_device_can_access_peer, lr_device_enable_peer_access).
  bool can_access_peer(const Device& peer) const {
    uint32_t can = 0;
    check(lr_device_can_access_peer(device_, peer.device_, &can), "lr_device_can_access_peer");
    return can != 0;
  }
  void enable_peer_access(const Device& peer) const {
    check(lr_device_enable_peer_access(device_, peer.device_), "lr_device_enable_peer_access");
  }
  // The 128-byte TMA descriptor of `desc` (lr_tensor_map_encode: cuda sm_90+),
  // aligned for a kernel argument.
  struct alignas(LR_TENSOR_MAP_ALIGN) TensorMap {
    std::byte bytes[LR_TENSOR_MAP_BYTES];
  };
  TensorMap tensor_map(const lr_tensor_map_desc_t& desc) const {
    TensorMap m{};
    check(lr_tensor_map_encode(device_, &desc, m.bytes), "lr_tensor_map_encode");
    return m;
  }
  MemoryStats memory_stats() const {
    MemoryStats s{};
    check(lr_get_memory_stats(device_, &s), "lr_get_memory_stats");
    return s;
  }
  void reset_memory_stats() const { check(lr_reset_memory_stats(device_), "lr_reset_memory_stats"); }

 private:
  lr_device_t device_{};
};

inline void synchronize(Device device) { device.synchronize(); }

}  // namespace lrrt

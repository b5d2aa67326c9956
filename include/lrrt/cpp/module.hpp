// lrrt C++ wrapper: LaunchConfig, Kernel, Module, Triton cache entries, launches.
// One concept of lrrt/lrrt.hpp, the header to include.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "lrrt/c/graph.h"
#include "lrrt/c/module.h"
#include "lrrt/cpp/device.hpp"
#include "lrrt/cpp/error.hpp"
#include "lrrt/cpp/handle.hpp"
#include "lrrt/cpp/queue.hpp"

namespace lrrt {

using LaunchConfig = lr_launch_config_t;

inline LaunchConfig launch_config(lr_dim3_t grid, lr_dim3_t block, uint32_t shared_bytes = 0) {
  return LaunchConfig{grid, block, shared_bytes};
}

class Kernel {
 public:
  Kernel() = default;
  explicit Kernel(lr_kernel_t* kernel) : kernel_(kernel) {}
  lr_kernel_t* get() const { return kernel_; }
  lr_kernel_properties_t properties() const {
    lr_kernel_properties_t p{};
    check(lr_kernel_get_properties(kernel_, &p), "lr_kernel_get_properties");
    return p;
  }
  std::vector<lr_kernel_arg_t> args() const {
    auto p = properties();
    std::vector<lr_kernel_arg_t> out(p.arg_count);
    for (uint32_t i = 0; i < p.arg_count; ++i) check(lr_kernel_get_arg(kernel_, i, &out[i]), "lr_kernel_get_arg");
    return out;
  }
  // The access a graph derives for argument `index` and where it comes from.
  std::pair<lr_access_mode_t, lr_access_source_t> arg_access(uint32_t index) const {
    lr_access_mode_t mode = LR_ACCESS_READ_WRITE;
    lr_access_source_t source = LR_ACCESS_SOURCE_DEFAULT;
    check(lr_kernel_get_arg_access(kernel_, index, &mode, &source), "lr_kernel_get_arg_access");
    return {mode, source};
  }
  // The Triton IR the kernel was compiled from: its pointer parameters get
  // the accesses lrrt's analysis proves (docs/access.md).
  void set_triton_ir(const std::string& ir_text) const {
    check(lr_kernel_set_triton_ir(kernel_, ir_text.c_str()), "lr_kernel_set_triton_ir");
  }
  // lr_kernel_flags_t bits (LR_KERNEL_WAITS_FOR_PRODUCER).
  void set_flags(uint32_t flags) const { check(lr_kernel_set_flags(kernel_, flags), "lr_kernel_set_flags"); }
  uint32_t flags() const {
    uint32_t f = 0;
    check(lr_kernel_get_flags(kernel_, &f), "lr_kernel_get_flags");
    return f;
  }

 private:
  lr_kernel_t* kernel_ = nullptr;  // owned by its Module
};

class Module {
 public:
  Module(Device device, std::span<const std::byte> image) {
    lr_module_t* m = nullptr;
    check(lr_module_load(device.get(), image.data(), image.size(), &m), "lr_module_load");
    module_ = Handle(m);
  }
  template <typename T>
  Module(Device device, const std::vector<T>& image)
      : Module(device, std::as_bytes(std::span<const T>(image))) {}
  lr_module_t* get() const { return module_.get(); }
  Kernel kernel(const std::string& name) const {
    lr_kernel_t* k = nullptr;
    check(lr_kernel_get(get(), name.c_str(), &k), "lr_kernel_get");
    return Kernel(k);
  }
  // Which code object of the image was loaded and why (lr_module_source).
  std::string source() const {
    size_t size = 0;
    lr_module_source(get(), nullptr, &size);  // fails, saying how much room it needs
    std::string text(size, '\0');
    check(lr_module_source(get(), text.data(), &size), "lr_module_source");
    text.resize(size ? size - 1 : 0);
    return text;
  }
  std::vector<std::string> kernel_names() const {
    uint32_t n = 0;
    check(lr_module_kernel_count(get(), &n), "lr_module_kernel_count");
    std::vector<std::string> out;
    for (uint32_t i = 0; i < n; ++i) {
      char name[LR_NAME_CAPACITY] = {};
      check(lr_module_kernel_name(get(), i, name, sizeof(name)), "lr_module_kernel_name");
      out.emplace_back(name);
    }
    return out;
  }

 private:
  using Handle = UniqueHandle<lr_module_t, lr_module_destroy>;
  Handle module_;
};

// Launches with raw packed argument bytes.
// A Triton cache entry (its folder or <name>.json) described as JSON
// (lr_triton_describe; docs/triton.md). Needs no device.
inline std::string triton_describe(const std::string& path) {
  size_t size = 0;
  if (lr_triton_describe(path.c_str(), nullptr, &size) != LR_ERROR_INVALID_ARGUMENT || size == 0)
    check(lr_triton_describe(path.c_str(), nullptr, &size), "lr_triton_describe");
  std::string text(size, '\0');
  check(lr_triton_describe(path.c_str(), text.data(), &size), "lr_triton_describe");
  text.resize(size ? size - 1 : 0);
  return text;
}

inline void launch(const Kernel& kernel, const LaunchConfig& config, std::span<const std::byte> args) {
  check(lr_launch(kernel.get(), &config, args.data(), args.size()), "lr_launch");
}
inline void launch(const Queue& queue, const Kernel& kernel, const LaunchConfig& config,
                   std::span<const std::byte> args) {
  check(lr_launch_on_queue(queue.get(), kernel.get(), &config, args.data(), args.size()),
        "lr_launch_on_queue");
}
// Launches with a trivially copyable struct holding the arguments. (A
// container is no such struct: a std::vector of packed bytes goes to the
// span overload above, not as its own 24 bytes.)
template <typename Args>
  requires std::is_trivially_copyable_v<Args>
void launch(const Kernel& kernel, const LaunchConfig& config, const Args& args) {
  launch(kernel, config, std::as_bytes(std::span<const Args>(&args, 1)));
}
template <typename Args>
  requires std::is_trivially_copyable_v<Args>
void launch(const Queue& queue, const Kernel& kernel, const LaunchConfig& config, const Args& args) {
  launch(queue, kernel, config, std::as_bytes(std::span<const Args>(&args, 1)));
}

}  // namespace lrrt

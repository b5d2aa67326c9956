// C++ RAII wrapper over the lrrt C ABI (lrrt.h). Header-only; failures throw
// lrrt::Error carrying the status and lr_last_error_message().
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "lrrt/lrrt.h"

namespace lrrt {

class Error : public std::runtime_error {
 public:
  Error(lr_status_t status, const std::string& what)
      : std::runtime_error(what), status_(status) {}
  lr_status_t status() const noexcept { return status_; }

 private:
  lr_status_t status_;
};

inline void check(lr_status_t status, const char* operation) {
  if (status == LR_SUCCESS) return;
  // The C ABI's message already starts with the function's name.
  std::string message = lr_last_error_message();
  if (message.empty()) message = std::string(operation) + ": " + lr_status_string(status);
  throw Error(status, message);
}

using MemoryStats = lr_memory_stats_t;
using LaunchConfig = lr_launch_config_t;

inline LaunchConfig launch_config(lr_dim3_t grid, lr_dim3_t block, uint32_t shared_bytes = 0) {
  return LaunchConfig{grid, block, shared_bytes};
}

// Owns lr_init/lr_shutdown. One per process at a time.
class Runtime {
 public:
  Runtime() { check(lr_init(), "lr_init"); }
  ~Runtime() { (void)lr_shutdown(); }
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  static std::vector<lr_backend_info_t> backends() {
    uint32_t n = 0;
    check(lr_backend_count(&n), "lr_backend_count");
    std::vector<lr_backend_info_t> out(n);
    for (uint32_t i = 0; i < n; ++i) check(lr_backend_get_info(i, &out[i]), "lr_backend_get_info");
    return out;
  }
  static uint32_t device_count() {
    uint32_t n = 0;
    check(lr_device_count(&n), "lr_device_count");
    return n;
  }
};

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

// Moves a raw handle and runs `destroy` once; the building block of every
// owning wrapper below.
template <typename Handle, lr_status_t (*Destroy)(Handle*)>
class UniqueHandle {
 public:
  UniqueHandle() = default;
  explicit UniqueHandle(Handle* h) : handle_(h) {}
  ~UniqueHandle() { reset(); }
  UniqueHandle(UniqueHandle&& o) noexcept : handle_(std::exchange(o.handle_, nullptr)) {}
  UniqueHandle& operator=(UniqueHandle&& o) noexcept {
    if (this != &o) {
      reset();
      handle_ = std::exchange(o.handle_, nullptr);
    }
    return *this;
  }
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;
  Handle* get() const { return handle_; }
  void reset() {
    if (handle_) (void)Destroy(std::exchange(handle_, nullptr));
  }

 private:
  Handle* handle_ = nullptr;
};

class Queue {
 public:
  explicit Queue(Device device) {
    lr_queue_t* q = nullptr;
    check(lr_queue_create(device.get(), &q), "lr_queue_create");
    queue_ = Handle(q);
  }
  lr_queue_t* get() const { return queue_.get(); }
  void synchronize() const { check(lr_queue_synchronize(get()), "lr_queue_synchronize"); }

 private:
  using Handle = UniqueHandle<lr_queue_t, lr_queue_destroy>;
  Handle queue_;
};

class Event {
 public:
  explicit Event(Device device) {
    lr_event_t* e = nullptr;
    check(lr_event_create(device.get(), &e), "lr_event_create");
    event_ = Handle(e);
  }
  lr_event_t* get() const { return event_.get(); }
  void record() { check(lr_event_record(get()), "lr_event_record"); }
  void record(const Queue& queue) {
    check(lr_event_record_on_queue(get(), queue.get()), "lr_event_record_on_queue");
  }
  void synchronize() const { check(lr_event_synchronize(get()), "lr_event_synchronize"); }
  // Nanoseconds from start to this event.
  uint64_t elapsed_ns_since(const Event& start) const {
    uint64_t ns = 0;
    check(lr_event_elapsed_time_ns(start.get(), get(), &ns), "lr_event_elapsed_time_ns");
    return ns;
  }
  uint64_t duration_ns() const {
    uint64_t ns = 0;
    check(lr_event_duration_ns(get(), &ns), "lr_event_duration_ns");
    return ns;
  }

 private:
  using Handle = UniqueHandle<lr_event_t, lr_event_destroy>;
  Handle event_;
};

// Owns one allocation made by Traits::allocate and released by Traits::release
// (lr_malloc/lr_free or lr_host_malloc/lr_host_free).
template <typename Traits>
class Allocation {
 public:
  Allocation() = default;
  Allocation(Device device, size_t size) : device_(device), size_(size) {
    check(Traits::allocate(device.get(), size, &ptr_), Traits::name);
  }
  ~Allocation() { reset(); }
  Allocation(Allocation&& o) noexcept
      : device_(o.device_), ptr_(std::exchange(o.ptr_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  Allocation& operator=(Allocation&& o) noexcept {
    if (this != &o) {
      reset();
      device_ = o.device_;
      ptr_ = std::exchange(o.ptr_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  Allocation(const Allocation&) = delete;
  Allocation& operator=(const Allocation&) = delete;

  void* data() const { return ptr_; }
  template <typename T>
  T* as() const { return static_cast<T*>(ptr_); }
  size_t size() const { return size_; }
  Device device() const { return device_; }
  void reset() {
    if (ptr_) (void)Traits::release(device_.get(), std::exchange(ptr_, nullptr));
    size_ = 0;
  }

 private:
  Device device_;
  void* ptr_ = nullptr;
  size_t size_ = 0;
};

struct DeviceMemoryTraits {
  static constexpr auto allocate = lr_malloc;
  static constexpr auto release = lr_free;
  static constexpr const char* name = "lr_malloc";
};
struct PinnedHostMemoryTraits {
  static constexpr auto allocate = lr_host_malloc;
  static constexpr auto release = lr_host_free;
  static constexpr const char* name = "lr_host_malloc";
};

// Device memory; as<T>() on it gives a device pointer, not host-readable.
using DeviceBuffer = Allocation<DeviceMemoryTraits>;
// Page-locked host memory the device reaches directly.
using PinnedHostBuffer = Allocation<PinnedHostMemoryTraits>;

// Declares memory lrrt did not allocate to the device's graphs for its
// lifetime (lr_memory_register / lr_memory_unregister); the memory itself
// stays the caller's and must outlive every exec that uses it.
class MemoryRegistration {
 public:
  MemoryRegistration() = default;
  MemoryRegistration(Device device, void* ptr, size_t size) : device_(device), ptr_(ptr), size_(size) {
    check(lr_memory_register(device.get(), ptr, size), "lr_memory_register");
  }
  ~MemoryRegistration() { reset(); }
  MemoryRegistration(MemoryRegistration&& o) noexcept
      : device_(o.device_), ptr_(std::exchange(o.ptr_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  MemoryRegistration& operator=(MemoryRegistration&& o) noexcept {
    if (this != &o) {
      reset();
      device_ = o.device_;
      ptr_ = std::exchange(o.ptr_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  MemoryRegistration(const MemoryRegistration&) = delete;
  MemoryRegistration& operator=(const MemoryRegistration&) = delete;

  void* data() const { return ptr_; }
  size_t size() const { return size_; }
  void reset() {
    if (ptr_) (void)lr_memory_unregister(device_.get(), std::exchange(ptr_, nullptr));
    size_ = 0;
  }

 private:
  Device device_;
  void* ptr_ = nullptr;
  size_t size_ = 0;
};

inline void copy_to_device(const DeviceBuffer& dst, const void* src, size_t size) {
  check(lr_memcpy(dst.device().get(), dst.data(), src, size, LR_MEMCPY_HOST_TO_DEVICE), "lr_memcpy H2D");
}
inline void copy_to_host(void* dst, const DeviceBuffer& src, size_t size) {
  check(lr_memcpy(src.device().get(), dst, src.data(), size, LR_MEMCPY_DEVICE_TO_HOST), "lr_memcpy D2H");
}
template <typename T>
void copy_to_device(const DeviceBuffer& dst, const std::vector<T>& src) {
  copy_to_device(dst, src.data(), src.size() * sizeof(T));
}
template <typename T>
void copy_to_host(std::vector<T>& dst, const DeviceBuffer& src) {
  copy_to_host(dst.data(), src, dst.size() * sizeof(T));
}
// Between two devices' buffers (peer access enabled from dst's device to
// src's first): lr_memcpy_peer, waiting for both devices before and the
// copy after.
inline void copy_peer(const DeviceBuffer& dst, const DeviceBuffer& src, size_t size) {
  check(lr_memcpy_peer(dst.device().get(), dst.data(), src.device().get(), src.data(), size), "lr_memcpy_peer");
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

// ---- Retained replay ------------------------------------------------------
//
//   lrrt::Graph graph(device);
//   auto n = graph.add_kernel(saxpy, cfg, args, {lrrt::read_access(x), lrrt::read_write_access(y)});
//   lrrt::GraphExec exec = graph.instantiate();
//   for (...) exec.launch(queue);
//   exec.set_kernarg(n, 0, 2.0f);  // after exec.synchronize()
//
// Declares access to bytes [p + offset, p + offset + bytes); bytes = 0 reaches
// the end of the allocation.
inline lr_graph_access_t read_access(const void* p, uint64_t bytes = 0, uint64_t offset = 0) {
  return {p, offset, bytes, LR_ACCESS_READ};
}
inline lr_graph_access_t write_access(const void* p, uint64_t bytes = 0, uint64_t offset = 0) {
  return {p, offset, bytes, LR_ACCESS_WRITE};
}
inline lr_graph_access_t read_write_access(const void* p, uint64_t bytes = 0, uint64_t offset = 0) {
  return {p, offset, bytes, LR_ACCESS_READ_WRITE};
}
inline lr_graph_access_t read_access(const DeviceBuffer& b) { return read_access(b.data()); }
inline lr_graph_access_t write_access(const DeviceBuffer& b) { return write_access(b.data()); }
inline lr_graph_access_t read_write_access(const DeviceBuffer& b) { return read_write_access(b.data()); }

using GraphNode = lr_graph_node_t;

// An instantiated graph: replayed with launch(), arguments patched between
// replays with set_kernargs(). Destroying it waits for its replays.
class GraphExec {
 public:
  explicit GraphExec(lr_graph_exec_t* exec) : exec_(exec) {}
  lr_graph_exec_t* get() const { return exec_.get(); }
  // On the device's default queue, or on `queue`; `completion` completes
  // when the replay finished.
  void launch() const { check(lr_graph_exec_launch(get(), nullptr), "lr_graph_exec_launch"); }
  void launch(const Queue& queue) const { check(lr_graph_exec_launch(get(), queue.get()), "lr_graph_exec_launch"); }
  void launch(const Queue& queue, Event& completion) const {
    check(lr_graph_exec_launch_with_event(get(), queue.get(), completion.get()), "lr_graph_exec_launch_with_event");
  }
  void synchronize() const { check(lr_graph_exec_synchronize(get()), "lr_graph_exec_synchronize"); }
  // True when no replay is running.
  bool complete() const {
    uint32_t done = 0;
    check(lr_graph_exec_query(get(), &done), "lr_graph_exec_query");
    return done != 0;
  }
  // Throws lrrt::Error with LR_ERROR_BUSY while a replay runs (unless the
  // exec was instantiated with LR_GRAPH_PATCH_WAITS).
  void set_kernargs(GraphNode node, size_t offset, std::span<const std::byte> bytes) const {
    check(lr_graph_exec_set_kernargs(get(), node, offset, bytes.data(), bytes.size()), "lr_graph_exec_set_kernargs");
  }
  template <typename T>
  void set_kernarg(GraphNode node, size_t offset, const T& value) const {
    set_kernargs(node, offset, std::as_bytes(std::span<const T>(&value, 1)));
  }
  // Replays that may be in flight at once (lr_graph_exec_set_max_in_flight).
  void set_max_in_flight(uint32_t count) const {
    check(lr_graph_exec_set_max_in_flight(get(), count), "lr_graph_exec_set_max_in_flight");
  }
  lr_graph_exec_stats_t stats() const {
    lr_graph_exec_stats_t s{};
    check(lr_graph_exec_get_stats(get(), &s), "lr_graph_exec_get_stats");
    return s;
  }
  // The plan as JSON (lr_graph_exec_get_plan).
  std::string plan_json() const {
    size_t length = 0;
    check(lr_graph_exec_get_plan(get(), nullptr, 0, &length), "lr_graph_exec_get_plan");
    std::string out(length + 1, '\0');
    check(lr_graph_exec_get_plan(get(), out.data(), out.size(), &length), "lr_graph_exec_get_plan");
    out.resize(length);
    return out;
  }

 private:
  UniqueHandle<lr_graph_exec_t, lr_graph_exec_destroy> exec_;
};

// A recording of kernel dispatches, copies and fills.
class Graph {
 public:
  explicit Graph(Device device) {
    lr_graph_t* g = nullptr;
    check(lr_graph_create(device.get(), &g), "lr_graph_create");
    graph_ = Handle(g);
  }
  lr_graph_t* get() const { return graph_.get(); }

  GraphNode add_kernel(const Kernel& kernel, const LaunchConfig& config, std::span<const std::byte> args,
                       std::span<const lr_graph_access_t> accesses, uint32_t flags = 0) {
    GraphNode node = 0;
    check(lr_graph_add_kernel_ex(get(), kernel.get(), &config, args.data(), args.size(), accesses.data(),
                                 accesses.size(), flags, &node),
          "lr_graph_add_kernel");
    return node;
  }
  // LR_GRAPH_KERNEL_DERIVE_ACCESS: the pointer arguments `accesses` does not
  // cover get the access the kernel proves (lr_kernel_get_arg_access).
  GraphNode add_kernel_derived(const Kernel& kernel, const LaunchConfig& config, std::span<const std::byte> args,
                               std::span<const lr_graph_access_t> accesses = {}) {
    return add_kernel(kernel, config, args, accesses, LR_GRAPH_KERNEL_DERIVE_ACCESS);
  }
  GraphNode add_kernel(const Kernel& kernel, const LaunchConfig& config, std::span<const std::byte> args,
                       std::initializer_list<lr_graph_access_t> accesses) {
    return add_kernel(kernel, config, args, std::span<const lr_graph_access_t>(accesses.begin(), accesses.size()));
  }
  // With a trivially copyable struct holding the arguments.
  template <typename Args>
  GraphNode add_kernel(const Kernel& kernel, const LaunchConfig& config, const Args& args,
                       std::initializer_list<lr_graph_access_t> accesses) {
    return add_kernel(kernel, config, std::as_bytes(std::span<const Args>(&args, 1)), accesses);
  }
  GraphNode add_copy(void* dst, const void* src, size_t size, lr_memcpy_kind_t kind) {
    GraphNode node = 0;
    check(lr_graph_add_copy(get(), dst, src, size, kind, &node), "lr_graph_add_copy");
    return node;
  }
  // Fills count elements of T (1, 2 or 4 bytes) at dst with value.
  template <typename T>
  GraphNode add_fill(void* dst, size_t count, const T& value) {
    static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4, "fill patterns are 1, 2 or 4 bytes");
    GraphNode node = 0;
    check(lr_graph_add_fill(get(), dst, count * sizeof(T), &value, sizeof(T), &node), "lr_graph_add_fill");
    return node;
  }
  // `to` runs after `from`.
  void add_dependency(GraphNode from, GraphNode to) {
    check(lr_graph_add_dependency(get(), from, to), "lr_graph_add_dependency");
  }
  GraphExec instantiate(const lr_graph_instantiate_options_t* options = nullptr) const {
    lr_graph_exec_t* e = nullptr;
    check(lr_graph_instantiate(get(), options, &e), "lr_graph_instantiate");
    return GraphExec(e);
  }

 private:
  using Handle = UniqueHandle<lr_graph_t, lr_graph_destroy>;
  Handle graph_;
};

// Two pinned staging buffers for a producer loop, three stages at once: the
// CPU fills one slot while the other slot's H2D copy runs on the device's
// copy queue and the kernel of the round before runs on the default queue.
//
//   PinnedHostDoubleBuffer db(device, bytes);
//   for (...) {
//     auto& slot = db.acquire();                      // waits until the slot's last copy has read it
//     fill(slot.host.data());
//     db.copy_to_device_async(slot, dst, n);          // H2D on the copy queue, after the slot's last work
//     db.launch_after_copy(slot, kernel, cfg, args);  // on the default queue, after this copy
//     db.mark_work_submitted(slot);                   // the slot's next copy waits for this work
//   }
//   db.finish();
//
// The copy waits only for the slot's own last work (which read the data the
// copy overwrites, when the destination alternates with the slot), not for
// every earlier dispatch, so it overlaps the other slot's kernel. A kernel
// launched with plain lr_launch after copy_to_device_async does not wait for
// the copy: launch it with launch_after_copy (or with slot.copied among its
// dependencies).
class PinnedHostDoubleBuffer {
 public:
  struct Slot {
    PinnedHostBuffer host;
    Event copied;  // completes when the slot's last copy has read `host`
    Event ready;   // completes when the work submitted after the slot's last copy is done
    bool copying = false, in_flight = false;
  };

  PinnedHostDoubleBuffer(Device device, size_t slot_bytes)
      : device_(device),
        slots_{Slot{PinnedHostBuffer(device, slot_bytes), Event(device), Event(device)},
               Slot{PinnedHostBuffer(device, slot_bytes), Event(device), Event(device)}} {}

  size_t slot_bytes() const { return slots_[0].host.size(); }

  Slot& acquire() {
    Slot& slot = slots_[next_];
    next_ ^= 1;
    if (slot.copying) {
      slot.copied.synchronize();
      slot.copying = false;
    }
    return slot;
  }
  void copy_to_device_async(Slot& slot, void* device_dst, size_t size) {
    if (size > slot.host.size()) throw Error(LR_ERROR_INVALID_ARGUMENT, "double buffer copy larger than slot");
    lr_event_t* after = slot.in_flight ? slot.ready.get() : nullptr;
    check(lr_memcpy_async_with_dependencies(device_.get(), device_dst, slot.host.data(), size,
                                            LR_MEMCPY_HOST_TO_DEVICE, slot.copied.get(), &after, after ? 1 : 0),
          "lr_memcpy_async_with_dependencies");
    slot.copying = true;
  }
  // The slot's kernel on the default queue, after the slot's copy.
  void launch_after_copy(Slot& slot, const Kernel& kernel, const LaunchConfig& config,
                         std::span<const std::byte> args) {
    lr_event_t* copy = slot.copied.get();
    check(lr_launch_with_dependencies(kernel.get(), &config, args.data(), args.size(), &copy, 1),
          "lr_launch_with_dependencies");
  }
  // Records the slot's `ready` after everything submitted so far on the
  // default queue: the slot's next copy waits for it. Its last record is
  // waited for first (two rounds back), so a record still pending is never
  // recorded again.
  void mark_work_submitted(Slot& slot) {
    if (slot.in_flight) slot.ready.synchronize();
    slot.ready.record();
    slot.in_flight = true;
  }
  void finish() {
    for (auto& slot : slots_) {
      if (slot.copying) slot.copied.synchronize();
      if (slot.in_flight) slot.ready.synchronize();
      slot.copying = slot.in_flight = false;
    }
    device_.synchronize();
  }

 private:
  Device device_;
  Slot slots_[2];
  unsigned next_ = 0;
};

}  // namespace lrrt

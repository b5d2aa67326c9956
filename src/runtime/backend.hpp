// The one internal interface every backend implements (hsa, cuda, host).
//
// Shape follows IREE's HAL: a Backend enumerates Devices; a Device owns
// memory, queues, events and loaded Modules; a Queue executes launches, copies
// and event records in order and asynchronously to the caller. Everything
// reports failure by throwing lrrt::Error (error.hpp).
//
// The core (runtime.cpp / c_api*.cpp) adds what is the same for every backend:
// handle validation, memory statistics, the default-queue semantics of
// lr_launch / lr_memcpy_async and draining before frees.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lrrt/formats/kernel.hpp"
#include "lrrt/lrrt.h"

namespace lrrt::rt {

namespace graph {  // graph/exec.hpp
struct Lowering;
class GraphExec;
}  // namespace graph

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  uint64_t product() const { return uint64_t(x) * y * z; }
};

struct LaunchConfig {
  Dim3 grid;   // workgroups per dimension
  Dim3 block;  // work-items per workgroup
  uint32_t dynamic_shared_bytes = 0;
};

enum class CopyKind { HostToDevice, DeviceToHost, DeviceToDevice };
// "host-to-device", "device-to-host", "device-to-device", for messages.
const char* copy_kind_name(CopyKind kind);
// The C ABI's kind; throws LR_ERROR_INVALID_ARGUMENT for an unknown value.
// By reference: a C caller may pass any int, and reading one outside the
// enum's values (0-3) as lr_memcpy_kind_t is undefined behaviour in C++, so
// only the integer the ABI passed is read.
CopyKind to_copy_kind(const lr_memcpy_kind_t& kind);

struct DeviceProperties {
  std::string backend;
  std::string name;
  std::string arch;                   // gfx1100, sm_90, x86_64
  std::vector<std::string> isas;      // full ISA names where the backend has them
  uint32_t compute_units = 0;
  uint32_t wave_size = 1;
  uint32_t max_workgroup_size = 0;
  Dim3 max_workgroup_dims;
  uint64_t max_shared_memory_per_workgroup = 0;
  uint64_t memory_bytes = 0;
  // The device works on host memory itself (host backend): copies between
  // pageable memory and the device need no staging.
  bool host_memory_is_device_memory = false;
  // Backend-specific facts shown by `lrrt info` (driver version, clock, PCIe
  // link, xnack mode, queue max size ...), in display order.
  std::vector<std::pair<std::string, std::string>> extra;
};

// A kernel's description is the code-object readers' (lrrt_formats): the
// backends fill it from metadata, kernel tables or the driver.
using KernelArgInfo = formats::KernelArgInfo;
using KernelInfo = formats::KernelInfo;
using formats::ArgKind;

class Event {
 public:
  virtual ~Event() = default;
  // Blocks until the marker completes; throws the error of failed work it
  // depends on.
  virtual void synchronize() = 0;
  virtual bool query() = 0;  // true when complete
  virtual uint64_t elapsed_ns_since(const Event& start) const = 0;
  // Device time of the one operation that signalled this event.
  virtual uint64_t duration_ns() const {
    throw std::logic_error("duration not supported");
  }
};

// An atomic word that copies its value (Kernel stays copyable and movable).
struct KernelFlags {
  std::atomic<uint32_t> word{0};
  KernelFlags() = default;
  KernelFlags(const KernelFlags& o) : word(o.load()) {}
  KernelFlags& operator=(const KernelFlags& o) {
    store(o.load());
    return *this;
  }
  uint32_t load(std::memory_order order = std::memory_order_relaxed) const { return word.load(order); }
  void store(uint32_t v, std::memory_order order = std::memory_order_relaxed) { word.store(v, order); }
};

// Accesses of a kernel's pointer arguments proven outside its code object
// (lr_kernel_set_triton_ir: the Triton IR analysis), by argument offset.
// Copyable like KernelFlags; set and read from any thread.
class ArgAccessTable {
 public:
  using Entry = std::pair<uint32_t, formats::DerivedAccess>;  // explicit argument offset, access
  ArgAccessTable() = default;
  ArgAccessTable(const ArgAccessTable& o) : entries_(o.entries()) {}
  ArgAccessTable& operator=(const ArgAccessTable& o) {
    if (this != &o) set(o.entries());
    return *this;
  }
  void set(std::vector<Entry> entries) {
    std::lock_guard lock(mutex_);
    entries_ = std::move(entries);
  }
  std::vector<Entry> entries() const {
    std::lock_guard lock(mutex_);
    return entries_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<Entry> entries_;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual const KernelInfo& info() const = 0;
  // lr_kernel_flags_t bits (lr_kernel_set_flags); backends read them at launch.
  KernelFlags flags;
  // Accesses proven from the kernel's Triton IR (lr_kernel_set_triton_ir).
  ArgAccessTable triton_access;
  // The access of the explicit argument at `offset` the kernel proves
  // (docs/access.md): the Triton IR analysis, else the code object's
  // metadata (.actual_access, else .access), else read-write by default.
  formats::DerivedAccess arg_access(uint32_t offset) const {
    for (const auto& [at, access] : triton_access.entries())
      if (at == offset) return access;
    for (const auto& a : info().args)
      if (a.kind != formats::ArgKind::Hidden && a.offset == offset) return formats::derived_access(a);
    return {};
  }
};

class Module {
 public:
  virtual ~Module() = default;
  // Throws LR_ERROR_NOT_FOUND listing the kernels the module holds.
  virtual Kernel& kernel(std::string_view name) = 0;
  virtual std::vector<std::string> kernel_names() const = 0;
  // Which code object of the image was loaded and why ("entry 'sm_90 cubin'
  // of fatbin 0 in section .nv_fatbin: exact SASS for the device (sm_90)").
  const std::string& source() const { return source_; }
  void set_source(std::string source) { source_ = std::move(source); }

 protected:
  std::string source_;
};

using EventList = std::span<Event* const>;

class Queue {
 public:
  virtual ~Queue() = default;
  // args: explicit kernel arguments, packed. wait_for: events that must
  // complete first. signal: event completed (and timed) with this operation.
  virtual void launch(Kernel& kernel, const LaunchConfig& config,
                      std::span<const std::byte> args, EventList wait_for,
                      Event* signal) = 0;
  virtual void copy(void* dst, const void* src, size_t size, CopyKind kind,
                    EventList wait_for, Event* signal) = 0;
  virtual void record(Event& event) = 0;
  // Blocks until all submitted work completed; throws the first execution
  // error (a faulting kernel names itself in the message).
  virtual void synchronize() = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceProperties& properties() const = 0;

  // Last-level cache and peak bandwidth (lr_device_get_memory_info); the
  // default knows neither.
  struct MemoryInfo {
    uint64_t last_level_cache_bytes = 0;
    std::string last_level_cache_method;
    double peak_bandwidth = 0;  // bytes per second
    uint32_t peak_source = 0;   // lr_peak_bandwidth_source_t
    std::string peak_method;
  };
  virtual MemoryInfo memory_info() { return {}; }

  // Throws LR_ERROR_OUT_OF_MEMORY with the size asked for and what is free.
  virtual void* allocate(size_t size) = 0;
  virtual void free(void* ptr) = 0;
  // Pinned (page-locked, device-visible) host memory. The base class keeps
  // the blocks, so "is this host pointer pinned?" has one answer for every
  // backend and every caller (queues, staging, native baselines).
  void* allocate_host(size_t size);
  void free_host(void* ptr);
  // True when [p, p+size) lies inside one block from allocate_host.
  bool is_pinned(const void* p, size_t size) const;

  virtual std::unique_ptr<Queue> create_queue() = 0;
  virtual std::unique_ptr<Event> create_event() = 0;
  virtual std::unique_ptr<Module> load_module(std::span<const std::byte> image) = 0;

  // Blocking copy; the core has already drained the device. Backends may
  // override with a faster path (pageable staging, direct memcpy).
  virtual void copy_sync(void* dst, const void* src, size_t size, CopyKind kind);

  // Queue the core uses for copy_sync's default implementation, made on
  // first use (under utility_mutex_: threads' first copies race for it).
  Queue& utility_queue();

  // Peer access between devices of one backend (lr_device_can_access_peer,
  // lr_device_enable_peer_access, lr_memcpy_peer*). The default reaches no
  // peer: enable_peer_access and copy_from_peer throw LR_ERROR_NOT_SUPPORTED
  // naming both devices.
  virtual bool can_access_peer(const Device& peer) const;
  virtual void enable_peer_access(Device& peer);
  // Copies `size` bytes from `src` (memory of src_device) to `dst` (this
  // device's), on `queue`, one of this device's queues, after wait_for.
  virtual void copy_from_peer(Queue& queue, void* dst, Device& src_device, const void* src, size_t size,
                              EventList wait_for, Event* signal);

  // Lowers a validated graph for replay (lr_graph_instantiate). The default
  // is the generic replay through this device's queues and events
  // (graph/generic_exec.cpp); a backend overrides it with its native form
  // (an AQL packet block, a CUDA graph, a host task DAG).
  virtual std::unique_ptr<graph::GraphExec> instantiate_graph(const graph::Lowering& lowering);

  // Writes the 128-byte descriptor of a validated tensor map
  // (lr_tensor_map_encode; tensor_map.hpp). The default, for devices without
  // TMA (host, hsa), throws LR_ERROR_NOT_SUPPORTED.
  virtual void encode_tensor_map(const lr_tensor_map_desc_t& desc, void* out128);

 protected:
  // Derived destructors call this first: the queue may use the derived
  // device's members (thread pool, context) while it shuts down.
  void release_utility_queue() {
    std::lock_guard lock(utility_mutex_);
    utility_queue_.reset();
  }

  // The backend's pinned allocation, behind allocate_host / free_host.
  virtual void* do_allocate_host(size_t size) = 0;
  virtual void do_free_host(void* ptr) = 0;

 private:
  // Not std::call_once: an exception thrown through it (pthread_once)
  // aborts a binary linked with -static-libgcc (runtime.hpp, DeviceState).
  std::mutex utility_mutex_;
  std::unique_ptr<Queue> utility_queue_;
  mutable std::mutex pinned_mutex_;
  std::map<uintptr_t, size_t> pinned_;  // base -> size
};

struct BackendStatus {
  bool usable = false;
  std::string message;  // why not usable, or what was found (library version)
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  // Loads the backend's library and enumerates devices. Never throws: an
  // unusable backend reports why.
  virtual BackendStatus initialize() = 0;
  virtual uint32_t device_count() const = 0;
  virtual std::unique_ptr<Device> open_device(uint32_t ordinal) = 0;
};

// Registration: each backend folder defines one factory; registry.cpp lists
// the ones compiled in, GPU backends first.
using BackendFactory = std::function<std::unique_ptr<Backend>()>;
struct BackendRegistration {
  std::string_view name;
  BackendFactory create;
};
std::vector<BackendRegistration> registered_backends();

}  // namespace lrrt::rt

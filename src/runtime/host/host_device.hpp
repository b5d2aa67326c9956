// The host backend's device: the CPU, running kernels built for the host as
// shared objects (include/lrrt/host_kernel_abi.h), one workgroup per call, on
// a thread pool sized to the cores. Host memory is device memory, each
// allocation guarded at its end (host_memory.hpp).
#pragma once

#include <chrono>
#include <memory>
#include <mutex>

#include "backend.hpp"
#include "host_memory.hpp"
#include "thread_pool.hpp"

namespace lrrt::rt::host {

class HostDevice final : public Device {
  // Dispatches often come back to back: the pool's workers spin this long
  // before sleeping.
  static constexpr std::chrono::microseconds kPoolSpin{50};

 public:
  // Device `ordinal` of `count` (LRRT_HOST_DEVICES).
  HostDevice(uint32_t ordinal = 0, uint32_t count = 1);
  ~HostDevice() override;

  const DeviceProperties& properties() const override { return properties_; }
  void* allocate(size_t size) override;
  void free(void* ptr) override;
  // Measured once, on first use (a parallel memcpy).
  MemoryInfo memory_info() override;
  std::unique_ptr<Queue> create_queue() override;
  std::unique_ptr<Event> create_event() override;
  std::unique_ptr<Module> load_module(std::span<const std::byte> image) override;
  void copy_sync(void* dst, const void* src, size_t size, CopyKind kind) override;
  // A task DAG on the pool (host_graph.hpp).
  std::unique_ptr<graph::GraphExec> instantiate_graph(const graph::Lowering& lowering) override;
  // Every host device's memory is the process's: any two reach each other.
  bool can_access_peer(const Device& peer) const override;
  void enable_peer_access(Device& peer) override;
  void copy_from_peer(Queue& queue, void* dst, Device& src_device, const void* src, size_t size, EventList wait_for,
                      Event* signal) override;

  ThreadPool& pool() { return pool_; }
  // Every allocation, guarded at its end: queues check it after each launch.
  GuardedMemory& memory() { return memory_; }

 protected:
  void* do_allocate_host(size_t size) override;
  void do_free_host(void* ptr) override;

 private:
  GuardedMemory memory_;  // first: it outlives the pool and the queues
  DeviceProperties properties_;
  ThreadPool pool_;
  std::mutex memory_info_mutex_;
  bool memory_info_measured_ = false;
  MemoryInfo memory_info_;
};

}  // namespace lrrt::rt::host

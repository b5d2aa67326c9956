// An HSA GPU agent as an lrrt device: properties, memory pools (device,
// pinned host, kernarg), and a pool of completion signals. Context is what
// the backend and its devices share.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend.hpp"
#include "hsa_status.hpp"
#include "memory_fault.hpp"
#include "lrrt/formats/amdgpu.hpp"

namespace lrrt::rt::hsa {

namespace amdgpu = formats::amdgpu;  // target IDs, code-object metadata

// The loaded library and the agents; shared by the backend and its devices so
// hsa_shut_down runs after the last device is gone.
struct Context {
  HsaSymbols api;
  bool initialized = false;
  uint64_t timestamp_frequency = 1'000'000'000;  // ticks per second
  hsa_agent_t cpu_agent{0};
  std::vector<hsa_agent_t> gpu_agents;
  std::string version;
  std::shared_ptr<FaultSink> faults;  // the GPU memory fault handler's (memory_fault.hpp)
  ~Context();
};

class HsaDevice;

// A pooled signal owned through shared_ptr: events re-armed while an older
// operation still references the old signal keep both valid.
struct Signal {
  HsaDevice* device;
  hsa_signal_t handle;
  ~Signal();
};
using SignalRef = std::shared_ptr<Signal>;

class HsaDevice final : public Device {
 public:
  HsaDevice(std::shared_ptr<Context> ctx, hsa_agent_t agent, uint32_t ordinal);
  ~HsaDevice() override;
  const DeviceProperties& properties() const override { return props_; }
  MemoryInfo memory_info() override { return memory_info_; }
  void* allocate(size_t size) override;
  void free(void* ptr) override;
  std::unique_ptr<Queue> create_queue() override;
  std::unique_ptr<Event> create_event() override;
  std::unique_ptr<Module> load_module(std::span<const std::byte> image) override;
  // Retained replay as AQL packet blocks (hsa_graph.cpp).
  std::unique_ptr<graph::GraphExec> instantiate_graph(const graph::Lowering& lowering) override;

  const Context& context() const { return *ctx_; }
  const HsaSymbols& api() const { return ctx_->api; }
  hsa_agent_t agent() const { return agent_; }
  const amdgpu::TargetId& target() const { return target_; }
  uint32_t queue_size() const { return queue_size_; }

  // A queue of this device fails when a GPU memory fault or a hardware
  // exception of its agent is reported (memory_fault.hpp).
  void watch_queue(const std::shared_ptr<QueueErrorState>& error) const;
  std::optional<MemoryFault> memory_fault() const;
  // The cause bits of a hardware exception of this agent (the device is lost).
  std::optional<uint32_t> hw_exception() const;
  // LR_ERROR_DEVICE_LOST's message after a hardware exception.
  std::string device_lost_text(uint32_t cause) const;

  SignalRef acquire_signal();  // value 1
  void release_signal(hsa_signal_t s);
  void* allocate_kernarg(size_t size);
  void free_kernarg(void* p);
  // Pinned staging memory for copies from/to pageable host memory.
  void* allocate_staging(size_t size);
  void free_staging(void* p);

 protected:
  void* do_allocate_host(size_t size) override;
  void do_free_host(void* ptr) override;

 private:
  MemoryInfo memory_info_;
  std::shared_ptr<Context> ctx_;
  hsa_agent_t agent_;
  DeviceProperties props_;
  amdgpu::TargetId target_;
  uint32_t queue_size_ = 4096;
  hsa_amd_memory_pool_t device_pool_{0};
  hsa_amd_memory_pool_t host_pool_{0};
  hsa_amd_memory_pool_t kernarg_pool_{0};
  mutable std::mutex mutex_;
  std::vector<hsa_signal_t> free_signals_;
};

}  // namespace lrrt::rt::hsa

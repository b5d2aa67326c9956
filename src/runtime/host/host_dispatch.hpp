// One prepared dispatch of a host kernel: its arguments in aligned storage,
// its dispatch state, and the loop that runs a range of its workgroups with
// kernel faults (SIGSEGV, SIGBUS, SIGFPE, SIGILL, a non-zero return code)
// caught. A queue launch (host_queue.cpp) spreads the workgroups over the
// pool with parallel_for; a replayed graph (host_graph.cpp) deals them out
// among its participants. Both run them through run().
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>

#include "backend.hpp"
#include "host_memory.hpp"
#include "host_status.hpp"
#include "lrrt/host_kernel_abi.h"

namespace lrrt::rt::host {

class HostKernel;

// Installs the fault handlers once per process (idempotent).
void install_fault_handlers();

// Starts a thread that will run kernel code, with its kernel stack (an 8 MiB
// stack above a 64 MiB PROT_NONE guard, host_dispatch.cpp) mapped first;
// returns once the thread has its alternate signal stack and malloc arena.
// lrrt::Error(LR_ERROR_OUT_OF_MEMORY) when the address space is not there,
// std::system_error when the thread cannot start. The pool's workers and the
// queues' threads start this way; any other thread gets its kernel stack the
// first time it runs a kernel.
std::thread start_kernel_thread(std::function<void()> body);

class HostDispatch {
 public:
  // Checks the argument size and the limits; copies the arguments.
  HostDispatch(HostKernel& kernel, const LaunchConfig& config, std::span<const std::byte> args,
               const DeviceProperties& limits);
  HostDispatch(const HostDispatch&) = delete;
  HostDispatch& operator=(const HostDispatch&) = delete;

  uint64_t workgroups() const { return workgroups_; }
  const std::string& kernel_name() const { return name_; }

  // Runs workgroups [begin, end) on pool thread `participant`. On a fault
  // records the first one in `fault` (under `fault_mutex`, shared by every
  // participant of this dispatch) and returns false.
  bool run(uint64_t begin, uint64_t end, unsigned participant, KernelFault& fault, std::mutex& fault_mutex) const;
  // Throws LR_ERROR_KERNEL_FAULT naming the kernel and the workgroup, and
  // where the faulting address lies when `memory` holds it.
  [[noreturn]] void throw_fault(const KernelFault& fault, const GuardedMemory& memory) const;

  // Overwrites argument bytes (padding included) for later runs; bytes past
  // the storage are ignored. Not while a run is in progress.
  void patch_args(size_t offset, std::span<const std::byte> bytes);

 private:
  struct AlignedDelete {
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte[], AlignedDelete> kernargs_;
  size_t kernarg_bytes_ = 0;
  lrrt_host_dispatch_state_t dispatch_{};
  lrrt_host_kernel_fn_t entry_ = nullptr;
  uint64_t workgroups_ = 0;
  std::string name_;
};

}  // namespace lrrt::rt::host

#include "host_queue.hpp"

#include <csetjmp>
#include <csignal>
#include <cstring>
#include <mutex>

#include "error.hpp"
#include "host_device.hpp"
#include "host_executable.hpp"
#include "host_status.hpp"
#include "wait.hpp"

namespace lrrt::rt::host {
namespace {

// ---- Kernel faults -------------------------------------------------------
// A host kernel that dereferences a bad pointer must become a status code,
// not a crashed process: while a pool thread runs kernel code it arms a jump
// buffer, and the SIGSEGV/SIGBUS/SIGFPE/SIGILL handler jumps back to it.
// Faults outside kernel code go to the previous handler as before.
thread_local sigjmp_buf* t_fault_jump = nullptr;
thread_local int t_fault_signal = 0;
thread_local void* t_fault_address = nullptr;

constexpr int kFaultSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
struct sigaction g_previous[4];
std::once_flag g_handlers_once;

void fault_handler(int sig, siginfo_t* info, void* context) {
  if (t_fault_jump) {
    t_fault_signal = sig;
    t_fault_address = info ? info->si_addr : nullptr;
    sigjmp_buf* jump = t_fault_jump;
    t_fault_jump = nullptr;
    siglongjmp(*jump, 1);
  }
  for (size_t i = 0; i < 4; ++i) {
    if (kFaultSignals[i] != sig) continue;
    const struct sigaction& prev = g_previous[i];
    if (prev.sa_flags & SA_SIGINFO) {
      if (prev.sa_sigaction) {
        prev.sa_sigaction(sig, info, context);
        return;
      }
    } else if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
      prev.sa_handler(sig);
      return;
    }
    // Default action: reinstall it and return, so the faulting instruction
    // runs again and the process dies as it would have without us.
    signal(sig, SIG_DFL);
    return;
  }
}

void install_fault_handlers() {
  std::call_once(g_handlers_once, [] {
    struct sigaction action {};
    action.sa_sigaction = fault_handler;
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < 4; ++i) sigaction(kFaultSignals[i], &action, &g_previous[i]);
  });
}

// Runs workgroups [begin, end) of a dispatch; returns false on a fault.
bool run_workgroups(lrrt_host_kernel_fn_t entry, const lrrt_host_dispatch_state_t& dispatch,
                    uint64_t begin, uint64_t end, uint32_t participant, KernelFault& fault,
                    std::mutex& fault_mutex) {
  thread_local std::unique_ptr<std::byte[]> scratch;
  thread_local size_t scratch_size = 0;
  lrrt_host_workgroup_state_t wg{};
  wg.worker_id = participant;
  if (dispatch.dynamic_shared_bytes) {
    size_t need = dispatch.dynamic_shared_bytes + 64;
    if (scratch_size < need) {
      scratch.reset(new std::byte[need]);
      scratch_size = need;
    }
    auto addr = reinterpret_cast<uintptr_t>(scratch.get());
    wg.dynamic_shared = reinterpret_cast<void*>((addr + 63) & ~uintptr_t(63));
  }
  const uint64_t nx = dispatch.workgroup_count[0];
  const uint64_t nxy = nx * dispatch.workgroup_count[1];

  volatile uint64_t current = begin;
  sigjmp_buf jump;
  if (sigsetjmp(jump, 0)) {
    // Came back from the fault handler. The signal is blocked no longer
    // (SA_NODEFER), so nothing to restore.
    std::lock_guard lock(fault_mutex);
    if (!fault.failed()) {
      fault.signal = t_fault_signal;
      fault.address = t_fault_address;
      fault.workgroup = current;
    }
    return false;
  }
  t_fault_jump = &jump;
  for (uint64_t i = begin; i < end; ++i) {
    current = i;
    wg.workgroup_id[0] = static_cast<uint32_t>(i % nx);
    wg.workgroup_id[1] = static_cast<uint32_t>((i / nx) % dispatch.workgroup_count[1]);
    wg.workgroup_id[2] = static_cast<uint32_t>(i / nxy);
    int rc = entry(&dispatch, &wg);
    if (rc != 0) {
      t_fault_jump = nullptr;
      std::lock_guard lock(fault_mutex);
      if (!fault.failed()) {
        fault.code = rc;
        fault.workgroup = i;
      }
      return false;
    }
  }
  t_fault_jump = nullptr;
  return true;
}

}  // namespace

HostQueue::HostQueue(HostDevice& device) : device_(device) {
  install_fault_handlers();
  worker_ = std::thread([this] { worker_main(); });
}

HostQueue::~HostQueue() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  worker_.join();
}

void HostQueue::submit(std::function<void()> run, EventList wait_for, Event* signal) {
  Command command;
  command.run = std::move(run);
  command.waits.reserve(wait_for.size());
  for (Event* e : wait_for) {
    auto* he = static_cast<HostEvent*>(e);
    command.waits.emplace_back(he, he->armed_generation());
  }
  if (signal) {
    command.signal = static_cast<HostEvent*>(signal);
    command.signal_generation = command.signal->arm();
  }
  bool wake;
  {
    std::lock_guard lock(mutex_);
    pending_.push_back(std::move(command));
    wake = sleeping_;
  }
  if (wake) work_cv_.notify_one();
}

void HostQueue::launch(Kernel& kernel, const LaunchConfig& config, std::span<const std::byte> args,
                       EventList wait_for, Event* signal) {
  auto& hk = static_cast<HostKernel&>(kernel);
  const KernelInfo& info = hk.info();
  const uint32_t explicit_size = info.explicit_kernarg_size();
  if (args.size() < explicit_size || args.size() > std::max(info.kernarg_size, explicit_size))
    LRRT_THROW(LR_ERROR_INVALID_ARGUMENT,
               "kernel '{}' takes {} bytes of explicit arguments ({} with padding), but {} were passed",
               info.name, explicit_size, info.kernarg_size, args.size());
  uint64_t threads = config.block.product();
  if (threads > device_.properties().max_workgroup_size)
    LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "workgroup of {} work-items exceeds the host limit of {}", threads,
               device_.properties().max_workgroup_size);
  if (config.dynamic_shared_bytes > device_.properties().max_shared_memory_per_workgroup)
    LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "{} bytes of dynamic shared memory exceed the host limit of {}",
               config.dynamic_shared_bytes, device_.properties().max_shared_memory_per_workgroup);

  // The kernel reads its argument struct at natural alignment: copy the bytes
  // into an aligned buffer of the struct's full size (padding zeroed).
  size_t storage_size = std::max<size_t>(info.kernarg_size, args.size());
  auto kernargs = std::shared_ptr<std::byte[]>(new (std::align_val_t(64)) std::byte[storage_size + 1],
                                               [](std::byte* p) { operator delete[](p, std::align_val_t(64)); });
  std::memset(kernargs.get(), 0, storage_size + 1);
  if (!args.empty()) std::memcpy(kernargs.get(), args.data(), args.size());

  lrrt_host_dispatch_state_t dispatch{};
  dispatch.workgroup_size[0] = config.block.x;
  dispatch.workgroup_size[1] = config.block.y;
  dispatch.workgroup_size[2] = config.block.z;
  dispatch.workgroup_count[0] = config.grid.x;
  dispatch.workgroup_count[1] = config.grid.y;
  dispatch.workgroup_count[2] = config.grid.z;
  dispatch.kernarg_size = storage_size;
  dispatch.dynamic_shared_bytes = config.dynamic_shared_bytes;
  const uint64_t groups = config.grid.product();
  lrrt_host_kernel_fn_t entry = hk.entry();
  std::string name = info.name;
  HostDevice* device = &device_;

  submit(
      [=]() mutable {
        dispatch.kernargs = kernargs.get();
        KernelFault fault;
        std::mutex fault_mutex;
        device->pool().parallel_for(groups, [&](uint64_t begin, uint64_t end, unsigned thread) {
          return run_workgroups(entry, dispatch, begin, end, thread, fault, fault_mutex);
        });
        if (fault.failed()) throw_kernel_fault(name, fault, dispatch);
      },
      wait_for, signal);
}

void HostQueue::copy(void* dst, const void* src, size_t size, CopyKind, EventList wait_for, Event* signal) {
  submit([=] { std::memcpy(dst, src, size); }, wait_for, signal);
}

void HostQueue::record(Event& event) { submit({}, {}, &event); }

void HostQueue::execute(Command& command) {
  std::exception_ptr error;
  {
    std::lock_guard lock(mutex_);
    error = error_;  // work after a failure in this queue does not run
  }
  for (auto& [event, generation] : command.waits) {
    if (error) break;
    if (auto dep_error = event->wait(generation)) error = dep_error;
  }
  uint64_t start = now_ns();
  if (!error && command.run) {
    try {
      command.run();
    } catch (...) {
      error = std::current_exception();
    }
  }
  uint64_t end = now_ns();
  if (error) {
    std::lock_guard lock(mutex_);
    if (!error_) error_ = error;
  }
  if (command.signal) command.signal->complete(command.signal_generation, start, end, error);
}

void HostQueue::worker_main() {
  for (;;) {
    Command command;
    {
      std::unique_lock lock(mutex_);
      if (pending_.empty()) {
        // Spin briefly without the lock before sleeping: launches often come
        // in bursts, and a wake-up costs more than a short spin.
        lock.unlock();
        auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
        while (std::chrono::steady_clock::now() < until) {
          cpu_relax();
          std::lock_guard peek(mutex_);
          if (!pending_.empty() || stopping_) break;
        }
        lock.lock();
      }
      sleeping_ = true;
      work_cv_.wait(lock, [&] { return !pending_.empty() || stopping_; });
      sleeping_ = false;
      if (pending_.empty() && stopping_) return;
      command = std::move(pending_.front());
      pending_.pop_front();
      busy_ = true;
    }
    execute(command);
    {
      std::lock_guard lock(mutex_);
      busy_ = false;
      if (pending_.empty()) idle_cv_.notify_all();
    }
  }
}

void HostQueue::synchronize() {
  ConditionWait idle(mutex_, idle_cv_, [&] { return pending_.empty() && !busy_; }, "the host queue", kMaxWaitSpin);
  rt::wait(idle);
  std::lock_guard lock(mutex_);
  if (error_) {
    // Reported once; the queue is usable again afterwards.
    std::exception_ptr error = std::exchange(error_, nullptr);
    std::rethrow_exception(error);
  }
}

}  // namespace lrrt::rt::host

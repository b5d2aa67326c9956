#include "host_dispatch.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <csetjmp>
#include <csignal>
#include <cstring>
#include <new>

#include "error.hpp"
#include "host_executable.hpp"

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

// ---- An alternate signal stack per kernel thread --------------------------
// The fault handler runs on the faulting thread. A kernel that overflows its
// stack faults with no stack left to run the handler on, and the process
// would die: every thread that runs kernel code gets an alternate signal
// stack the first time it does (the pool's workers, the queue's worker, a
// graph replay's participants), and the handlers are installed with
// SA_ONSTACK. The stack is the thread's until it ends (a thread_local owns
// it). A thread that already has one (a sanitizer's, the application's)
// keeps it.
class AltSignalStack {
 public:
  AltSignalStack() = default;
  AltSignalStack(const AltSignalStack&) = delete;
  AltSignalStack& operator=(const AltSignalStack&) = delete;
  ~AltSignalStack() {
    if (!memory_) return;
    stack_t current{};
    if (sigaltstack(nullptr, &current) == 0 && current.ss_sp == usable() && !(current.ss_flags & SS_ONSTACK)) {
      stack_t off{};
      off.ss_flags = SS_DISABLE;
      sigaltstack(&off, nullptr);
    }
    munmap(memory_, mapped_);
  }

  void ensure() {
    if (checked_) return;
    checked_ = true;
    stack_t current{};
    if (sigaltstack(nullptr, &current) != 0 || !(current.ss_flags & SS_DISABLE)) return;  // one is there
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    size_t size = 64 * 1024;
#ifdef _SC_SIGSTKSZ
    if (long need = sysconf(_SC_SIGSTKSZ); need > 0) size = std::max(size, 4 * static_cast<size_t>(need));
#endif
    size = (size + page - 1) / page * page;
    // A guard page below the stack: a handler that overflowed it faults
    // instead of writing over other memory.
    void* p = mmap(nullptr, size + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (p == MAP_FAILED) return;  // no alternate stack: an overflow ends the process, as before
    if (mprotect(p, page, PROT_NONE) != 0) {
      munmap(p, size + page);
      return;
    }
    memory_ = p;
    mapped_ = size + page;
    page_ = page;
    stack_t ss{};
    ss.ss_sp = usable();
    ss.ss_size = size;
    ss.ss_flags = 0;
    if (sigaltstack(&ss, nullptr) != 0) {
      munmap(memory_, mapped_);
      memory_ = nullptr;
    }
  }

 private:
  void* usable() const { return static_cast<std::byte*>(memory_) + page_; }
  void* memory_ = nullptr;
  size_t mapped_ = 0;
  size_t page_ = 0;
  bool checked_ = false;
};

thread_local AltSignalStack t_alt_stack;

// Runs workgroups [begin, end) of a dispatch; returns false on a fault.
bool run_workgroups(lrrt_host_kernel_fn_t entry, const lrrt_host_dispatch_state_t& dispatch,
                    uint64_t begin, uint64_t end, uint32_t participant, KernelFault& fault,
                    std::mutex& fault_mutex) {
  thread_local std::unique_ptr<std::byte[]> scratch;
  thread_local size_t scratch_size = 0;
  t_alt_stack.ensure();
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
  // savemask 1: the jump back restores this thread's signal mask. The
  // handler is SA_NODEFER, but a handler may still run with signals blocked
  // (ThreadSanitizer delivers them so): without the restore the worker kept
  // SIGSEGV blocked and its next fault killed the process.
  if (sigsetjmp(jump, 1)) {
    // Came back from the fault handler, with the mask of before the kernel.
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

void install_fault_handlers() {
  std::call_once(g_handlers_once, [] {
    struct sigaction action {};
    action.sa_sigaction = fault_handler;
    // SA_ONSTACK: on the thread's alternate stack, so a kernel's stack
    // overflow is a fault like any other.
    action.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < 4; ++i) sigaction(kFaultSignals[i], &action, &g_previous[i]);
  });
}


void HostDispatch::AlignedDelete::operator()(std::byte* p) const { operator delete[](p, std::align_val_t(64)); }

HostDispatch::HostDispatch(HostKernel& kernel, const LaunchConfig& config, std::span<const std::byte> args,
                           const DeviceProperties& limits)
    : entry_(kernel.entry()), workgroups_(config.grid.product()), name_(kernel.info().name) {
  const KernelInfo& info = kernel.info();
  const uint32_t explicit_size = info.explicit_kernarg_size();
  if (args.size() < explicit_size || args.size() > std::max(info.kernarg_size, explicit_size))
    LRRT_THROW(LR_ERROR_INVALID_ARGUMENT,
               "kernel '{}' takes {} bytes of explicit arguments ({} with padding), but {} were passed",
               info.name, explicit_size, info.kernarg_size, args.size());
  uint64_t threads = config.block.product();
  if (threads > limits.max_workgroup_size)
    LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "workgroup of {} work-items exceeds the host limit of {}", threads,
               limits.max_workgroup_size);
  if (config.dynamic_shared_bytes > limits.max_shared_memory_per_workgroup)
    LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "{} bytes of dynamic shared memory exceed the host limit of {}",
               config.dynamic_shared_bytes, limits.max_shared_memory_per_workgroup);

  // The kernel reads its argument struct at natural alignment: copy the bytes
  // into an aligned buffer of the struct's full size (padding zeroed).
  kernarg_bytes_ = std::max<size_t>(info.kernarg_size, args.size());
  kernargs_.reset(new (std::align_val_t(64)) std::byte[kernarg_bytes_ + 1]);
  std::memset(kernargs_.get(), 0, kernarg_bytes_ + 1);
  if (!args.empty()) std::memcpy(kernargs_.get(), args.data(), args.size());

  dispatch_.workgroup_size[0] = config.block.x;
  dispatch_.workgroup_size[1] = config.block.y;
  dispatch_.workgroup_size[2] = config.block.z;
  dispatch_.workgroup_count[0] = config.grid.x;
  dispatch_.workgroup_count[1] = config.grid.y;
  dispatch_.workgroup_count[2] = config.grid.z;
  dispatch_.kernarg_size = kernarg_bytes_;
  dispatch_.dynamic_shared_bytes = config.dynamic_shared_bytes;
  dispatch_.kernargs = kernargs_.get();
}

bool HostDispatch::run(uint64_t begin, uint64_t end, unsigned participant, KernelFault& fault,
                       std::mutex& fault_mutex) const {
  return run_workgroups(entry_, dispatch_, begin, end, participant, fault, fault_mutex);
}

void HostDispatch::throw_fault(const KernelFault& fault, const GuardedMemory& memory) const {
  throw_kernel_fault(name_, fault, dispatch_, fault.signal ? memory.describe(fault.address) : std::string());
}

void HostDispatch::patch_args(size_t offset, std::span<const std::byte> bytes) {
  if (offset >= kernarg_bytes_) return;
  std::memcpy(kernargs_.get() + offset, bytes.data(), std::min(bytes.size(), kernarg_bytes_ - offset));
}

}  // namespace lrrt::rt::host

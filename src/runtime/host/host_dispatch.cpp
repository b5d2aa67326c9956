#include "host_dispatch.hpp"

#include <pthread.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <csetjmp>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>

#include "error.hpp"
#include "host_executable.hpp"

// ---- The stack switch (see "Kernel stacks" below) --------------------------
#if defined(__x86_64__) || defined(__aarch64__)
// Calls fn(arg) with the stack pointer at stack_top (16-byte aligned) and
// returns on the caller's stack. The frame pointer keeps the caller's stack
// pointer, and the CFI says so, so unwinders (and debuggers) walk through it.
extern "C" __attribute__((visibility("hidden"))) void lrrt_host_call_on_stack(void* stack_top, void (*fn)(void*),
                                                                              void* arg);
#if defined(__x86_64__)
__asm__(
    ".text\n"
    ".p2align 4\n"
    ".globl lrrt_host_call_on_stack\n"
    ".hidden lrrt_host_call_on_stack\n"
    ".type lrrt_host_call_on_stack,@function\n"
    "lrrt_host_call_on_stack:\n"
    ".cfi_startproc\n"
#if defined(__CET__)
    "endbr64\n"
#endif
    "pushq %rbp\n"
    ".cfi_def_cfa_offset 16\n"
    ".cfi_offset %rbp, -16\n"
    "movq %rsp, %rbp\n"
    ".cfi_def_cfa_register %rbp\n"
    "movq %rdi, %rsp\n"
    "movq %rdx, %rdi\n"
    "callq *%rsi\n"
    "movq %rbp, %rsp\n"
    "popq %rbp\n"
    ".cfi_def_cfa %rsp, 8\n"
    "ret\n"
    ".cfi_endproc\n"
    ".size lrrt_host_call_on_stack, .-lrrt_host_call_on_stack\n");
#else
__asm__(
    ".text\n"
    ".p2align 2\n"
    ".globl lrrt_host_call_on_stack\n"
    ".hidden lrrt_host_call_on_stack\n"
    ".type lrrt_host_call_on_stack,%function\n"
    "lrrt_host_call_on_stack:\n"
    ".cfi_startproc\n"
    "hint #34\n"  // bti c (a no-op without BTI)
    "stp x29, x30, [sp, #-16]!\n"
    ".cfi_def_cfa_offset 16\n"
    ".cfi_offset x29, -16\n"
    ".cfi_offset x30, -8\n"
    "mov x29, sp\n"
    ".cfi_def_cfa_register x29\n"
    "mov sp, x0\n"
    "mov x0, x2\n"
    "blr x1\n"
    "mov sp, x29\n"
    ".cfi_def_cfa_register sp\n"
    "ldp x29, x30, [sp], #16\n"
    ".cfi_def_cfa_offset 0\n"
    ".cfi_restore x29\n"
    ".cfi_restore x30\n"
    "ret\n"
    ".cfi_endproc\n"
    ".size lrrt_host_call_on_stack, .-lrrt_host_call_on_stack\n");
#endif
#endif


#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LRRT_HOST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(LRRT_HOST_ASAN)
#define LRRT_HOST_ASAN 1
#endif

#if defined(LRRT_HOST_ASAN)
// AddressSanitizer's interface (sanitizer/common_interface_defs.h,
// sanitizer/asan_interface.h), declared here so the build needs no header.
extern "C" {
void __sanitizer_start_switch_fiber(void** fake_stack_save, const void* bottom, size_t size);
void __sanitizer_finish_switch_fiber(void* fake_stack_save, const void** bottom_old, size_t* size_old);
void __asan_unpoison_memory_region(const volatile void* addr, size_t size);
// sanitizer/lsan_interface.h: LeakSanitizer scans thread stacks, not a stack
// lrrt mapped itself; the kernel stacks are registered as root regions so
// that it scans them too. (A hung kernel's command is still reported at exit:
// tests/lsan.supp says why that one is live.)
void __lsan_register_root_region(const void* p, size_t size);
void __lsan_unregister_root_region(const void* p, size_t size);
}
#endif

namespace lrrt::rt::host {
namespace {

// ---- Kernel stacks --------------------------------------------------------
// Kernel code runs on a stack lrrt maps for each thread that runs it, not on
// the thread's own: a thread's stack has a guard of one page, and a kernel
// whose frames are larger than a page (recursion with 1 MiB of locals) jumps
// it and writes into whatever mapping lies below, another thread's stack
// included, before it faults anywhere (or never). A kernel stack is
// kKernelStackBytes of memory above kKernelGuardBytes of PROT_NONE address
// space (no memory is committed for either until touched), so a frame of up
// to the guard's size faults in the guard, and the fault handler reports a
// stack overflow. run_workgroups switches to it with a small trampoline
// (lrrt_host_call_on_stack) and back when the workgroups are done; AddressSanitizer is told
// of the switch (as for fibers). On an architecture without the trampoline kernel
// code runs on the thread's stack, as before.
constexpr size_t kKernelStackBytes = size_t(8) << 20;
constexpr size_t kKernelGuardBytes = size_t(64) << 20;
constexpr size_t kMinKernelGuardBytes = size_t(1) << 20;
#if defined(__x86_64__) || defined(__aarch64__)
constexpr bool kKernelStacks = true;
#else
constexpr bool kKernelStacks = false;
#endif

// One thread's kernel stack: [reserve, stack) is the guard, [stack, top) the
// stack. Unmapped when the thread ends (a thread_local owns it).
class KernelStack {
 public:
  // Throws lrrt::Error(LR_ERROR_OUT_OF_MEMORY) when the address space is not there.
  // Under an address-space limit (ulimit -v) a thread started after a pool
  // that took nearly all of it may find no 72 MiB hole: the guard shrinks
  // (16, 4, 1 MiB) before the thread gives up, so it still runs kernels,
  // catching frames up to its guard's size.
  KernelStack() {
    int error = 0;
    for (size_t guard = kKernelGuardBytes; guard >= kMinKernelGuardBytes; guard /= 4) {
      const size_t bytes = guard + kKernelStackBytes;
      void* p = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p == MAP_FAILED) {
        error = errno;
        continue;
      }
      auto* base = static_cast<std::byte*>(p);
      if (mprotect(base + guard, kKernelStackBytes, PROT_READ | PROT_WRITE) != 0) {
        error = errno;
        munmap(p, bytes);
        continue;
      }
      reserve_ = reinterpret_cast<uintptr_t>(base);
      stack_ = reserve_ + guard;
      top_ = stack_ + kKernelStackBytes;
#if defined(LRRT_HOST_ASAN)
      __lsan_register_root_region(reinterpret_cast<const void*>(stack_), kKernelStackBytes);
#endif
      return;
    }
    LRRT_THROW(LR_ERROR_OUT_OF_MEMORY, "cannot map a {} MiB stack with a {} MiB guard for kernel code: {}",
               kKernelStackBytes >> 20, kKernelGuardBytes >> 20, std::strerror(error));
  }
  ~KernelStack() {
#if defined(LRRT_HOST_ASAN)
    // Frames a fault abandoned leave poisoned shadow behind (the guard's
    // too): clean, so a later mapping at these addresses starts clean.
    __asan_unpoison_memory_region(reinterpret_cast<void*>(reserve_), top_ - reserve_);
    __lsan_unregister_root_region(reinterpret_cast<const void*>(stack_), kKernelStackBytes);
#endif
    munmap(reinterpret_cast<void*>(reserve_), top_ - reserve_);
  }
  KernelStack(const KernelStack&) = delete;
  KernelStack& operator=(const KernelStack&) = delete;

  uintptr_t guard_begin() const { return reserve_; }
  uintptr_t bottom() const { return stack_; }
  uintptr_t top() const { return top_; }

  // After a fault: the frames abandoned on the stack are gone.
  void forget_frames() const {
#if defined(LRRT_HOST_ASAN)
    __asan_unpoison_memory_region(reinterpret_cast<void*>(reserve_), top_ - reserve_);
#endif
  }

 private:
  uintptr_t reserve_ = 0, stack_ = 0, top_ = 0;
};

thread_local std::unique_ptr<KernelStack> t_kernel_stack;
// The kernel stack the thread runs kernel code on now (null outside it).
thread_local const KernelStack* t_running_stack = nullptr;

// ---- Kernel faults -------------------------------------------------------
// A host kernel that dereferences a bad pointer must become a status code,
// not a crashed process: while a pool thread runs kernel code it arms a jump
// buffer, and the SIGSEGV/SIGBUS/SIGFPE/SIGILL handler jumps back to it.
// Faults outside kernel code go to the previous handler as before.
thread_local sigjmp_buf* t_fault_jump = nullptr;
thread_local int t_fault_signal = 0;
thread_local void* t_fault_address = nullptr;
thread_local bool t_fault_stack_overflow = false;

constexpr int kFaultSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
struct sigaction g_previous[4];
std::once_flag g_handlers_once;

// The interrupted code's stack pointer (0 where unknown).
uintptr_t interrupted_sp(void* context) {
  if (!context) return 0;
  [[maybe_unused]] auto* uc = static_cast<ucontext_t*>(context);
#if defined(__x86_64__)
  return static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RSP]);
#elif defined(__aarch64__)
  return static_cast<uintptr_t>(uc->uc_mcontext.sp);
#else
  return 0;
#endif
}

// A fault of kernel code on its kernel stack is a stack overflow when it
// hit the guard below the stack, or when the stack pointer itself left the
// stack downwards (a frame larger than the guard that faulted beyond it).
bool is_stack_overflow(const KernelStack* stack, const siginfo_t* info, void* context) {
  if (!stack) return false;
  const auto address = reinterpret_cast<uintptr_t>(info ? info->si_addr : nullptr);
  if (address >= stack->guard_begin() && address < stack->bottom()) return true;
  const uintptr_t sp = interrupted_sp(context);
  return sp != 0 && sp < stack->bottom();
}

void fault_handler(int sig, siginfo_t* info, void* context) {
  if (t_fault_jump) {
    t_fault_signal = sig;
    t_fault_address = info ? info->si_addr : nullptr;
    t_fault_stack_overflow = is_stack_overflow(t_running_stack, info, context);
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

  // True when the thread has an alternate stack (this one or another's).
  bool ensure() {
    if (checked_) return memory_ || !own_;
    checked_ = true;
    stack_t current{};
    if (sigaltstack(nullptr, &current) != 0 || !(current.ss_flags & SS_DISABLE)) {  // one is there
      own_ = false;
      return true;
    }
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    size_t size = 64 * 1024;
#ifdef _SC_SIGSTKSZ
    if (long need = sysconf(_SC_SIGSTKSZ); need > 0) size = std::max(size, 4 * static_cast<size_t>(need));
#endif
    size = (size + page - 1) / page * page;
    // A guard page below the stack: a handler that overflowed it faults
    // instead of writing over other memory.
    void* p = mmap(nullptr, size + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (p == MAP_FAILED) return false;  // no alternate stack: an overflow ends the process, as before
    if (mprotect(p, page, PROT_NONE) != 0) {
      munmap(p, size + page);
      return false;
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
    return memory_ != nullptr;
  }

 private:
  void* usable() const { return static_cast<std::byte*>(memory_) + page_; }
  void* memory_ = nullptr;
  size_t mapped_ = 0;
  size_t page_ = 0;
  bool checked_ = false;
  bool own_ = true;  // false: the thread had one already
};

thread_local AltSignalStack t_alt_stack;

// The signal mask of a thread start_kernel_thread started, as it started.
thread_local sigset_t t_home_mask;
thread_local bool t_home_mask_known = false;

// One call of run_workgroups: what the loop on the kernel stack needs, and
// what it found.
struct WorkgroupRun {
  lrrt_host_kernel_fn_t entry;
  const lrrt_host_dispatch_state_t* dispatch;
  uint64_t begin, end;
  uint32_t participant;
  KernelFault* fault;
  std::mutex* fault_mutex;
  const KernelStack* stack = nullptr;  // null: on the thread's own stack
  bool ok = false;
  std::exception_ptr error;  // from lrrt's own code in the loop (never the kernel's)
#if defined(LRRT_HOST_ASAN)
  const void* caller_bottom = nullptr;
  size_t caller_size = 0;
#endif
};

// Runs the workgroups; false on a fault. On the kernel stack when there is one.
bool run_loop(WorkgroupRun& r) {
  thread_local std::unique_ptr<std::byte[]> scratch;
  thread_local size_t scratch_size = 0;
  const lrrt_host_dispatch_state_t& dispatch = *r.dispatch;
  lrrt_host_workgroup_state_t wg{};
  wg.worker_id = r.participant;
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

  volatile uint64_t current = r.begin;
  sigjmp_buf jump;
  // After a fault the thread's signal mask is put back: whatever the kernel
  // blocked before it faulted stays with neither this thread nor later
  // kernels. A thread lrrt started for kernels has a home mask (the one it
  // started with; lrrt never changes it), set again only after a fault;
  // any other thread saves its mask here (sigsetjmp(jump, 1): a system
  // call per run, which would cost a launch of an empty kernel half its time).
  if (sigsetjmp(jump, t_home_mask_known ? 0 : 1)) {
    // Came back from the fault handler.
    if (t_home_mask_known) pthread_sigmask(SIG_SETMASK, &t_home_mask, nullptr);
    if (r.stack) r.stack->forget_frames();
    std::lock_guard lock(*r.fault_mutex);
    if (!r.fault->failed()) {
      r.fault->signal = t_fault_signal;
      r.fault->address = t_fault_address;
      r.fault->workgroup = current;
      r.fault->stack_overflow = t_fault_stack_overflow;
      r.fault->stack_bytes = kKernelStackBytes;
    }
    return false;
  }
  t_fault_jump = &jump;
  for (uint64_t i = r.begin; i < r.end; ++i) {
    current = i;
    wg.workgroup_id[0] = static_cast<uint32_t>(i % nx);
    wg.workgroup_id[1] = static_cast<uint32_t>((i / nx) % dispatch.workgroup_count[1]);
    wg.workgroup_id[2] = static_cast<uint32_t>(i / nxy);
    int rc = r.entry(&dispatch, &wg);
    if (rc != 0) {
      t_fault_jump = nullptr;
      std::lock_guard lock(*r.fault_mutex);
      if (!r.fault->failed()) {
        r.fault->code = rc;
        r.fault->workgroup = i;
      }
      return false;
    }
  }
  t_fault_jump = nullptr;
  return true;
}

// The first function on the kernel stack. Not instrumented itself: it tells
// AddressSanitizer that the stack changed before anything else runs here.
__attribute__((no_sanitize("address"))) void on_kernel_stack(void* p) {
  auto& r = *static_cast<WorkgroupRun*>(p);
#if defined(LRRT_HOST_ASAN)
  __sanitizer_finish_switch_fiber(nullptr, &r.caller_bottom, &r.caller_size);
#endif
  try {
    r.ok = run_loop(r);
  } catch (...) {
    r.error = std::current_exception();
  }
#if defined(LRRT_HOST_ASAN)
  // nullptr: this use of the stack ends (its fake frames are released).
  __sanitizer_start_switch_fiber(nullptr, r.caller_bottom, r.caller_size);
#endif
}

// Runs workgroups [begin, end) of a dispatch; returns false on a fault.
bool run_workgroups(lrrt_host_kernel_fn_t entry, const lrrt_host_dispatch_state_t& dispatch,
                    uint64_t begin, uint64_t end, uint32_t participant, KernelFault& fault,
                    std::mutex& fault_mutex) {
  t_alt_stack.ensure();
  WorkgroupRun r{entry, &dispatch, begin, end, participant, &fault, &fault_mutex};
  if (!kKernelStacks || t_running_stack) return run_loop(r);  // (a kernel stack in use: run on it)
  // A thread lrrt did not start for kernels (start_kernel_thread) gets its
  // stack the first time it runs one.
  if (!t_kernel_stack) t_kernel_stack = std::make_unique<KernelStack>();
  r.stack = t_kernel_stack.get();
  t_running_stack = r.stack;
#if defined(LRRT_HOST_ASAN)
  void* caller_fake_stack = nullptr;
  __sanitizer_start_switch_fiber(&caller_fake_stack, reinterpret_cast<const void*>(r.stack->bottom()),
                                 kKernelStackBytes);
#endif
#if defined(__x86_64__) || defined(__aarch64__)
  // 64 bytes below the top, 16-byte aligned, for the first frame's return address.
  lrrt_host_call_on_stack(reinterpret_cast<void*>(r.stack->top() - 64), on_kernel_stack, &r);
#endif
#if defined(LRRT_HOST_ASAN)
  __sanitizer_finish_switch_fiber(caller_fake_stack, nullptr, nullptr);
#endif
  t_running_stack = nullptr;
  if (r.error) std::rethrow_exception(r.error);
  return r.ok;
}

}  // namespace

std::thread start_kernel_thread(std::function<void()> body) {
  auto stack = kKernelStacks ? std::make_unique<KernelStack>() : nullptr;
  // Returns once the thread has all the memory of its own it needs: its
  // alternate signal stack and its malloc arena (glibc reserves 64 MiB of
  // address space for it on the thread's first allocation). Made later,
  // they took address space that a pool sizing itself against a limit
  // (ulimit -v) had counted as free, and a queue's thread started after it
  // failed; more often when the machine was busy and the workers ran late.
  struct Start {
    std::mutex mutex;
    std::condition_variable cv;
    int state = 0;  // 1: ready, 2: no alternate signal stack
  } start;
  std::thread thread([stack = std::move(stack), body = std::move(body), &start]() mutable {
    t_kernel_stack = std::move(stack);
    t_home_mask_known = pthread_sigmask(SIG_SETMASK, nullptr, &t_home_mask) == 0;
    const bool ready = t_alt_stack.ensure();
    void* volatile arena = std::malloc(64);  // volatile: the pair is not optimised away
    std::free(arena);
    {
      std::lock_guard lock(start.mutex);
      start.state = ready ? 1 : 2;
      start.cv.notify_one();  // under the lock: `start` ends when the starter sees the state
    }
    if (ready) body();
  });
  std::unique_lock lock(start.mutex);
  start.cv.wait(lock, [&] { return start.state != 0; });
  if (start.state == 1) return thread;
  lock.unlock();
  thread.join();
  LRRT_THROW(LR_ERROR_OUT_OF_MEMORY, "cannot map an alternate signal stack for a thread that runs kernel code");
}

void install_fault_handlers() {
  std::call_once(g_handlers_once, [] {
    struct sigaction action {};
    action.sa_sigaction = fault_handler;
    // SA_ONSTACK: on the thread's alternate stack, so a kernel's stack
    // overflow is a fault like any other.
    // No SA_NODEFER: a fault inside the handler itself ends the process
    // instead of recursing; the jump back restores the mask (sigsetjmp).
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
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

#include "cuda_queue.hpp"

#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "cuda_device.hpp"
#include "cuda_event.hpp"
#include "cuda_executable.hpp"

namespace lrrt::rt::cuda {
namespace {

CudaEvent& as_cuda(Event& e) { return static_cast<CudaEvent&>(e); }
const CudaEvent& as_cuda(const Event& e) { return static_cast<const CudaEvent&>(e); }

std::string_view copy_name(CopyKind kind) {
  switch (kind) {
    case CopyKind::HostToDevice: return "cuMemcpyHtoDAsync";
    case CopyKind::DeviceToHost: return "cuMemcpyDtoHAsync";
    case CopyKind::DeviceToDevice: return "cuMemcpyDtoDAsync";
  }
  return "cuMemcpyAsync";
}

// A queue's synchronize() with LRRT_CUDA_SYNC=flag: complete once the stream
// wrote `ticket` (or a later one) into the flag. A fault stops the stream
// before its write, so a failure is seen only past the spin, by the
// blocking wait on the stream, which reports it.
// The word holds `ticket` or a later one. Wrapping comparison: tickets count
// up by one per write.
bool ticket_reached(const uint32_t* word, uint32_t ticket) {
  return static_cast<int32_t>(__atomic_load_n(word, __ATOMIC_ACQUIRE) - ticket) >= 0;
}

template <typename Describe>
class FlagWait final : public Waitable {
 public:
  FlagWait(const uint32_t* flag, uint32_t ticket, CUstream stream, CUevent done, Describe describe)
      : flag_(flag), ticket_(ticket), stream_wait_(stream, done, std::move(describe)) {}
  WaitStatus poll() override {
    return ticket_reached(flag_, ticket_) ? WaitStatus::Complete : WaitStatus::Pending;
  }
  WaitStatus block(std::chrono::nanoseconds limit) override { return stream_wait_.block(limit); }
  Blocking blocking() const override { return Blocking::Unbounded; }
  std::string describe() const override { return stream_wait_.describe(); }
  CUresult result() const { return stream_wait_.result(); }

 private:
  const uint32_t* flag_;
  uint32_t ticket_;
  CudaWait<Describe> stream_wait_;
};

}  // namespace

CudaQueue::CudaQueue(CudaDevice& device) : device_(device) {
  device_.make_current();
  LRRT_CUDA_CHECK(cu(), LR_ERROR_RUNTIME, cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING));
  if (CUresult r = cu().cuEventCreate(&done_, CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING); r != CUDA_SUCCESS) {
    cu().cuStreamDestroy(stream_);
    throw_cu_error(r, LR_ERROR_RUNTIME, "cuEventCreate", __FILE__, __LINE__);
  }
  // The flag is an optimisation: without a word from the device's pinned
  // pool (none unless LRRT_CUDA_SYNC=flag or launch; cuda_device.hpp),
  // synchronize() polls the stream.
  sync_word_ = device_.acquire_sync_word();
  if (sync_word_.host && device_.sync_mode() == SyncMode::Launch) {
    ticketed_ = std::make_unique<TicketedLaunch>();
    ticketed_unloads_seen_ = device_.modules_unloaded();
  }
}

CUresult CompletionMarker::record_locked() {
  if (!pending_on) return CUDA_SUCCESS;
  CUresult r = cu().cuEventRecord(event, pending_on->stream());
  pending_on = nullptr;
  return r;
}

std::unique_lock<std::mutex> CudaQueue::begin_submission(const CompletionMarker* keep) {
  std::unique_lock lock(submit_mutex_);
  record_pending_marker(keep);
  ticket_was_last_ = ticket_is_last_;
  ticket_is_last_ = false;
  return lock;
}

void CudaQueue::record_pending_marker(const CompletionMarker* keep) {
  if (pending_ && pending_.get() != keep) {
    std::shared_ptr<CompletionMarker> marker = std::move(pending_);
    std::lock_guard m(marker->mutex);
    if (marker->pending_on == this) {
      device_.make_current();
      if (CUresult r = marker->record_locked(); r != CUDA_SUCCESS)
        device_.fail(r, "cuEventRecord (a graph replay's completion)", recent_kernels(), __FILE__, __LINE__);
    }
  }
}

void CudaQueue::defer_marker(const std::shared_ptr<CompletionMarker>& marker) {
  {
    std::lock_guard m(marker->mutex);
    marker->pending_on = this;
  }
  pending_ = marker;
}

CudaQueue::~CudaQueue() {
  if (!stream_) return;
  device_.make_current();
  // A replay's marker still pending here is recorded: its exec waits on the
  // event once this stream is gone.
  if (pending_) {
    std::lock_guard m(pending_->mutex);
    if (pending_->pending_on == this) pending_->record_locked();
  }
  // Destroying a stream with work in flight is allowed (the driver finishes
  // it); the core has waited already. Errors here have nowhere to go.
  ticketed_.reset();
  if (done_) cu().cuEventDestroy(done_);
  cu().cuStreamDestroy(stream_);
  device_.release_sync_word(sync_word_);
}

void CudaQueue::wait_events(EventList wait_for) {
  for (Event* e : wait_for) {
    if (!e) continue;
    LRRT_CUDA_CHECK_DEVICE(device_, recent_kernels(), cuStreamWaitEvent(stream_, as_cuda(*e).event(), 0));
  }
}

CudaEvent* CudaQueue::begin_operation(EventList wait_for, Event* signal) {
  wait_events(wait_for);
  if (!signal) return nullptr;
  CudaEvent* sig = &as_cuda(*signal);
  sig->set_timed(true);
  LRRT_CUDA_CHECK_DEVICE(device_, recent_kernels(), cuEventRecord(sig->start_event(), stream_));
  return sig;
}

void CudaQueue::end_operation(CudaEvent* signal) {
  if (signal)
    LRRT_CUDA_CHECK_DEVICE(device_, recent_kernels(), cuEventRecord(signal->event(), stream_));
}

std::string CudaQueue::recent_kernels() const {
  uint64_t n = launches_since_sync_.load(std::memory_order_relaxed);
  if (n == 0) return {};
  const std::string* last = recent_[(n - 1) % kRecent].load(std::memory_order_relaxed);
  if (!last) return {};
  std::vector<std::string> others;
  for (uint64_t i = n - 1; i-- > (n > kRecent ? n - kRecent : 0);) {
    const std::string* name = recent_[i % kRecent].load(std::memory_order_relaxed);
    if (name && *name != *last &&
        std::find(others.begin(), others.end(), *name) == others.end())
      others.push_back(*name);
  }
  std::string out = "'" + *last + "'";
  if (!others.empty()) {
    out += " (or an earlier kernel launched since the last synchronize: ";
    for (size_t i = 0; i < others.size(); ++i) out += (i ? ", '" : "'") + others[i] + "'";
    out += ")";
  }
  return out;
}

void CudaQueue::launch(Kernel& kernel, const LaunchConfig& config, std::span<const std::byte> args,
                       EventList wait_for, Event* signal) {
  auto& k = static_cast<CudaKernel&>(kernel);
  const KernelInfo& info = k.info();
  size_t size = args.size();
  if (uint32_t expected = k.param_bytes(); info.has_arg_layout) {
    // Trailing padding up to 8-byte alignment is accepted and not passed.
    size_t padded = (size_t(expected) + 7) / 8 * 8;
    if (size < expected || size > std::max<size_t>(padded, expected))
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT,
                 "kernel '{}' takes {} bytes of arguments ({} parameters) but {} bytes were given",
                 info.name, expected, info.args.size(), size);
    size = expected;
  }
  auto submission = begin_submission();
  device_.make_current();
  if (config.dynamic_shared_bytes > 48 * 1024) k.ensure_dynamic_shared(config.dynamic_shared_bytes);
  const CudaSymbols& s = cu();
  CudaEvent* sig = begin_operation(wait_for, signal);
  ArgumentBuffer arguments(args.first(size));
  CUresult r = CUDA_ERROR_NOT_SUPPORTED;
  const char* call = "cuLaunchKernel";
  bool launched = false;  // r is the launch's result
  if (s.cuLaunchKernelEx && device_.programmatic_launch() &&
      (k.flags.load(std::memory_order_relaxed) & LR_KERNEL_WAITS_FOR_PRODUCER)) {
    // The kernel waits for its producer itself: it may start while the
    // stream's previous kernel drains (programmatic stream serialization).
    CUlaunchAttribute attr{};
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig lc{};
    lc.gridDimX = config.grid.x;
    lc.gridDimY = config.grid.y;
    lc.gridDimZ = config.grid.z;
    lc.blockDimX = config.block.x;
    lc.blockDimY = config.block.y;
    lc.blockDimZ = config.block.z;
    lc.sharedMemBytes = config.dynamic_shared_bytes;
    lc.hStream = stream_;
    lc.attrs = &attr;
    lc.numAttrs = 1;
    r = s.cuLaunchKernelEx(&lc, k.function(), nullptr, arguments.extra());
    call = "cuLaunchKernelEx";
    launched = true;
  } else if (ticketed_ && !sig && stream_was_idle()) {
    // LRRT_CUDA_SYNC=launch: the kernel and its ticket in one replay. (A timed
    // launch keeps cuLaunchKernel: its events bracket the kernel alone.) When
    // the graph refuses, cuLaunchKernel below either launches the kernel or
    // says in its usual words why it cannot. Only onto an idle stream: there
    // a wait is likely next and the replay saves ~1.5 us of it, while behind
    // queued work the replay costs the GPU ~1 us more than a bare kernel
    // (docs/results/h100-2026-12-05-d-sync-launch.md).
    if (uint64_t unloads = device_.modules_unloaded(); unloads != ticketed_unloads_seen_) {
      ticketed_ = std::make_unique<TicketedLaunch>();
      ticketed_unloads_seen_ = unloads;
    }
    r = ticketed_->launch(device_.context(), stream_, k.function(), config, arguments.extra(),
                          sync_word_.device, sync_word_.last_ticket + 1, &call);
    if (r == CUDA_SUCCESS) {
      ++sync_word_.last_ticket;
      ticket_is_last_ = true;
    }
    launched = r == CUDA_SUCCESS || cu_is_sticky_fault(r);
  }
  if (!launched) {
    call = "cuLaunchKernel";
    r = s.cuLaunchKernel(k.function(), config.grid.x, config.grid.y, config.grid.z, config.block.x,
                         config.block.y, config.block.z, config.dynamic_shared_bytes, stream_, nullptr,
                         arguments.extra());
    // The graph could not be made though the launch is fine: this queue's
    // launches stay plain (synchronize writes the word), not remade each time.
    if (r == CUDA_SUCCESS && ticketed_ && !sig && !ticketed_->ready()) ticketed_.reset();
  }
  if (r != CUDA_SUCCESS) {
    if (cu_is_sticky_fault(r)) device_.fail(r, call, recent_kernels(), __FILE__, __LINE__);
    throw Error(cu_status(r, LR_ERROR_INVALID_ARGUMENT),
                fmt::format("launching kernel '{}' (grid {}x{}x{}, block {}x{}x{}, {} bytes dynamic "
                            "shared memory, {} argument bytes) on {} failed: {} [at {}:{}]",
                            info.name, config.grid.x, config.grid.y, config.grid.z, config.block.x,
                            config.block.y, config.block.z, config.dynamic_shared_bytes, size,
                            device_.description(), cu_error_text(r), file_basename(__FILE__),
                            __LINE__));
  }
  uint64_t n = launches_since_sync_.fetch_add(1, std::memory_order_relaxed);
  recent_[n % kRecent].store(&info.name, std::memory_order_relaxed);
  device_.note_launch(&info.name);
  end_operation(sig);
}

void CudaQueue::copy(void* dst, const void* src, size_t size, CopyKind kind, EventList wait_for,
                     Event* signal) {
  auto submission = begin_submission();
  device_.make_current();
  const CudaSymbols& s = cu();
  CudaEvent* sig = begin_operation(wait_for, signal);
  if (size != 0) {
    auto d = [](const void* p) { return reinterpret_cast<CUdeviceptr>(p); };
    CUresult r = CUDA_SUCCESS;
    switch (kind) {
      case CopyKind::HostToDevice: r = s.cuMemcpyHtoDAsync(d(dst), src, size, stream_); break;
      case CopyKind::DeviceToHost: r = s.cuMemcpyDtoHAsync(dst, d(src), size, stream_); break;
      case CopyKind::DeviceToDevice: r = s.cuMemcpyDtoDAsync(d(dst), d(src), size, stream_); break;
    }
    if (r != CUDA_SUCCESS)
      device_.fail(r, fmt::format("{} of {} bytes", copy_name(kind), size), recent_kernels(),
                   __FILE__, __LINE__);
  }
  end_operation(sig);
}

void CudaQueue::copy_peer(void* dst, CUcontext dst_context, const void* src, CUcontext src_context, size_t size,
                          EventList wait_for, Event* signal) {
  auto submission = begin_submission();
  device_.make_current();
  CudaEvent* sig = begin_operation(wait_for, signal);
  if (size != 0) {
    CUresult r = cu().cuMemcpyPeerAsync(reinterpret_cast<CUdeviceptr>(dst), dst_context,
                                        reinterpret_cast<CUdeviceptr>(src), src_context, size, stream_);
    if (r != CUDA_SUCCESS)
      device_.fail(r, fmt::format("cuMemcpyPeerAsync of {} bytes", size), recent_kernels(), __FILE__, __LINE__);
  }
  end_operation(sig);
}

bool CudaQueue::stream_was_idle() const {
  // All the stream's work was before the last ticket, and the word has it.
  return ticket_was_last_ && ticket_reached(sync_word_.host, sync_word_.last_ticket);
}

void CudaQueue::record(Event& event) {
  // The record follows the last ticket. (Not begin_submission(): a replay
  // that returns its completion event keeps its marker pending.)
  std::lock_guard lock(submit_mutex_);
  ticket_is_last_ = false;
  device_.make_current();
  CudaEvent& e = as_cuda(event);
  e.set_timed(false);
  LRRT_CUDA_CHECK_DEVICE(device_, recent_kernels(), cuEventRecord(e.event(), stream_));
}

void CudaQueue::synchronize() {
  device_.make_current();
  if (sync_word_.host) {
    uint32_t ticket = 0;
    CUresult r = CUDA_SUCCESS;
    {
      std::lock_guard lock(submit_mutex_);
      if (ticket_is_last_) {
        ticket = sync_word_.last_ticket;  // a ticketed launch's, or an earlier synchronize's
      } else {
        record_pending_marker(nullptr);
        ticket = ++sync_word_.last_ticket;
        r = cu().cuStreamWriteValue32(stream_, sync_word_.device, ticket, CU_STREAM_WRITE_VALUE_DEFAULT);
        ticket_is_last_ = r == CUDA_SUCCESS;
      }
    }
    if (r == CUDA_SUCCESS) {
      FlagWait target(sync_word_.host, ticket, stream_, done_, [this] {
        const std::string names = recent_kernels();
        return fmt::format("a queue on {}{}", device_.description(), names.empty() ? "" : ", running kernel " + names);
      });
      if (rt::wait(target) != WaitStatus::Complete)
        device_.fail(target.result(), "waiting for a stream (its completion flag, then cuEventSynchronize)", recent_kernels(),
                     __FILE__, __LINE__);
      launches_since_sync_.store(0, std::memory_order_relaxed);
      return;
    }
    // The write was refused (a sticky error among them): the stream wait reports it.
  }
  device_.synchronize_stream(stream_, done_, "a queue", [this] { return recent_kernels(); });
  launches_since_sync_.store(0, std::memory_order_relaxed);
}

}  // namespace lrrt::rt::cuda

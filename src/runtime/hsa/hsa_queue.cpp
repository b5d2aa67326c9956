#include "hsa_queue.hpp"

#include <cstring>

#include "aql.hpp"
#include "hsa_executable.hpp"
#include "keep_until_exit.hpp"
#include "kernargs.hpp"
#include "wait.hpp"

namespace lrrt::rt::hsa {
namespace {

constexpr size_t kSlotCount = 256;  // kernarg slots: launches in flight before one waits
constexpr size_t kMinKernargCapacity = 512;

void queue_error_callback(hsa_status_t status, hsa_queue_t*, void* data) {
  auto* state = static_cast<QueueErrorState*>(data);
  state->status.store(int(status));
  state->failed.store(true, std::memory_order_release);
}

}  // namespace

HsaQueue::HsaQueue(HsaDevice& device)
    : device_(device), ctx_(device.context()), api_(device.api()) {
  slots_.resize(kSlotCount);
  create_hsa_queue();
  LRRT_HSA_CHECK(api_, LR_ERROR_RUNTIME, hsa_signal_create(0, 0, nullptr, &barrier_signal_));
}

HsaQueue::~HsaQueue() {
  try {
    synchronize();
  } catch (...) {
  }
  destroy_hsa_queue();
  for (hsa_queue_t* q : retired_) api_.hsa_queue_destroy(q);
  printf_.reset();  // after the queue: nothing writes into it any more
  for (auto& s : slots_) {
    if (s.kernarg) device_.free_kernarg(s.kernarg);
    if (s.own.handle) api_.hsa_signal_destroy(s.own);
  }
  if (barrier_signal_.handle) api_.hsa_signal_destroy(barrier_signal_);
}

void HsaQueue::create_hsa_queue() {
  error_ = std::make_shared<QueueErrorState>();
  LRRT_HSA_CHECK(api_, LR_ERROR_RUNTIME, hsa_queue_create(device_.agent(), device_.queue_size(),
                                                          HSA_QUEUE_TYPE_SINGLE, queue_error_callback,
                                                          error_.get(), UINT32_MAX, UINT32_MAX, &queue_));
  device_.watch_queue(error_);
  // Dispatch timestamps for Event::duration_ns; failure only loses timing.
  api_.hsa_amd_profiling_set_profiler_enabled(queue_, 1);
}

void HsaQueue::destroy_hsa_queue() {
  if (queue_) api_.hsa_queue_destroy(queue_);
  queue_ = nullptr;
}

void HsaQueue::retire_hsa_queue() {
  if (queue_) {
    try {
      retired_.push_back(queue_);
    } catch (...) {
      api_.hsa_queue_destroy(queue_);
    }
  }
  queue_ = nullptr;
  blocks_.clear();
}

std::string HsaQueue::failed_replay_packet() const {
  if (!queue_) return {};
  const uint64_t read = api_.hsa_queue_load_read_index_scacquire(queue_);
  for (const Block& b : blocks_) {
    const uint64_t first = b.start + b.joins;
    if (read < first || read - first >= b.packets->size()) continue;
    const std::string& what = (*b.packets)[size_t(read - first)];
    if (!what.empty()) return what;
  }
  return {};
}

bool HsaQueue::slot_done(const Slot& s) const {
  if (!s.busy) return true;
  hsa_signal_t sig = s.event_signal ? s.event_signal->handle : s.own;
  return api_.hsa_signal_load_relaxed(sig) < 1;
}

HsaQueue::Slot& HsaQueue::acquire_slot(size_t bytes) {
  Slot& s = slots_[next_slot_];
  next_slot_ = (next_slot_ + 1) % slots_.size();
  if (!slot_done(s)) {
    hsa_signal_t sig = s.event_signal ? s.event_signal->handle : s.own;
    wait_signal(ctx_, sig, error_.get(),
                fmt::format("kernel '{}' (kernarg buffer reuse)", s.kernel_name));
    throw_if_failed();
  }
  if (s.copy_waiter && api_.hsa_signal_load_relaxed(s.copy_waiter->handle) > 0)
    wait_signal(ctx_, s.copy_waiter->handle, nullptr, "an async copy (kernarg buffer reuse)");
  s.copy_waiter.reset();
  s.busy = false;
  s.event_signal.reset();
  s.keep.clear();
  if (s.capacity < bytes) {
    if (s.kernarg) device_.free_kernarg(s.kernarg);
    s.kernarg = nullptr;
    s.capacity = std::max(bytes, kMinKernargCapacity);
    s.kernarg = static_cast<std::byte*>(device_.allocate_kernarg(s.capacity));
  }
  if (!s.own.handle) LRRT_HSA_CHECK(api_, LR_ERROR_RUNTIME, hsa_signal_create(1, 0, nullptr, &s.own));
  return s;
}

namespace {

// Room in a full AQL ring: the packet processor must consume first. Nothing
// to block on, so the wait naps; a queue error ends it (reported at the next
// synchronize).
class RingSpaceWait final : public Waitable {
 public:
  RingSpaceWait(const HsaSymbols& api, hsa_queue_t* queue, uint64_t index, const QueueErrorState& error)
      : api_(api), queue_(queue), index_(index), error_(error) {}
  WaitStatus poll() override {
    if (index_ - api_.hsa_queue_load_read_index_scacquire(queue_) < queue_->size) return WaitStatus::Complete;
    return error_.failed.load(std::memory_order_acquire) ? WaitStatus::Failed : WaitStatus::Pending;
  }
  Blocking blocking() const override { return Blocking::None; }
  std::string describe() const override { return "space in a full hsa queue"; }

 private:
  const HsaSymbols& api_;
  hsa_queue_t* queue_;
  uint64_t index_;
  const QueueErrorState& error_;
};

}  // namespace

void wait_ring_space(const HsaSymbols& api, hsa_queue_t* queue, uint64_t last_index, const QueueErrorState& error) {
  if (last_index - api.hsa_queue_load_read_index_scacquire(queue) < queue->size) return;
  RingSpaceWait room(api, queue, last_index, error);
  rt::wait(room);
}

uint32_t check_dispatch(const HsaKernel& k, const LaunchConfig& c, const DeviceProperties& props) {
  const KernelInfo& info = k.info_;
  uint64_t wg = c.block.product();
  if (wg == 0 || c.grid.product() == 0)
    LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "kernel '{}': grid and block must not have zero dimensions",
               info.name);
  uint32_t max_wg = info.max_workgroup_size ? info.max_workgroup_size : props.max_workgroup_size;
  if (wg > max_wg || c.block.x > 0xffff || c.block.y > 0xffff || c.block.z > 0xffff)
    LRRT_THROW(LR_ERROR_INVALID_ARGUMENT,
               "kernel '{}': workgroup of {}x{}x{} = {} work-items exceeds its maximum of {}",
               info.name, c.block.x, c.block.y, c.block.z, wg, max_wg);
  for (int d = 0; d < 3; ++d) {
    uint64_t n = uint64_t((&c.grid.x)[d]) * (&c.block.x)[d];
    if (n > UINT32_MAX)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT,
                 "kernel '{}': grid dimension {} has {} work-items, more than AQL's 2^32-1",
                 info.name, "xyz"[d], n);
  }
  uint64_t group = uint64_t(k.group_segment_size) + c.dynamic_shared_bytes;
  if (group > props.max_shared_memory_per_workgroup)
    LRRT_THROW(LR_ERROR_INVALID_ARGUMENT,
               "kernel '{}' needs {} bytes of LDS ({} static + {} dynamic), more than the {} bytes "
               "a workgroup can have",
               info.name, group, k.group_segment_size, c.dynamic_shared_bytes,
               props.max_shared_memory_per_workgroup);
  return uint32_t(group);
}

void HsaQueue::wait_for_packets(size_t count) {
  // Before the write index moves: a slot reserved and then abandoned (the
  // wait timed out, the queue failed) keeps an INVALID header, and the
  // packet processor stops there for good. One producer (the queue's lock),
  // so the space found here stays free.
  const uint64_t first = api_.hsa_queue_load_write_index_relaxed(queue_);
  wait_ring_space(api_, queue_, first + count - 1, *error_);
  throw_if_failed();
}

void* HsaQueue::reserve_packet(uint64_t* index) {
  // wait_for_packets made room.
  uint64_t idx = api_.hsa_queue_add_write_index_relaxed(queue_, 1);
  *index = idx;
  return static_cast<std::byte*>(queue_->base_address) + (idx & (queue_->size - 1)) * kAqlPacketBytes;
}

size_t HsaQueue::barrier_packets(size_t deps) {
  return (deps + kBarrierAndMaxDeps - 1) / kBarrierAndMaxDeps;
}

void HsaQueue::ring_doorbell(uint64_t index) {
  api_.hsa_signal_store_screlease(queue_->doorbell_signal, hsa_signal_value_t(index));
}

void HsaQueue::emit_barriers(std::vector<hsa_signal_t>& deps, hsa_signal_t last_completion) {
  size_t i = 0;
  while (i < deps.size()) {
    size_t n = std::min<size_t>(kBarrierAndMaxDeps, deps.size() - i);
    bool last = i + n == deps.size();
    hsa_signal_t completion = last ? last_completion : hsa_signal_t{0};
    uint64_t idx;
    auto* p = static_cast<hsa_barrier_and_packet_t*>(reserve_packet(&idx));
    encode_barrier_and(p, std::span<const hsa_signal_t>(deps.data() + i, n), completion);
    publish_packet(p, kBarrierAndHeader, 0);
    ring_doorbell(idx);
    i += n;
  }
  deps.clear();
}

void HsaQueue::collect_waits(EventList wait_for, std::vector<hsa_signal_t>& deps,
                             std::vector<SignalRef>& keep) {
  for (Event* e : wait_for) {
    auto* he = dynamic_cast<HsaEvent*>(e);
    if (!he)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "an hsa queue cannot wait for another backend's event");
    SignalRef ref = he->signal_ref();
    if (!ref || api_.hsa_signal_load_relaxed(ref->handle) < 1) continue;
    deps.push_back(ref->handle);
    keep.push_back(std::move(ref));
  }
}

void HsaQueue::reap_completed() {
  std::erase_if(copies_, [&](PendingCopy& c) {
    if (api_.hsa_signal_load_relaxed(c.signal->handle) > 0) return false;
    if (c.staging) device_.free_staging(c.staging);
    return true;
  });
  std::erase_if(markers_,
                [&](const PendingMarker& m) { return api_.hsa_signal_load_relaxed(m.signal->handle) < 1; });
  std::erase_if(blocks_, [&](const Block& b) { return api_.hsa_signal_load_relaxed(b.done->handle) < 1; });
}

void HsaQueue::launch(Kernel& kernel, const LaunchConfig& c, std::span<const std::byte> args,
                      EventList wait_for, Event* signal) {
  auto* k = dynamic_cast<HsaKernel*>(&kernel);
  if (!k) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "the kernel was not loaded by the hsa backend");
  const KernelInfo& info = k->info_;
  check_explicit_args(info, args.size());
  const uint32_t group = check_dispatch(*k, c, device_.properties());

  std::lock_guard lock(mutex_);
  throw_if_failed();
  std::vector<hsa_signal_t> deps;
  std::vector<SignalRef> keep;
  collect_waits(wait_for, deps, keep);
  reap_completed();
  for (auto& cp : copies_) {
    deps.push_back(cp.signal->handle);
    keep.push_back(cp.signal);
  }

  // Everything that may wait or throw comes before the first packet: a
  // barrier-AND written for a dispatch that then fails to be submitted would
  // wait on signals nobody keeps out of the pool any more.
  const uint64_t printf_buffer = k->services.printf_buffer ? attach_printf(*k) : 0;
  size_t bytes = std::max<size_t>(k->kernarg_size, args.size());
  Slot& s = acquire_slot(bytes);
  pack_kernargs(info, c, args, std::span<std::byte>(s.kernarg, s.capacity), printf_buffer);
  wait_for_packets(barrier_packets(deps.size()) + 1);
  if (!deps.empty()) emit_barriers(deps, hsa_signal_t{0});
  hsa_signal_t completion;
  if (auto* ev = dynamic_cast<HsaEvent*>(signal)) {
    completion = ev->arm(HsaEvent::Kind::Dispatch, error_,
                         fmt::format("kernel '{}'", info.name));
    s.event_signal = ev->signal_ref();
  } else {
    api_.hsa_signal_store_relaxed(s.own, 1);
    completion = s.own;
  }
  s.kernel_name = k->info().name;  // reuses the string's capacity
  s.busy = true;
  s.keep = std::move(keep);

  uint64_t idx;
  auto* p = static_cast<hsa_kernel_dispatch_packet_t*>(reserve_packet(&idx));
  encode_dispatch(p, c, k->kernel_object, s.kernarg, group, k->private_segment_size,
                  completion);
  publish_packet(p, kDispatchHeader, dispatch_setup(grid_dims(c)));
  ring_doorbell(idx);
  last_signal_ = completion;
  last_ref_ = s.event_signal;
  last_slot_ = s.event_signal ? nullptr : &s;
}

void HsaQueue::copy(void* dst, const void* src, size_t size, CopyKind kind, EventList wait_for,
                    Event* signal) {
  std::lock_guard lock(mutex_);
  throw_if_failed();
  std::vector<hsa_signal_t> deps;
  std::vector<SignalRef> keep;
  collect_waits(wait_for, deps, keep);
  const bool waits_for_events = !deps.empty();
  // In order with this queue: after the last AQL packet and earlier copies.
  bool waits_on_slot = false;
  if (last_signal_.handle && api_.hsa_signal_load_relaxed(last_signal_) > 0) {
    deps.push_back(last_signal_);
    if (last_ref_) keep.push_back(last_ref_);
    waits_on_slot = last_slot_ != nullptr;
  }
  reap_completed();
  for (auto& cp : copies_) {
    deps.push_back(cp.signal->handle);
    keep.push_back(cp.signal);
  }

  if (size == 0) {
    copy_nothing(deps, std::move(keep), waits_for_events, signal);
    return;
  }

  hsa_agent_t gpu = device_.agent(), cpu = ctx_.cpu_agent;
  hsa_agent_t dst_agent = kind == CopyKind::DeviceToHost ? cpu : gpu;
  hsa_agent_t src_agent = kind == CopyKind::HostToDevice ? cpu : gpu;

  // Pageable host memory goes through pinned staging: H2D copies the source
  // now; D2H waits for the copy and copies out (blocking). A zero-byte copy
  // (null pointers allowed) has nothing to stage.
  void* staging = nullptr;
  void* copy_dst = dst;
  const void* copy_src = src;
  if (size && kind == CopyKind::HostToDevice && !device_.is_pinned(src, size)) {
    staging = device_.allocate_staging(size);
    std::memcpy(staging, src, size);
    copy_src = staging;
  } else if (size && kind == CopyKind::DeviceToHost && !device_.is_pinned(dst, size)) {
    staging = device_.allocate_staging(size);
    copy_dst = staging;
  }

  SignalRef sig = device_.acquire_signal();
  auto* ev = dynamic_cast<HsaEvent*>(signal);
  hsa_signal_t completion = sig->handle;
  if (ev) {
    completion = ev->arm(HsaEvent::Kind::Copy, error_,
                         fmt::format("a {}-byte {} copy", size, copy_kind_name(kind)));
    sig = ev->signal_ref();
  }
  hsa_status_t st = api_.hsa_amd_memory_async_copy(copy_dst, dst_agent, copy_src, src_agent, size,
                                                   uint32_t(deps.size()),
                                                   deps.empty() ? nullptr : deps.data(), completion);
  if (st != HSA_STATUS_SUCCESS) {
    if (staging) device_.free_staging(staging);
    api_.hsa_signal_store_relaxed(completion, 0);
    LRRT_THROW_AT(LR_ERROR_RUNTIME, "hsa_amd_memory_async_copy of {} bytes ({}) failed: {}", size,
                  copy_kind_name(kind), hsa_error_text(api_, st));
  }
  if (kind == CopyKind::DeviceToHost && staging) {
    wait_signal(ctx_, completion, nullptr, fmt::format("a {}-byte device-to-host copy", size));
    std::memcpy(dst, staging, size);
    device_.free_staging(staging);
    staging = nullptr;
  }
  if (waits_on_slot) last_slot_->copy_waiter = sig;
  copies_.push_back({std::move(sig), staging, std::move(keep)});
}

void HsaQueue::copy_nothing(std::vector<hsa_signal_t>& deps, std::vector<SignalRef> keep, bool waits_for_events,
                            Event* signal) {
  // ROCr's hsa_amd_memory_async_copy returns HSA_STATUS_SUCCESS for zero
  // bytes without ever completing the signal (every wait on it would hang)
  // and refuses null pointers even then: a zero-byte copy does not reach
  // the copy engine. It still follows what came before it on the queue and
  // its events, and later work follows it: a barrier-AND packet waiting for
  // the same signals stands in for it, completing its event.
  auto* ev = dynamic_cast<HsaEvent*>(signal);
  if (!ev && !waits_for_events) return;  // nothing waits for it, it waits for nothing new
  wait_for_packets(std::max<size_t>(1, barrier_packets(deps.size())));
  SignalRef done;
  if (ev) {
    ev->arm(HsaEvent::Kind::Marker, error_, "a zero-byte copy");
    done = ev->signal_ref();
  } else {
    done = device_.acquire_signal();
  }
  if (deps.empty()) {
    uint64_t idx;
    auto* p = static_cast<hsa_barrier_and_packet_t*>(reserve_packet(&idx));
    encode_barrier_and(p, {}, done->handle);
    publish_packet(p, kBarrierAndHeader, 0);
    ring_doorbell(idx);
  } else {
    emit_barriers(deps, done->handle);
  }
  markers_.push_back({done, std::move(keep)});
  last_signal_ = done->handle;
  last_ref_ = std::move(done);
  last_slot_ = nullptr;
}

void HsaQueue::record(Event& event) {
  auto* ev = dynamic_cast<HsaEvent*>(&event);
  if (!ev) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "an hsa queue cannot record another backend's event");
  std::lock_guard lock(mutex_);
  throw_if_failed();
  std::vector<hsa_signal_t> deps;
  reap_completed();
  std::vector<SignalRef> copy_refs;
  for (auto& cp : copies_) {
    deps.push_back(cp.signal->handle);
    copy_refs.push_back(cp.signal);
  }
  reap_completed();
  wait_for_packets(std::max<size_t>(1, barrier_packets(deps.size())));
  hsa_signal_t completion = ev->arm(HsaEvent::Kind::Marker, error_, "an event marker");
  markers_.push_back({ev->signal_ref(), std::move(copy_refs)});
  if (deps.empty()) {
    uint64_t idx;
    auto* p = static_cast<hsa_barrier_and_packet_t*>(reserve_packet(&idx));
    encode_barrier_and(p, {}, completion);
    publish_packet(p, kBarrierAndHeader, 0);
    ring_doorbell(idx);
  } else {
    emit_barriers(deps, completion);
  }
  last_signal_ = completion;
  last_ref_ = ev->signal_ref();
  last_slot_ = nullptr;
}

void HsaQueue::submit_block(const BlockWriter& write) {
  std::lock_guard lock(mutex_);
  throw_if_failed();
  reap_completed();
  pending_scratch_.clear();
  for (auto& cp : copies_) pending_scratch_.push_back(cp.signal);
  Block block = write(queue_, error_, pending_scratch_);
  pending_scratch_.clear();
  last_signal_ = block.done->handle;
  last_ref_ = block.done;
  try {
    blocks_.push_back(std::move(block));
  } catch (...) {
    // Only the kernel's name in a failure message is lost.
  }
  last_slot_ = nullptr;
}

uint64_t HsaQueue::attach_printf(const HsaKernel& k) {
  if (!printf_) printf_ = std::make_unique<PrintfBuffer>(device_);
  if (printf_->conflicts(k.printf_table)) {
    // The records in the buffer need the other code object's table: print
    // them once every dispatch before this one finished (the barrier bit
    // orders the queue, so the last packet's completion says so).
    if (last_signal_.handle)
      wait_signal(ctx_, last_signal_, error_.get(),
                  fmt::format("the hsa queue's dispatches before kernel '{}' (to print their printf output)",
                              k.info_.name));
    throw_if_failed();
    printf_->drain();
  }
  return printf_->attach(k.printf_table, k.info_.name);
}

void HsaQueue::throw_if_failed() {
  if (!error_->failed.load(std::memory_order_acquire)) {
    if (!queue_) {
      if (const auto cause = device_.hw_exception())
        LRRT_THROW(LR_ERROR_DEVICE_LOST, "{}", device_.device_lost_text(*cause));
      // A GPU memory fault stopped the device (reported once, below).
      const auto f = device_.memory_fault();
      LRRT_THROW(LR_ERROR_DEVICE_LOST,
                 "hsa device '{}' had a GPU memory fault at address {:#x} ({}); ROCr stops the device's queues and "
                 "reports one memory fault per process: the device is unusable until the process restarts",
                 device_.properties().name, f ? f->address : 0, memory_fault_reason_text(f ? f->reason : 0));
    }
    return;
  }
  // What the dispatches printed before the queue failed may explain it.
  if (printf_) printf_->drain();
  // The oldest dispatch that has not completed is the one that faulted,
  // unless the queue stopped inside a replay's block.
  const std::string replay_packet = failed_replay_packet();
  std::string name;
  for (size_t i = 0; i < slots_.size() && name.empty() && replay_packet.empty(); ++i) {
    const Slot& s = slots_[(next_slot_ + i) % slots_.size()];
    if (s.busy && !slot_done(s)) name = s.kernel_name;
  }
  hsa_status_t status = hsa_status_t(error_->status.load());
  std::string what = hsa_error_text(api_, status);
  // A replay's lane queue failed (hsa_graph.cpp): the kernel that failed ran
  // there, and this queue's unfinished work waited behind the replay.
  const std::string cause = error_->cause();
  // What failed: "kernel 'k'", or a replay's "node 2 (kernel 'k') of a
  // replay of a graph of 3 nodes"; empty when unknown.
  const std::string who = !cause.empty()          ? std::string()
                          : !replay_packet.empty() ? replay_packet
                          : name.empty()           ? std::string()
                                                   : fmt::format("kernel '{}'", name);
  // Recover: a fresh queue; the old one's work is abandoned. Its unfinished
  // packets may still run: when a replay's lane failed, this queue did not,
  // and its packets go on once the replay's signals are forced. So what they
  // use -- completion signals, kernarg buffers, the signals their barriers
  // wait on -- never goes back to a pool or to a new dispatch, where a late
  // packet would complete the next user's signal early or read its
  // arguments. Kept to the end of the process: faults are rare.
  struct Abandoned {
    std::vector<SignalRef> signals;
    std::vector<hsa_signal_t> own;  // never destroyed
    std::vector<void*> kernargs;    // never freed
  };
  auto abandoned = std::make_shared<Abandoned>();
  for (auto& s : slots_) {
    if (s.busy && !slot_done(s)) {
      if (s.event_signal) api_.hsa_signal_store_relaxed(s.event_signal->handle, 0);
      api_.hsa_signal_store_relaxed(s.own, 0);
      if (s.event_signal) abandoned->signals.push_back(std::move(s.event_signal));
      for (auto& k : s.keep) abandoned->signals.push_back(std::move(k));
      abandoned->own.push_back(s.own);
      s.own = hsa_signal_t{0};  // acquire_slot makes a new one
      if (s.kernarg) abandoned->kernargs.push_back(s.kernarg);
      s.kernarg = nullptr;
      s.capacity = 0;
    }
    s.busy = false;
    s.event_signal.reset();
    s.keep.clear();
    s.copy_waiter.reset();
  }
  // Markers on the old queue may never complete: complete them as abandoned.
  for (auto& m : markers_) {
    api_.hsa_signal_store_relaxed(m.signal->handle, 0);
    abandoned->signals.push_back(std::move(m.signal));
    for (auto& k : m.keep) abandoned->signals.push_back(std::move(k));
  }
  markers_.clear();
  for (auto& b : blocks_) abandoned->signals.push_back(b.done);
  keep_until_exit(std::move(abandoned));
  last_signal_ = hsa_signal_t{0};
  last_ref_.reset();
  last_slot_ = nullptr;
  auto old = error_;
  retire_hsa_queue();
  if (const uint32_t hw = old->hw_exception.load()) {
    // No new queue: the device is lost (later calls say so, above).
    error_ = std::make_shared<QueueErrorState>();
    LRRT_THROW(LR_ERROR_DEVICE_LOST, "{}{}", device_.device_lost_text(hw),
               who.empty() ? std::string() : fmt::format(" ({} was running)", who));
  }
  if (old->memory_fault.load()) {
    // No new queue: the device's queues stopped, and ROCr reports no later
    // fault. Later calls say the device is lost.
    error_ = std::make_shared<QueueErrorState>();
    const std::string where = fmt::format("at address {:#x} ({})", old->fault_address.load(),
                                          memory_fault_reason_text(old->fault_reason.load()));
    if (who.empty())
      LRRT_THROW(LR_ERROR_KERNEL_FAULT,
                 "a GPU memory fault {} stopped the hsa queue; the device is unusable until the process restarts",
                 where);
    LRRT_THROW(LR_ERROR_KERNEL_FAULT,
               "{} caused a GPU memory fault {} on hsa device '{}'; ROCr stops the device's queues: the "
               "device is unusable until the process restarts",
               who, where, device_.properties().name);
  }
  std::string recovered = "a new hsa queue replaces it";
  try {
    create_hsa_queue();
  } catch (const Error& e) {
    recovered = std::string("the device is unusable: ") + e.what();
    error_ = old;
    LRRT_THROW(LR_ERROR_DEVICE_LOST, "{} failed on the hsa queue: {}; {}", who.empty() ? "a kernel" : who, what,
               recovered);
  }
  if (!cause.empty())
    LRRT_THROW(LR_ERROR_KERNEL_FAULT, "{}; the hsa queue's work after the replay is abandoned; {}", cause,
               recovered);
  if (who.empty())
    LRRT_THROW(LR_ERROR_KERNEL_FAULT, "the hsa queue failed: {}; {}", what, recovered);
  LRRT_THROW(LR_ERROR_KERNEL_FAULT, "{} failed on the hsa queue: {}; {}", who, what, recovered);
}

void HsaQueue::synchronize() {
  std::lock_guard lock(mutex_);
  throw_if_failed();
  if (last_signal_.handle) {
    std::string what = "the last operation on the hsa queue";
    for (size_t i = 1; i <= slots_.size(); ++i) {
      const Slot& s = slots_[(next_slot_ + slots_.size() - i) % slots_.size()];
      // Only unfinished dispatches: a finished one's module may be gone.
      if (s.busy && !slot_done(s)) {
        what = fmt::format("kernel '{}'", s.kernel_name);
        break;
      }
    }
    wait_signal(ctx_, last_signal_, error_.get(), what);
    throw_if_failed();
  }
  for (auto& cp : copies_) wait_signal(ctx_, cp.signal->handle, nullptr, "an async copy");
  reap_completed();
  // Every dispatch finished: print what they wrote into the printf buffer.
  if (printf_) printf_->drain();
}

}  // namespace lrrt::rt::hsa

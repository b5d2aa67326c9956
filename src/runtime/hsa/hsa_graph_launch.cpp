// The hsa lowering's replays (hsa_graph_exec.hpp): a launch takes the next
// replay set, waits for ring space, writes each lane's block and starts the
// copy-engine operations; waits retire replays (and print their printf
// records); after a failure, abandon completes what the replays in flight
// still wait for; a lane queue's failure is passed on to the launch queue;
// argument patches go to the master copy.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "hsa_event.hpp"
#include "hsa_graph_exec.hpp"
#include "keep_until_exit.hpp"
#include "wait.hpp"

namespace lrrt::rt::hsa::replay {

// The first packet of lane 0's block takes pending copies in its free
// dependency slots when it is a barrier-AND (the fork); the rest wait in
// barrier-AND packets before the block. Every set's first image has the same
// free slots.
uint32_t HsaGraphExec::join_packets(std::span<const SignalRef> pending) const {
  const std::vector<Image>& images = sets_.front().images[0];
  size_t free_slots = 0;
  if (!images.empty() && packet_type(images[0].header) == HSA_PACKET_TYPE_BARRIER_AND)
    for (const auto& dep : reinterpret_cast<const hsa_barrier_and_packet_t*>(images[0].bytes.data())->dep_signal)
      free_slots += dep.handle == 0;
  const size_t rest = pending.size() > free_slots ? pending.size() - free_slots : 0;
  return uint32_t((rest + kBarrierAndMaxDeps - 1) / kBarrierAndMaxDeps);
}

void HsaGraphExec::wait_for_ring_space(uint32_t joins) {
  for (uint32_t l = 0; l < lanes_.size(); ++l) {
    const Lane& lane = lanes_[l];
    if (!lane.queue) continue;
    const uint64_t n = lane.nodes.size() + (l == 0 ? joins : 0);
    if (n > lane.queue->size)
      LRRT_THROW(LR_ERROR_NOT_SUPPORTED, "the replay needs {} AQL packets on one queue, more than its ring of {}", n,
                 lane.queue->size);
    // This producer is the ring's only one (the launch queue's lock, or the
    // exec's): the space found stays free until write_block takes it.
    const uint64_t start = api_.hsa_queue_load_write_index_relaxed(lane.queue);
    wait_ring_space(api_, lane.queue, start + n - 1, *lane.error);
  }
  uint32_t failed = 0;
  if (failed_lane(&failed)) {
    // A replay in flight failed: reported as the exec's failure.
    wait_all();
    LRRT_THROW(LR_ERROR_KERNEL_FAULT, "the hsa queue of lane {} of the replay failed before the replay was written",
               failed);
  }
}

void HsaGraphExec::write_block(uint32_t l, ReplaySet& set, std::span<const SignalRef> pending) {
  Lane& lane = lanes_[l];
  const std::vector<Image>& images = set.images[l];
  hsa_queue_t* q = lane.queue;
  const uint64_t size = q->size;
  // Join packets for the launch queue's pending copies (join_packets).
  join_scratch_.clear();
  for (const auto& s : pending) join_scratch_.push_back(s->handle);
  size_t first_free = 0;
  Image first;
  const bool patch_first =
      !images.empty() && packet_type(images[0].header) == HSA_PACKET_TYPE_BARRIER_AND && !join_scratch_.empty();
  if (patch_first) {
    first = images[0];
    auto* b = reinterpret_cast<hsa_barrier_and_packet_t*>(first.bytes.data());
    for (auto& dep : b->dep_signal) {
      if (dep.handle || first_free >= join_scratch_.size()) continue;
      dep = join_scratch_[first_free++];
    }
  }
  const uint32_t joins = join_packets(pending);
  const uint64_t n = joins + images.size();
  // Reserve the block with one add (wait_for_ring_space made room).
  const uint64_t index = api_.hsa_queue_add_write_index_relaxed(q, n);
  auto* base = static_cast<std::byte*>(q->base_address);
  auto slot = [&](uint64_t i) { return base + ((index + i) & (size - 1)) * kAqlPacketBytes; };
  for (uint32_t j = 0; j < joins; ++j) {
    const size_t from = first_free + size_t(j) * kBarrierAndMaxDeps;
    const size_t count = std::min<size_t>(kBarrierAndMaxDeps, join_scratch_.size() - from);
    encode_barrier_and(reinterpret_cast<hsa_barrier_and_packet_t*>(slot(j)),
                       std::span(join_scratch_).subspan(from, count), hsa_signal_t{0});
  }
  for (size_t i = 0; i < images.size(); ++i) {
    const Image& img = i == 0 && patch_first ? first : images[i];
    std::memcpy(slot(joins + i) + 4, img.bytes.data() + 4, kAqlPacketBytes - 4);
  }
  // Headers last, in ring order; a join packet holds back the block (barrier
  // bit) until the copies it waits for finished.
  for (uint32_t j = 0; j < joins; ++j) publish_packet(slot(j), kBarrierAndHeader, 0);
  for (size_t i = 0; i < images.size(); ++i) publish_packet(slot(joins + i), images[i].header, images[i].setup);
  api_.hsa_signal_store_screlease(q->doorbell_signal, hsa_signal_value_t(index + n - 1));
  set.blocks[l] = {q, index, n, joins};
}

void HsaGraphExec::submit_engine_ops(ReplaySet& set) {
  set.on_engine.clear();
  for (size_t i = 0; i < ops_.size(); ++i) {
    const EngineOp& op = ops_[i];
    if (op.stage_in) std::memcpy(set.staging[i], op.stage_in, op.size);
    const hsa_signal_t completion = signal(set, op.completion);
    const auto& waits = set.waits[i];
    hsa_signal_value_t left = initial_[op.completion];
    for (const auto& c : op.chunks) {
      void* dst = op.stage_out ? set.staging[i] : c.dst;
      const void* src = op.stage_in ? set.staging[i] : c.src;
      hsa_status_t st = api_.hsa_amd_memory_async_copy(dst, op.dst_agent, src, op.src_agent, c.size,
                                                       uint32_t(waits.size()), waits.empty() ? nullptr : waits.data(),
                                                       completion);
      if (st != HSA_STATUS_SUCCESS) {
        if (left != initial_[op.completion]) set.on_engine.push_back({op.completion, left});
        LRRT_THROW_AT(LR_ERROR_RUNTIME, "{}: hsa_amd_memory_async_copy of {} bytes failed: {}", op.name, c.size,
                      hsa_error_text(api_, st));
      }
      --left;
    }
    set.on_engine.push_back({op.completion, left});
  }
}

// After a failure: completes every signal of the replays in flight so that
// nothing they submitted keeps waiting (the launch queue stays usable), and
// frees their sets.
void HsaGraphExec::abandon() {
  for (size_t i = 0; i < in_flight_; ++i) abandon(sets_[(next_ + sets_.size() - in_flight_ + i) % sets_.size()]);
  in_flight_ = 0;
}

void HsaGraphExec::abandon(ReplaySet& set) {
  std::vector<bool> engine_signal(set.signals.size(), false);
  for (const auto& e : set.on_engine) engine_signal[e.signal] = true;
  for (size_t i = 0; i < set.signals.size(); ++i)
    if (set.signals[i] && !engine_signal[i]) api_.hsa_signal_store_relaxed(set.signals[i]->handle, 0);
  if (set.done) api_.hsa_signal_store_relaxed(set.done->handle, 0);
  // The copy engine may still hold copies waiting for the signals just
  // released. They run now; wait for them (bounded) before the signals go
  // back to the device's pool, where a copy still waiting on one would wait
  // for the pool's next user instead (a hang seen on the stand-in).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (const auto& e : set.on_engine) {
    const hsa_signal_t h = set.signals[e.signal]->handle;
    while (api_.hsa_signal_load_relaxed(h) > e.done_at && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    api_.hsa_signal_store_relaxed(h, 0);
  }
  set.on_engine.clear();
  // Lane 0's terminal barrier-AND completes `done` once the waits just forced
  // let it run, maybe long after this. Back in the pool, the signal would be
  // handed to the next operation and that late decrement would complete it
  // early (a copy whose staging memory was freed while the copy engine still
  // read it, seen under ASan on the stand-in). Kept out of the pool instead:
  // abandoning is rare, and a failed exec never replays again.
  try {
    if (set.done) keep_until_exit(std::move(set.done));
  } catch (...) {
  }
  set.done.reset();
  set.keep.clear();
}

bool HsaGraphExec::finished(const ReplaySet& set) const {
  if (api_.hsa_signal_load_relaxed(set.done->handle) >= 1) return false;
  std::atomic_thread_fence(std::memory_order_acquire);
  return true;
}

void HsaGraphExec::retire(ReplaySet& set) {
  if (printf_) printf_->drain();  // every printing dispatch of the replay finished
  set.done.reset();
  set.keep.clear();
  set.on_engine.clear();
  --in_flight_;
}

void HsaGraphExec::launch(Queue& queue, Event* completion) {
  auto* launch_queue = dynamic_cast<HsaQueue*>(&queue);
  if (!launch_queue) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "an hsa graph replays on an hsa queue only");
  auto* event = dynamic_cast<HsaEvent*>(completion);
  if (completion && !event) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "an hsa graph cannot complete another backend's event");
  std::lock_guard lock(mutex_);
  if (!failure_.empty())
    LRRT_THROW(LR_ERROR_KERNEL_FAULT, "an earlier replay of the graph failed ({}); instantiate the graph again",
               failure_);
  // Replays that finished free their sets without a wait.
  while (in_flight_ && finished(oldest())) retire(oldest());
  // A set is reset for this replay: the replay that used it last must have
  // finished with its signals. Only when all K sets are in flight does the
  // launch wait, and only for the oldest.
  if (in_flight_ == sets_.size()) {
    counters.launch_waits.fetch_add(1, std::memory_order_relaxed);
    wait_oldest();
  }
  ReplaySet& set = sets_[next_];
  for (const auto& [table, name] : printing_) printf_->attach(table, name);
  for (size_t i = 0; i < set.signals.size(); ++i)
    if (set.signals[i]) api_.hsa_signal_store_relaxed(set.signals[i]->handle, initial_[i]);
  if (set.patch_generation != patch_generation_) {
    // Patches made since this set last ran; the replays in flight keep theirs.
    std::memcpy(set.kernargs, kernarg_master_.data(), kernarg_master_.size());
    set.patch_generation = patch_generation_;
  }
  bool submitting = false;  // from here a failure leaves part of the replay submitted
  try {
    // Everything under the launch queue's lock, taken first: another
    // thread's copy and launch on that queue cannot slip in between the
    // replay's copies and its lane-0 block, where the copy engine's FIFO
    // closed a circular wait (a root copy waiting for the fork behind the
    // other thread's launch, which waits for its copy behind the root copy).
    launch_queue->submit_block([&](hsa_queue_t* ring, const std::shared_ptr<QueueErrorState>& error,
                                   std::span<const SignalRef> pending) -> HsaQueue::Block {
      // The replays in flight ran on another queue (or one that was
      // recreated after an error): this one follows them from the host.
      if (in_flight_ && ring != last_ring_) {
        counters.launch_waits.fetch_add(1, std::memory_order_relaxed);
        wait_all();
      }
      Lane& lane = lanes_[0];
      lane.queue = ring;
      lane.error = error;
      lane_failures_.set_launch_queue(error);
      // Room on every ring first, joins included: a timeout or a failure
      // here leaves nothing behind. Were the copies or the blocks of lanes
      // 1.. submitted first, abandoning them (forcing their signals) would
      // run them beside earlier work, without their dependencies.
      wait_for_ring_space(join_packets(pending));
      // In flight from here: a failure below abandons this set too.
      submitting = true;
      ++in_flight_;
      next_ = (next_ + 1) % sets_.size();
      last_ring_ = ring;
      // Copies first: a root copy waits for the fork, which only runs once
      // lane 0's block is written, and the stand-in's worst-order mode sees
      // every copy of the replay queued before the first dispatch runs.
      submit_engine_ops(set);
      for (uint32_t l = 1; l < lanes_.size(); ++l)
        if (lanes_[l].queue) write_block(l, set, {});
      SignalRef done;
      if (event) {
        event->arm(HsaEvent::Kind::Marker, error, fmt::format("a replay of a graph of {} nodes", node_count_));
        done = event->signal_ref();
      } else {
        done = device_.acquire_signal();
      }
      reinterpret_cast<hsa_barrier_and_packet_t*>(set.images[0][terminal_].bytes.data())->completion_signal =
          done->handle;
      set.done = done;
      write_block(0, set, pending);
      set.keep.assign(pending.begin(), pending.end());
      return {done, set.blocks[0].start, set.blocks[0].joins, lane0_packets_};
    });
  } catch (const Error& e) {
    if (!failure_.empty()) throw;  // an earlier replay's failure, reported by the wait that saw it
    // Nothing of this replay was submitted (a timeout waiting for ring
    // space, the launch queue's own failure): the replays in flight go on,
    // and so may the exec.
    if (!submitting) throw;
    abandon();
    failure_ = e.what();
    LRRT_THROW(e.status(), "{} (the replay was only partly submitted)", e.what());
  }
  const uint32_t peak = counters.peak_in_flight.load(std::memory_order_relaxed);
  if (in_flight_ > peak) counters.peak_in_flight.store(uint32_t(in_flight_), std::memory_order_relaxed);
  // Pageable destinations: copied out of staging before launch returns.
  for (size_t i = 0; i < ops_.size(); ++i) {
    const EngineOp& op = ops_[i];
    if (!op.stage_out) continue;
    // A failed lane fails this wait too (reported as the replay's failure).
    ReplayWait copied(*this, set, signal(set, op.completion));
    if (wait(copied) != WaitStatus::Complete) {
      wait_all();
      LRRT_THROW(LR_ERROR_KERNEL_FAULT, "{}: the replay failed before its device-to-host copy to pageable memory",
                 op.name);
    }
    std::memcpy(op.stage_out, set.staging[i], op.size);
  }
}

void HsaGraphExec::lane_failed(uint32_t l, hsa_status_t status) {
  const Lane& lane = lanes_[l];
  lane.error->status.store(int(status));
  lane.error->failed.store(true, std::memory_order_release);
  // The packet the lane stopped at: its blocks all have the lane's packet
  // count (no joins on lanes 1..), from write index 0.
  std::string what = fmt::format("lane {}", l);
  const uint64_t read = api_.hsa_queue_load_read_index_scacquire(lane.queue);
  if (!lane.nodes.empty() && read < api_.hsa_queue_load_write_index_relaxed(lane.queue)) {
    const int64_t node = lane.nodes[read % lane.nodes.size()];
    if (node >= 0) what = fmt::format("{} on lane {}", names_[size_t(node)], l);
  }
  try {
    lane_failures_.failed(int(status), fmt::format("{} of a replay of a graph of {} nodes failed: {}", what,
                                                   node_count_, hsa_error_text(api_, status)));
  } catch (...) {
    // Out of memory for the message: the lane's own state says it failed.
  }
}

bool HsaGraphExec::failed_lane(uint32_t* which) const {
  // Lanes 1.. first: a lane's failure also fails lane 0 (the launch queue),
  // and the lane that failed first is the one to name.
  for (uint32_t i = 1; i <= lanes_.size(); ++i) {
    const uint32_t l = i % uint32_t(lanes_.size());
    const auto& e = lanes_[l].error;
    if (e && e->failed.load(std::memory_order_acquire)) {
      if (which) *which = l;
      return true;
    }
  }
  return false;
}

void HsaGraphExec::wait_oldest() {
  ReplaySet& set = oldest();
  ReplayWait target(*this, set);
  if (wait(target) == WaitStatus::Complete) {
    retire(set);
    return;
  }
  uint32_t lane = 0;
  failed_lane(&lane);
  const auto& error = lanes_[lane].error;
  if (const uint32_t hw = error->hw_exception.load()) {
    std::string what = fmt::format("{} did not complete: {}", pending_work(set), device_.device_lost_text(hw));
    abandon();
    failure_ = what;
    LRRT_THROW(LR_ERROR_DEVICE_LOST, "{}", what);
  }
  std::string what = fmt::format("{} failed on the hsa queue of lane {}: {}", pending_work(set), lane,
                                 hsa_error_text(api_, hsa_status_t(error->status.load())));
  if (error->memory_fault.load())
    what += fmt::format(" (a GPU memory fault at address {:#x}: {}; the device is unusable until the process "
                        "restarts)",
                        error->fault_address.load(), memory_fault_reason_text(error->fault_reason.load()));
  abandon();
  failure_ = what;
  if (printf_) printf_->drain();  // what the replay printed before it failed
  LRRT_THROW(LR_ERROR_KERNEL_FAULT, "{}", what);
}

void HsaGraphExec::wait_all() {
  // A failure is reported once, by the wait that saw it.
  while (in_flight_ && failure_.empty()) wait_oldest();
}

bool HsaGraphExec::running() {
  std::lock_guard lock(mutex_);
  if (!failure_.empty() || failed_lane(nullptr)) return false;
  for (size_t i = 0; i < in_flight_; ++i)
    if (!finished(sets_[(next_ + sets_.size() - in_flight_ + i) % sets_.size()])) return true;
  return false;
}

void HsaGraphExec::synchronize() {
  std::lock_guard lock(mutex_);
  if (!share_signals_for_test_) return wait_all();
  try {
    wait_all();
  } catch (...) {
    settle_for_test();
    throw;
  }
  settle_for_test();
}

// With one signal set shared by the replays in flight, their completion
// cannot be trusted: a shared signal completes early (the wait returns while
// later packets still run) or drops below 0 (a barrier-AND never starts). So
// before a wait returns or throws, the shared signals are forced to 0 until
// every lane's ring is consumed: no packet still reads the sets' argument
// copies when the exec frees them. Bounded, as the control may also hang.
void HsaGraphExec::settle_for_test() {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    bool idle = true;
    for (const Lane& lane : lanes_)
      if (lane.queue && api_.hsa_queue_load_read_index_scacquire(lane.queue) <
                            api_.hsa_queue_load_write_index_relaxed(lane.queue))
        idle = false;
    if (idle || std::chrono::steady_clock::now() > deadline) break;
    for (const auto& s : sets_.front().signals)
      if (s) api_.hsa_signal_store_screlease(s->handle, 0);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  abandon();
}

void HsaGraphExec::drain() { synchronize(); }

// The patch goes to the master copy; each set takes it at its next launch
// (launch), so a replay in flight keeps the arguments it was launched with.
void HsaGraphExec::set_kernargs(uint32_t node, size_t offset, std::span<const std::byte> bytes) {
  std::lock_guard lock(mutex_);
  const DispatchInfo& d = dispatch_of_[node];
  if (!d.valid || offset >= d.explicit_bytes) return;  // padding, never passed
  std::memcpy(kernarg_master_.data() + d.offset + offset, bytes.data(), std::min(bytes.size(), d.explicit_bytes - offset));
  ++patch_generation_;
}

}  // namespace lrrt::rt::hsa::replay

// AQL queues: the ring, its indices and doorbell, and the packet-processor
// thread that consumes it.
//
// AQL ordering. Each queue's processor takes packets in ring order. A
// dispatch with the barrier bit starts only after every earlier packet of its
// queue finished; one without it may start before earlier packets finish. A
// barrier-AND packet completes once its dependency signals are 0 and holds
// back every later packet of its queue until then. The copy engine (one
// thread) runs async copies in submission order, each after its dependency
// signals are 0.
//  - Default mode: dispatches run one at a time in ring order (a legal order,
//    and the one lrrt's ordinary launches rely on anyway: they set the
//    barrier bit).
//  - Worst-order mode (LRRT_TEST_WORST_ORDER=1 at hsa_init, or
//    lrrt_hsa_standin_set_worst_order): the open run of dispatches (a
//    dispatch and the following ones without barrier bit) is held back and
//    run later packets first, when it ends: at a packet with the barrier bit,
//    at a barrier-AND whose signals are not yet complete (the run finishes
//    before it waits; one that is complete lets the run go on), or when the
//    queue has no more packets. Before each dispatch runs and before a
//    barrier-AND looks at its signals, every copy that could run now runs
//    (copies as early as legal). Deterministic: the order
//    depends only on the packets and signals, not on timing, as long as a
//    replay's copies are submitted before its packets (lrrt's hsa lowering
//    does) and all its packets are on one queue (several queues' processors
//    run concurrently). A missing barrier bit or dependency signal then
//    shows as a wrong result: a consumer runs before its producer, or a copy
//    reads a buffer before the dispatch that writes it. Counter
//    "dispatches_reordered" counts dispatches that ran before an earlier one.
#include <cstdlib>
#include <vector>

#include "standin_internal.hpp"

namespace standin {

// Worst-order mode (LRRT_TEST_WORST_ORDER=1 at hsa_init, or
// lrrt_hsa_standin_set_worst_order): see the top of the file.
std::atomic<bool> worst_order{false};

namespace {

struct Deferred {
  hsa_kernel_dispatch_packet_t packet;
  uint16_t header;
};

// Runs a dispatch and completes its signal; false when the queue failed.
bool execute(SQueue* q, const hsa_kernel_dispatch_packet_t& p, uint16_t header) {
  uint64_t start = now_ns();
  auto* k = reinterpret_cast<SKernel*>(p.kernel_object);
  DispatchWindow window(p.kernarg_address, k ? std::min<size_t>(k->info.kernarg_size, LRRT_STANDIN_MAX_KERNARG) : 0);
  if (!run_dispatch(q, p, header)) return false;
  window.close(true);
  release_fence((header >> HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE) & 3, window.which);
  complete(p.completion_signal, start, k->info.name);
  return true;
}

void processor(SQueue* q) {
  auto* doorbell = sig(q->q.doorbell_signal);
  const uint64_t size = q->q.size;
  // Packets [read, next) were taken from the ring; in worst-order mode the
  // dispatches among them that have not run yet are `deferred` (started,
  // from AQL's point of view, but not finished). Their slots are released
  // once they ran.
  uint64_t next = q->read.load(std::memory_order_relaxed);
  std::vector<Deferred> deferred;
  auto release = [&] {
    for (uint64_t r = q->read.load(std::memory_order_relaxed); r < next; ++r) {
      auto* word = reinterpret_cast<uint32_t*>(static_cast<std::byte*>(q->ring) + (r & (size - 1)) * 64);
      std::atomic_ref<uint32_t>(*word).store(HSA_PACKET_TYPE_INVALID << HSA_PACKET_HEADER_TYPE,
                                             std::memory_order_release);
    }
    q->read.store(next, std::memory_order_release);
  };
  // Runs the deferred dispatches, the latest first; false when one failed.
  auto finish_deferred = [&] {
    if (deferred.size() > 1) count("dispatches_reordered", deferred.size() - 1);
    for (size_t i = deferred.size(); i-- > 0;) {
      // Copy-engine work that may run now runs first: as early as legal.
      while (!copy_engine_quiet()) std::this_thread::yield();
      if (!execute(q, deferred[i].packet, deferred[i].header)) {
        deferred.clear();
        return false;
      }
    }
    deferred.clear();
    return true;
  };
  while (!q->stop.load()) {
    if (q->dead.load()) {  // a failed queue consumes nothing more
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      continue;
    }
    // Doorbell holds the last index written; wait until it reaches next.
    // With dispatches deferred, nothing more to start now ends their run.
    int64_t db = deferred.empty() ? doorbell->wait(HSA_SIGNAL_CONDITION_GTE, int64_t(next), 20'000'000)
                                  : doorbell->value.load();
    if (db < int64_t(next)) {
      if (!deferred.empty()) {
        if (finish_deferred()) release();
      }
      continue;
    }
    auto* slot = static_cast<std::byte*>(q->ring) + (next & (size - 1)) * 64;
    auto* word = reinterpret_cast<uint32_t*>(slot);
    uint32_t hw = std::atomic_ref<uint32_t>(*word).load(std::memory_order_acquire);
    uint16_t header = uint16_t(hw & 0xffff);
    uint16_t type = (header >> HSA_PACKET_HEADER_TYPE) & 0xff;
    if (type == HSA_PACKET_TYPE_INVALID) {
      std::this_thread::yield();  // doorbell rung before the header landed: a producer bug, or a race
      continue;
    }
    const bool barrier = (header >> HSA_PACKET_HEADER_BARRIER) & 1;
    if (barrier) count("packets_barrier_bit");
    if (type == HSA_PACKET_TYPE_KERNEL_DISPATCH) {
      hsa_kernel_dispatch_packet_t p;
      std::memcpy(&p, slot, sizeof p);
      count("packets_dispatch");
      // The barrier bit: every earlier packet of the queue finished first.
      if (barrier && !finish_deferred()) continue;  // dead: stop consuming
      if (worst_order.load(std::memory_order_relaxed)) {
        deferred.push_back({p, header});
        ++next;
        continue;
      }
      if (!execute(q, p, header)) continue;
    } else if (type == HSA_PACKET_TYPE_BARRIER_AND) {
      hsa_barrier_and_packet_t p;
      std::memcpy(&p, slot, sizeof p);
      count("packets_barrier_and");
      // With the barrier bit, earlier packets finish first. Without it, held
      // back dispatches stay held back if the signals are already complete
      // (every copy that can run has run); else they run before it waits
      // (one of them may be what it waits for).
      if (barrier && !finish_deferred()) continue;
      if (!deferred.empty()) {
        while (!copy_engine_quiet()) std::this_thread::yield();
        bool ready = true;
        for (auto d : p.dep_signal) ready &= !d.handle || sig(d)->value.load() == 0;
        if (!ready && !finish_deferred()) continue;
      }
      uint64_t start = now_ns();
      for (auto d : p.dep_signal)
        while (d.handle && !q->stop.load() &&
               sig(d)->wait(HSA_SIGNAL_CONDITION_EQ, 0, 20'000'000) != 0) {
        }
      if (q->stop.load()) break;
      release_fence((header >> HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE) & 3, SIZE_MAX);
      complete(p.completion_signal, start);
    } else {
      count("packets_other");
      queue_fail(q, HSA_STATUS_ERROR_INVALID_PACKET_FORMAT);
      continue;
    }
    // Release the slot(s): header back to INVALID, then advance the read index.
    ++next;
    release();
  }
}

SQueue* squeue(hsa_queue_t* q) { return reinterpret_cast<SQueue*>(q); }

}  // namespace

}  // namespace standin

using namespace standin;

EXPORT hsa_status_t hsa_queue_create(hsa_agent_t agent, uint32_t size, hsa_queue_type32_t type,
                                    void (*cb)(hsa_status_t, hsa_queue_t*, void*), void* data,
                                    uint32_t, uint32_t, hsa_queue_t** out) {
  if (agent.handle != kGpuAgent) return HSA_STATUS_ERROR_INVALID_AGENT;
  if (size == 0 || (size & (size - 1)) || size > state().queue_max_size) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  auto* q = new SQueue;
  q->ring = std::aligned_alloc(64, size_t(size) * 64);
  for (uint32_t i = 0; i < size; ++i) {
    auto* p = static_cast<std::byte*>(q->ring) + size_t(i) * 64;
    std::memset(p, 0, 64);
    put<uint16_t>(p, uint16_t(HSA_PACKET_TYPE_INVALID << HSA_PACKET_HEADER_TYPE));
  }
  static std::atomic<uint64_t> next_id{1};
  q->q.type = type;
  q->q.features = HSA_QUEUE_FEATURE_KERNEL_DISPATCH;
  q->q.base_address = q->ring;
  hsa_signal_create(-1, 0, nullptr, &q->q.doorbell_signal);
  sig(q->q.doorbell_signal)->doorbell = true;
  q->q.size = size;
  q->q.id = next_id++;
  q->callback = cb;
  q->data = data;
  // Through a lambda, not std::thread(processor, q): std::thread's state over
  // a function pointer naming standin::SQueue (external linkage since the
  // split) would be a weak symbol libstdc++'s default visibility exports.
  q->thread = std::thread([q] { processor(q); });
  {
    std::lock_guard l(state().mutex);
    state().queues.push_back(q);
  }
  count("queues_created");
  *out = &q->q;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_queue_destroy(hsa_queue_t* queue) {
  SQueue* q = squeue(queue);
  {
    std::lock_guard l(state().mutex);
    std::erase(state().queues, q);
  }
  q->stop.store(true);
  sig(q->q.doorbell_signal)->store(INT64_MAX);
  q->thread.join();
  hsa_signal_destroy(q->q.doorbell_signal);
  std::free(q->ring);
  delete q;
  return HSA_STATUS_SUCCESS;
}

EXPORT uint64_t hsa_queue_load_read_index_scacquire(const hsa_queue_t* q) {
  return squeue(const_cast<hsa_queue_t*>(q))->read.load(std::memory_order_acquire);
}
EXPORT uint64_t hsa_queue_load_write_index_relaxed(const hsa_queue_t* q) {
  return squeue(const_cast<hsa_queue_t*>(q))->write.load(std::memory_order_relaxed);
}
EXPORT uint64_t hsa_queue_add_write_index_relaxed(const hsa_queue_t* q, uint64_t v) {
  write_index_adds.fetch_add(1, std::memory_order_relaxed);
  return squeue(const_cast<hsa_queue_t*>(q))->write.fetch_add(v, std::memory_order_relaxed);
}

// ================================================================ test hooks
EXPORT void lrrt_hsa_standin_set_worst_order(int on) { worst_order.store(on != 0); }

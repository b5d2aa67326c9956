// The lowering hook: what a backend's instantiated graph (GraphExec)
// provides, what it is given (Lowering), and the generic replay every
// backend has until it lowers graphs itself (Device::instantiate_graph).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "backend.hpp"
#include "graph/graph.hpp"
#include "graph/plan.hpp"

namespace lrrt::rt::graph {

// What a lowering receives: the validated recording, its derived edges and
// lanes. The lowering copies what it keeps; the recording may change or be
// destroyed after instantiation.
struct Lowering {
  const Graph& graph;
  const Derived& derived;
  const Lanes& lanes;
  // Replays of the exec that may be in flight at once (lr_graph_exec_set_
  // max_in_flight; LR_GRAPH_DEFAULT_MAX_IN_FLIGHT or LRRT_GRAPH_MAX_IN_FLIGHT).
  // Only lowerings that bound it themselves read it (hsa).
  uint32_t max_in_flight = 1;
};

// What lr_graph_exec_get_stats reports beside the core's replay count; read
// without the exec's lock, so a test can watch a launch that waits.
struct ReplayCounters {
  std::atomic<uint64_t> launch_waits{0};    // launches that waited on the host for an earlier replay
  std::atomic<uint32_t> peak_in_flight{0};  // most replays in flight at once, where the lowering tracks it
};

class GraphExec {
 public:
  // Implementations wait for their running replays before releasing
  // anything those replays use.
  virtual ~GraphExec() = default;
  // Enqueues one replay. `queue` is lane 0: the replay follows work submitted
  // to it before, and work submitted after follows the replay. Replays of
  // one exec run one after another, also across queues. `completion` (may
  // be null) completes when every step of this replay finished.
  virtual void launch(Queue& queue, Event* completion) = 0;
  // True while a launched replay has not finished.
  virtual bool running() = 0;
  // Waits for the last launched replay; throws its first execution error.
  virtual void synchronize() = 0;
  // Waits for the work on queues the exec owns (lr_synchronize, lr_free
  // drain the device); cheap when they are idle.
  virtual void drain() = 0;
  // Overwrites explicit argument bytes of a kernel node for later replays.
  // The core has checked the node, the range, the pointers, and that no
  // replay is running.
  virtual void set_kernargs(uint32_t node, size_t offset, std::span<const std::byte> bytes) = 0;
  // True when set_kernargs never touches a replay in flight (it stages the
  // patch for the next launch): the core then neither refuses nor waits.
  virtual bool patches_never_wait() const { return false; }
  // The bound on replays in flight the lowering keeps, 0 when it keeps none
  // (the driver or the queue orders the replays; nothing is reused early).
  virtual uint32_t max_in_flight() const { return 0; }
  // Changes that bound for later launches (may wait for the replays in flight).
  virtual void set_max_in_flight(uint32_t) {}
  // Names the lowering and adds the synchronisation it placed to the plan.
  virtual void describe(Plan& plan) const = 0;

  ReplayCounters counters;
};

// The generic replay: the nodes go, in topological order, through the
// device's own Queue interface (launch, copy), one Queue per lane; an edge
// between lanes becomes an event the consumer's operation waits for. Fills
// are copies from a pinned block holding the pattern (at most 1 MiB,
// repeated). It works on every backend and is what Device::instantiate_graph
// returns unless a backend overrides it.
std::unique_ptr<GraphExec> make_generic_exec(Device& device, const Lowering& lowering);

}  // namespace lrrt::rt::graph

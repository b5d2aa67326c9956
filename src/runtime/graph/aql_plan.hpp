// The AQL fence planner: which packets a replay of a derived graph writes to
// HSA queues, with which header bits, and which signals tie them together.
// Pure and backend-independent (no HSA headers): the hsa lowering turns each
// packet into its 64-byte image with hsa/aql.hpp's packet_header(), and the
// unit tests pin the choices without a device.
//
// The rules (docs/architecture.md, "Retained replay"):
//  - Kernel nodes become dispatch packets on their lane's queue, in the
//    graph's topological order. Copy and fill nodes run on the copy engine
//    (hsa_amd_memory_async_copy), ordered only by signals.
//  - Barrier bit: only when a same-lane dependency lies in the open run of
//    packets since the lane's last barrier packet (the barrier packet
//    included: it may still be running). An earlier dependency already
//    finished before that barrier packet started.
//  - Dependencies on another lane or on the copy engine: barrier-AND packets
//    before the dispatch, at most max_barrier_deps signals each; a signal
//    one of them already waited for on this lane is not waited for again
//    (a barrier-AND holds back every later packet of its queue).
//  - Fences, from every data hazard (also those the transitive reduction
//    removed; docs/backends/hsa.md "Memory model"):
//     - kernel -> kernel RAW: agent-scope release on the writer, agent-scope
//       acquire on the reader;
//     - kernel -> kernel WAW: agent-scope release on the first writer (an
//       agent may have several L2s, one per XCD on gfx942: without it, its
//       dirty lines may be written back after the second writer's);
//     - kernel -> kernel WAR: ordering only (the reader finished; it left no
//       dirty lines of that range);
//     - kernel -> copy engine, any hazard (RAW, WAR, WAW): system-scope
//       release on the kernel. The copy engine (SDMA) reads and writes
//       memory, not the agent's L2: a dirty line written back after the
//       copy would land on top of it. HIP releases at system scope before
//       every DMA;
//     - copy engine -> kernel RAW and WAW: system-scope acquire on the
//       kernel (no line of the range the L2 held before the copy is read,
//       or written back in part over it); WAR: ordering only.
//  - The first dispatch of each lane acquires at system scope (host writes
//    made before the replay), as clr does: never a barrier-AND, whose
//    acquire fence happens when it starts, before its wait completes (what
//    it waits for may write memory after that). The first packet of lane 0
//    has the barrier bit: the replay follows earlier work on the queue.
//  - With more than one lane, or copy-engine steps without predecessors,
//    lane 0 starts with a fork barrier-AND whose signal the other lanes'
//    first packets and those copies wait for.
//  - The replay ends with a barrier-AND on each other lane (barrier bit,
//    system release, lane-done signal) and a terminal barrier-AND on lane 0
//    (barrier bit, system-scope release, the replay's completion signal)
//    that waits for the lane-done signals and the copy-engine steps nothing
//    else waits for. The completion signal of the last dispatch would not
//    do: without its barrier bit, earlier packets may still be running.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.hpp"

namespace lrrt::rt::graph {

// The same values as hsa_fence_scope_t.
enum class FenceScope : uint8_t { None = 0, Agent = 1, System = 2 };
const char* fence_scope_name(FenceScope scope);  // "none", "agent", "system"

struct AqlSignal {
  enum class Kind : uint8_t { NodeDone, Fork, LaneDone, ReplayDone };
  Kind kind;
  uint32_t index = 0;  // the node (NodeDone) or lane (LaneDone)
};

struct AqlPacket {
  enum class Type : uint8_t { Dispatch, BarrierAnd };
  Type type = Type::Dispatch;
  int64_t node = -1;  // the kernel node of a dispatch
  bool barrier = false;
  FenceScope acquire = FenceScope::None;
  FenceScope release = FenceScope::None;
  std::vector<uint32_t> wait;  // signal indices a barrier-AND waits for (<= max_barrier_deps)
  int64_t completion = -1;     // signal index, -1 for none
  std::string why;             // the reasons, for `lrrt plan`
};

// A copy or fill on the copy engine.
struct AqlEngineOp {
  uint32_t node = 0;
  std::vector<uint32_t> wait;  // signal indices
  uint32_t completion = 0;     // signal index
  std::string why;
};

struct AqlPlan {
  std::vector<std::vector<AqlPacket>> lanes;  // packets per lane, in queue order
  std::vector<AqlEngineOp> engine_ops;        // in topological order
  std::vector<AqlSignal> signals;             // each reset to 1 before a replay
  uint32_t replay_done = 0;                   // signal index
  size_t packet_count() const;
};

struct AqlPlanOptions {
  uint32_t max_barrier_deps = 5;  // hsa/aql.hpp kBarrierAndMaxDeps
};

// lanes.of gives each node's lane (copy and fill nodes' lanes are ignored).
AqlPlan plan_aql(const Graph& graph, const Derived& derived, const Lanes& lanes,
                 const AqlPlanOptions& options = {});

std::string aql_signal_name(const AqlPlan& plan, uint32_t signal);  // "node 3 done", "fork", ...

}  // namespace lrrt::rt::graph

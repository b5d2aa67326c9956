// What `lrrt plan` (and lr_graph_exec_get_plan) shows: the derived graph
// (nodes, edges with hazard kinds), the lane of every node and each
// synchronisation the lowering placed, with the reason; JSON for tools.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/aql_plan.hpp"
#include "graph/graph.hpp"

namespace lrrt::rt::graph {

struct PlanAccess {
  Range range;
  AccessMode mode;
  bool device_side;
  formats::AccessSource source = formats::AccessSource::Declared;
};

struct PlanNode {
  uint32_t id = 0;
  NodeKind kind = NodeKind::Kernel;
  std::string label;
  uint32_t lane = 0;
  uint32_t position = 0;  // in the submission (topological) order
  std::vector<PlanAccess> accesses;
};

// One synchronisation a lowering placed: an event wait, a fork or join, a
// fence, a packet bit.
struct PlanSync {
  std::string kind;   // "wait", "fork", "join", "completion", ...
  int64_t node = -1;  // the node it belongs to, -1 for the replay
  std::string detail;
};

struct Plan {
  std::vector<PlanNode> nodes;
  std::vector<Edge> edges;
  uint32_t edges_derived = 0;  // before the transitive reduction
  bool reduced = true;
  std::optional<Edge> dropped_for_test;
  uint32_t lane_count = 1;
  uint32_t width = 0;
  uint32_t max_lanes = 0;
  std::string lowering;  // "generic", "hsa-aql", "cuda-graph", "host task DAG on 4 threads"
  // The lowering runs ready work in the worst legal order (test mode,
  // LRRT_TEST_WORST_ORDER); shown in the JSON only when true.
  bool test_worst_order = false;
  std::vector<PlanSync> sync;
  std::optional<AqlPlan> aql;  // the hsa lowering's packets
  // Replays that may be in flight at once, as the lowering bounds them; 0:
  // not bounded by lrrt (the driver or the launch queue orders them).
  uint32_t max_in_flight = 0;
  // Per edge (parallel to `edges`): the lowering made it a programmatic
  // dependency (cuda: both kernels wait for their producer; "waits_for_producer").
  std::vector<uint8_t> programmatic;
};

// The lowering-independent part; the lowering adds `lowering`, `sync` and
// its own details (GraphExec::describe).
Plan make_plan(const Graph& graph, const Derived& derived, const Lanes& lanes, uint32_t max_lanes);

std::string plan_to_json(const Plan& plan);
std::string aql_plan_to_json(const AqlPlan& plan);

}  // namespace lrrt::rt::graph

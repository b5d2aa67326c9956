// The hsa lowering of retained replay: the packets plan_aql (graph/aql_plan.hpp)
// places, encoded once at instantiation into 64-byte AQL images with their own
// kernarg buffers, written to the rings as one block per queue at each replay;
// copies and fills on the copy engine, ordered by the plan's signals.
// docs/backends/hsa.md, "Retained replay", describes it.
#pragma once

#include <memory>

#include "graph/exec.hpp"

namespace lrrt::rt::hsa {

class HsaDevice;

std::unique_ptr<graph::GraphExec> make_hsa_graph_exec(HsaDevice& device, const graph::Lowering& lowering);

}  // namespace lrrt::rt::hsa

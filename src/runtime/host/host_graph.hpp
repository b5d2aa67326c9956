// The host lowering of retained replay: the graph's derived edges (after
// reduction) as a task DAG on the device's thread pool. Each node counts its
// unfinished predecessors; a finished node releases its successors. A
// replay is one operation of the queue it is launched on, so it follows the
// queue's earlier work and later work follows it.
//
// LRRT_TEST_WORST_ORDER=1 (read at instantiation, test only): the DAG runs
// on one thread and always takes, among the ready nodes, the one latest in
// recording order: deterministic, and the worst legal order for a missing
// edge (the consumer of a dropped edge runs before its producer whenever it
// can). The plan says "test_worst_order": true.
#pragma once

#include <memory>

#include "graph/exec.hpp"

namespace lrrt::rt::host {

class HostDevice;

std::unique_ptr<graph::GraphExec> make_host_graph_exec(HostDevice& device, const graph::Lowering& lowering);

}  // namespace lrrt::rt::host

// The hsa lowering's diagnostics (hsa_graph_exec.hpp): pending_work, the
// text a timed-out or failed replay wait gives (the first packet of each queue
// not consumed, the first copy not completed), and describe, the exec's plan
// as lr_graph_exec_get_plan shows it (packets, headers, signals, copies).
#include <string>

#include <fmt/format.h>

#include "hsa_graph_exec.hpp"

namespace lrrt::rt::hsa::replay {

// The first packet of each queue the packet processor has not consumed, and
// the first copy not completed: what a hung or failed replay is stuck on.
std::string HsaGraphExec::pending_work(const ReplaySet& set) const {
  std::string out = fmt::format("a replay of a graph of {} nodes ({} AQL packets, {} copy-engine operations)",
                                node_count_, plan_.packet_count(), ops_.size());
  if (sets_.size() > 1) out += fmt::format(" ({} of at most {} replays in flight)", in_flight_, sets_.size());
  std::string where;
  for (uint32_t l = 0; l < lanes_.size(); ++l) {
    const ReplaySet::Block& block = set.blocks[l];
    if (!block.queue || !block.size) continue;
    const uint64_t read = api_.hsa_queue_load_read_index_scacquire(block.queue);
    if (read < block.start) {
      where += fmt::format("; lane {} has not reached the replay (an earlier replay or earlier work runs)", l);
      continue;
    }
    if (read >= block.start + block.size) continue;
    const uint64_t i = read - block.start;
    if (i < block.joins) {
      where += fmt::format("; lane {} waits for copies submitted to the queue before the replay", l);
      continue;
    }
    const size_t p = size_t(i - block.joins);
    const int64_t node = lanes_[l].nodes[p];
    if (node >= 0) {
      where += fmt::format("; lane {}: {} (packet {} of {})", l, names_[size_t(node)], p, lanes_[l].nodes.size());
    } else {
      std::string waits;
      for (uint32_t s : plan_.lanes[l][p].wait) waits += (waits.empty() ? "" : ", ") + graph::aql_signal_name(plan_, s);
      where += fmt::format("; lane {}: barrier-AND packet {} of {}{}", l, p, lanes_[l].nodes.size(),
                           waits.empty() ? std::string() : " waiting for " + waits);
    }
  }
  for (const EngineOp& op : ops_)
    if (api_.hsa_signal_load_relaxed(signal(set, op.completion)) > 0) {
      where += fmt::format("; copy engine: {}", op.name);
      break;
    }
  return out + where;
}

void HsaGraphExec::describe(graph::Plan& plan) const {
  plan.lowering = "hsa-aql";
  plan.aql = plan_;
  uint32_t queues = 0;
  for (const auto& lane : plan_.lanes) queues += !lane.empty();
  plan.sync.push_back({"lowering", -1,
                       fmt::format("hsa AQL packet block: {} packets on {} queue(s), each queue's block reserved with "
                                   "one write-index add and started with one doorbell; {} copy-engine operation(s) "
                                   "ordered by {} signals",
                                   plan_.packet_count(), queues, plan_.engine_ops.size(), plan_.signals.size())});
  plan.sync.push_back(
      {"in_flight", -1,
       printf_ ? std::string("one replay in flight: the graph's printing kernels share one printf buffer, printed "
                             "after each replay")
               : fmt::format("replays in flight: {} sets of signals, packet images and kernarg segments rotate, so "
                             "a launch waits only when all are in use, and then for the oldest replay; a patch "
                             "goes to the next replay launched{}",
                             sets_.size(),
                             share_signals_for_test_ ? " (test: LRRT_TEST_SHARE_REPLAY_SIGNALS, the sets share one "
                                                       "set of signals, which is wrong)"
                                                     : "")});
  const ReplaySet& set = sets_.front();
  for (size_t l = 0; l < plan_.lanes.size(); ++l)
    for (size_t i = 0; i < plan_.lanes[l].size(); ++i) {
      const AqlPacket& p = plan_.lanes[l][i];
      const bool dispatch = p.type == AqlPacket::Type::Dispatch;
      std::string waits;
      for (uint32_t s : p.wait) waits += (waits.empty() ? "" : ", ") + graph::aql_signal_name(plan_, s);
      plan.sync.push_back(
          {dispatch ? "dispatch" : "barrier_and", p.node,
           fmt::format("lane {} packet {}: header {:#06x} (barrier {}, acquire {}, release {}){}{}: {}", l, i,
                       set.images[l][i].header, p.barrier ? 1 : 0, graph::fence_scope_name(p.acquire),
                       graph::fence_scope_name(p.release), waits.empty() ? "" : ", waits for " + waits,
                       p.completion >= 0 ? ", completes " + graph::aql_signal_name(plan_, uint32_t(p.completion)) : "",
                       p.why)});
    }
  for (const auto& op : plan_.engine_ops) {
    std::string waits;
    for (uint32_t s : op.wait) waits += (waits.empty() ? "" : ", ") + graph::aql_signal_name(plan_, s);
    plan.sync.push_back({"copy_engine", int64_t(op.node),
                         fmt::format("hsa_amd_memory_async_copy waiting for {}: {}", waits, op.why)});
  }
}

}  // namespace lrrt::rt::hsa::replay

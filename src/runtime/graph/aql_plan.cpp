#include "graph/aql_plan.hpp"

#include <algorithm>
#include <unordered_set>

#include <fmt/format.h>

namespace lrrt::rt::graph {
namespace {

FenceScope widest(FenceScope a, FenceScope b) { return uint8_t(a) > uint8_t(b) ? a : b; }

void append(std::string& text, const std::string& more) {
  if (more.empty()) return;
  if (!text.empty()) text += "; ";
  text += more;
}

std::string node_list(const std::vector<uint32_t>& ids) {
  std::string out;
  for (uint32_t id : ids) out += (out.empty() ? "" : ", ") + std::to_string(id);
  return out;
}

}  // namespace

const char* fence_scope_name(FenceScope scope) {
  switch (scope) {
    case FenceScope::None: return "none";
    case FenceScope::Agent: return "agent";
    case FenceScope::System: return "system";
  }
  return "?";
}

size_t AqlPlan::packet_count() const {
  size_t n = 0;
  for (const auto& l : lanes) n += l.size();
  return n;
}

std::string aql_signal_name(const AqlPlan& plan, uint32_t signal) {
  if (signal >= plan.signals.size()) return fmt::format("signal {}", signal);
  const AqlSignal& s = plan.signals[signal];
  switch (s.kind) {
    case AqlSignal::Kind::NodeDone: return fmt::format("node {} done", s.index);
    case AqlSignal::Kind::Fork: return "replay start";
    case AqlSignal::Kind::LaneDone: return fmt::format("lane {} done", s.index);
    case AqlSignal::Kind::ReplayDone: return "replay done";
  }
  return "?";
}

AqlPlan plan_aql(const Graph& graph, const Derived& d, const Lanes& lanes, const AqlPlanOptions& options) {
  const auto& nodes = graph.nodes();
  const uint32_t n = d.node_count;
  const uint32_t max_deps = std::max<uint32_t>(1, options.max_barrier_deps);
  auto engine = [&](uint32_t v) { return nodes[v].kind() != NodeKind::Kernel; };
  auto lane_of = [&](uint32_t v) { return v < lanes.of.size() ? lanes.of[v] : 0u; };

  AqlPlan plan;
  const uint32_t lane_count = std::max<uint32_t>(1, lanes.count);
  plan.lanes.resize(lane_count);

  // Cache fences from every data hazard, also those the reduction removed
  // (the rules in aql_plan.hpp).
  std::vector<FenceScope> acquire(n, FenceScope::None), release(n, FenceScope::None);
  std::vector<std::vector<uint32_t>> reads_from(n), read_by(n), written_over_by(n), engine_after(n),
      overwrites_engine(n);
  auto add_once = [](std::vector<uint32_t>& list, uint32_t v) {
    if (std::find(list.begin(), list.end(), v) == list.end()) list.push_back(v);
  };
  for (const Edge& e : d.conflicts) {
    const uint32_t u = e.from, v = e.to;
    const bool raw = e.hazards & kHazardRaw, waw = e.hazards & kHazardWaw;
    if (!engine(u)) {
      if (engine(v)) {
        // The copy engine reads and writes memory, not the agent's L2: what
        // the kernel left dirty there must be written back first, or it
        // lands on top of the copy later (and a read would see old data).
        release[u] = FenceScope::System;
        add_once(engine_after[u], v);
      } else if (raw || waw) {
        // Another L2 of the agent (gfx942: one per XCD) may run the later
        // kernel: agent scope writes this kernel's lines back.
        release[u] = widest(release[u], FenceScope::Agent);
        add_once(raw ? read_by[u] : written_over_by[u], v);
      }
    }
    if (!engine(v) && raw) {
      acquire[v] = widest(acquire[v], engine(u) ? FenceScope::System : FenceScope::Agent);
      add_once(reads_from[v], u);
    } else if (!engine(v) && engine(u) && waw) {
      // A partial write of a line the L2 holds from before the copy must not
      // write the line's stale bytes back over the copy's: invalidate first.
      acquire[v] = FenceScope::System;
      add_once(overwrites_engine[v], u);
    }
  }

  // Signals: copy-engine steps always complete one; a dispatch only when a
  // node on another lane or the copy engine waits for it.
  auto new_signal = [&](AqlSignal::Kind kind, uint32_t index) {
    plan.signals.push_back({kind, index});
    return uint32_t(plan.signals.size() - 1);
  };
  std::vector<int64_t> node_signal(n, -1);
  for (uint32_t v = 0; v < n; ++v) {
    bool needs = engine(v);
    for (uint32_t w : d.succs[v]) needs |= engine(w) || lane_of(w) != lane_of(v);
    if (needs) node_signal[v] = new_signal(AqlSignal::Kind::NodeDone, v);
  }

  std::vector<bool> lane_used(lane_count, false);
  bool root_engine_op = false;
  for (uint32_t v = 0; v < n; ++v) {
    if (engine(v))
      root_engine_op |= d.preds[v].empty();
    else
      lane_used[lane_of(v)] = true;
  }
  bool other_lanes = false;
  for (uint32_t l = 1; l < lane_count; ++l) other_lanes |= lane_used[l];
  const bool fork = other_lanes || root_engine_op;
  const int64_t fork_signal = fork ? int64_t(new_signal(AqlSignal::Kind::Fork, 0)) : -1;

  std::vector<size_t> run_start(lane_count, 0);  // index of the lane's last barrier packet
  std::vector<std::unordered_set<uint32_t>> satisfied(lane_count);
  std::vector<size_t> packet_of(n, 0);

  std::vector<bool> dispatched(lane_count, false);  // the lane has a dispatch packet
  auto push = [&](uint32_t lane, AqlPacket p) {
    auto& queue = plan.lanes[lane];
    if (queue.empty() && lane == 0 && !p.barrier) {
      p.barrier = true;
      append(p.why, "first packet of the lane: barrier: the replay follows earlier work on the queue");
    }
    if (p.type == AqlPacket::Type::Dispatch && !dispatched[lane]) {
      dispatched[lane] = true;
      p.acquire = FenceScope::System;
      append(p.why, "first dispatch of the lane: acquire at system scope (host writes before the replay; not on a "
                    "barrier-AND before it, whose acquire happens before its wait completes)");
    }
    if (p.barrier) run_start[lane] = queue.size();
    for (uint32_t s : p.wait) satisfied[lane].insert(s);
    queue.push_back(std::move(p));
    return queue.size() - 1;
  };
  auto push_barriers = [&](uint32_t lane, const std::vector<uint32_t>& signals, const std::string& why) {
    for (size_t i = 0; i < signals.size(); i += max_deps) {
      AqlPacket b;
      b.type = AqlPacket::Type::BarrierAnd;
      b.wait.assign(signals.begin() + i, signals.begin() + std::min<size_t>(signals.size(), i + max_deps));
      b.why = why;
      push(lane, std::move(b));
    }
  };

  if (fork) {
    AqlPacket b;
    b.type = AqlPacket::Type::BarrierAnd;
    b.barrier = true;
    b.completion = fork_signal;
    b.why = "replay start: the other lanes and the copy engine wait for it";
    push(0, std::move(b));
    for (uint32_t l = 1; l < lane_count; ++l) {
      if (!lane_used[l]) continue;
      AqlPacket s;
      s.type = AqlPacket::Type::BarrierAnd;
      s.barrier = true;
      s.wait = {uint32_t(fork_signal)};
      s.why = "lane start: waits for the replay start on lane 0";
      push(l, std::move(s));
    }
  }

  for (uint32_t v : d.order) {
    std::vector<uint32_t> preds = d.preds[v];
    std::sort(preds.begin(), preds.end(), [&](uint32_t a, uint32_t b) { return d.position[a] < d.position[b]; });
    if (engine(v)) {
      AqlEngineOp op;
      op.node = v;
      op.completion = uint32_t(node_signal[v]);
      for (uint32_t p : preds) op.wait.push_back(uint32_t(node_signal[p]));
      if (preds.empty()) {
        op.wait.push_back(uint32_t(fork_signal));
        op.why = "copy engine: waits for the replay start";
      } else {
        op.why = fmt::format("copy engine: waits for nodes {}", node_list(preds));
      }
      plan.engine_ops.push_back(std::move(op));
      continue;
    }
    const uint32_t lane = lane_of(v);
    AqlPacket p;
    p.type = AqlPacket::Type::Dispatch;
    p.node = v;
    std::vector<uint32_t> cross, cross_nodes, in_run;
    for (uint32_t u : preds) {
      if (engine(u) || lane_of(u) != lane) {
        uint32_t s = uint32_t(node_signal[u]);
        if (!satisfied[lane].count(s) && std::find(cross.begin(), cross.end(), s) == cross.end()) {
          cross.push_back(s);
          cross_nodes.push_back(u);
        }
      } else if (packet_of[u] >= run_start[lane] && !plan.lanes[lane].empty()) {
        p.barrier = true;
        in_run.push_back(u);
      }
    }
    if (!cross.empty())
      push_barriers(lane, cross,
                    fmt::format("node {} waits for nodes {} on another lane or the copy engine", v, node_list(cross_nodes)));
    if (p.barrier)
      append(p.why, fmt::format("barrier: depends on nodes {} in this lane's open run", node_list(in_run)));
    p.acquire = acquire[v];
    p.release = release[v];
    if (!reads_from[v].empty())
      append(p.why, fmt::format("acquire {}: reads what nodes {} wrote (RAW)", fence_scope_name(acquire[v]),
                                node_list(reads_from[v])));
    if (!overwrites_engine[v].empty())
      append(p.why, fmt::format("acquire system: writes over what copy-engine nodes {} wrote (WAW: no stale line "
                                "of it stays in the L2)",
                                node_list(overwrites_engine[v])));
    if (release[v] != FenceScope::None) {
      std::string because;
      if (!read_by[v].empty()) append(because, fmt::format("nodes {} read what it writes (RAW)", node_list(read_by[v])));
      if (!written_over_by[v].empty())
        append(because, fmt::format("nodes {} write over what it writes (WAW)", node_list(written_over_by[v])));
      if (!engine_after[v].empty())
        append(because, fmt::format("copy-engine nodes {} touch its data (the engine bypasses the agent's L2)",
                                    node_list(engine_after[v])));
      append(p.why, fmt::format("release {}: {}", fence_scope_name(release[v]), because));
    }
    p.completion = node_signal[v];
    packet_of[v] = push(lane, std::move(p));
  }

  // Ends of lanes and the terminal packet.
  std::vector<uint32_t> terminal_waits;
  for (uint32_t l = 1; l < lane_count; ++l) {
    if (!lane_used[l]) continue;
    AqlPacket e;
    e.type = AqlPacket::Type::BarrierAnd;
    e.barrier = true;
    e.release = FenceScope::System;
    e.completion = new_signal(AqlSignal::Kind::LaneDone, l);
    e.why = "lane end: every packet of the lane finished; release at system scope";
    terminal_waits.push_back(uint32_t(e.completion));
    push(l, std::move(e));
  }
  for (uint32_t v = 0; v < n; ++v)
    if (engine(v) && d.succs[v].empty()) terminal_waits.push_back(uint32_t(node_signal[v]));
  std::vector<uint32_t> last_chunk;
  if (terminal_waits.size() > max_deps) {
    size_t head = terminal_waits.size() - (terminal_waits.size() - 1) % max_deps - 1;
    push_barriers(0, std::vector<uint32_t>(terminal_waits.begin(), terminal_waits.begin() + head),
                  "replay end: waits for other lanes and copies");
    last_chunk.assign(terminal_waits.begin() + head, terminal_waits.end());
  } else {
    last_chunk = terminal_waits;
  }
  plan.replay_done = new_signal(AqlSignal::Kind::ReplayDone, 0);
  AqlPacket t;
  t.type = AqlPacket::Type::BarrierAnd;
  t.barrier = true;
  t.release = FenceScope::System;
  t.wait = last_chunk;
  t.completion = plan.replay_done;
  t.why = "replay end: barrier bit (every packet of lane 0 finished), release at system scope, completion signal";
  if (!last_chunk.empty()) t.why += ", after the other lanes and the copy engine";
  push(0, std::move(t));
  return plan;
}

}  // namespace lrrt::rt::graph

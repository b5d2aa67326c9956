#include "graph/plan.hpp"

#include <fmt/format.h>

namespace lrrt::rt::graph {
namespace {

std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20)
          out += fmt::format("\\u{:04x}", int(c));
        else
          out += c;
    }
  }
  return out + "\"";
}

std::string hazard_array(uint8_t h) {
  std::string out = "[";
  auto add = [&](uint8_t bit, const char* name) {
    if (!(h & bit)) return;
    if (out.size() > 1) out += ",";
    out += quoted(name);
  };
  add(kHazardRaw, "RAW");
  add(kHazardWar, "WAR");
  add(kHazardWaw, "WAW");
  add(kHazardExplicit, "explicit");
  return out + "]";
}

std::string edge_json(const Edge& e, bool programmatic = false) {
  std::string out = fmt::format(R"({{"from":{},"to":{},"hazards":{})", e.from, e.to, hazard_array(e.hazards));
  if (!e.range.empty()) out += fmt::format(R"(,"bytes":["{:#x}","{:#x}"])", e.range.begin, e.range.end);
  if (programmatic) out += R"(,"programmatic":true)";
  return out + "}";
}

std::string index_array(const std::vector<uint32_t>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + std::to_string(v[i]);
  return out + "]";
}

}  // namespace

Plan make_plan(const Graph& graph, const Derived& d, const Lanes& lanes, uint32_t max_lanes) {
  Plan plan;
  const auto& nodes = graph.nodes();
  for (uint32_t v = 0; v < d.node_count; ++v) {
    PlanNode n;
    n.id = v;
    n.kind = nodes[v].kind();
    n.label = nodes[v].label();
    n.lane = lanes.of[v];
    n.position = d.position[v];
    for (const auto& a : d.accesses[v]) n.accesses.push_back({a.range, a.mode, a.device_side, a.source});
    plan.nodes.push_back(std::move(n));
  }
  plan.edges = d.edges;
  plan.edges_derived = d.edges_derived;
  plan.reduced = d.reduced;
  plan.dropped_for_test = d.dropped_for_test;
  plan.lane_count = lanes.count;
  plan.width = lanes.width;
  plan.max_lanes = max_lanes;
  return plan;
}

std::string aql_plan_to_json(const AqlPlan& plan) {
  std::string out = R"({"signals":[)";
  for (uint32_t i = 0; i < plan.signals.size(); ++i)
    out += (i ? "," : "") + quoted(aql_signal_name(plan, i));
  out += R"(],"lanes":[)";
  for (size_t l = 0; l < plan.lanes.size(); ++l) {
    out += l ? ",[" : "[";
    for (size_t i = 0; i < plan.lanes[l].size(); ++i) {
      const auto& p = plan.lanes[l][i];
      out += fmt::format(R"({}{{"type":"{}",)", i ? "," : "",
                         p.type == AqlPacket::Type::Dispatch ? "dispatch" : "barrier_and");
      if (p.node >= 0) out += fmt::format(R"("node":{},)", p.node);
      out += fmt::format(R"("barrier":{},"acquire":"{}","release":"{}","wait":{},)", p.barrier ? "true" : "false",
                         fence_scope_name(p.acquire), fence_scope_name(p.release), index_array(p.wait));
      if (p.completion >= 0) out += fmt::format(R"("completion":{},)", p.completion);
      out += fmt::format(R"("why":{}}})", quoted(p.why));
    }
    out += "]";
  }
  out += R"(],"copy_engine":[)";
  for (size_t i = 0; i < plan.engine_ops.size(); ++i) {
    const auto& op = plan.engine_ops[i];
    out += fmt::format(R"({}{{"node":{},"wait":{},"completion":{},"why":{}}})", i ? "," : "", op.node,
                       index_array(op.wait), op.completion, quoted(op.why));
  }
  out += fmt::format(R"(],"replay_done":{}}})", plan.replay_done);
  return out;
}

std::string plan_to_json(const Plan& plan) {
  std::string out = fmt::format(R"({{"lowering":{},"lanes":{},"max_lanes":{},"width":{},"reduced":{},)",
                                quoted(plan.lowering), plan.lane_count, plan.max_lanes, plan.width,
                                plan.reduced ? "true" : "false");
  out += fmt::format(R"("edges_derived":{},"nodes":[)", plan.edges_derived);
  for (size_t i = 0; i < plan.nodes.size(); ++i) {
    const auto& n = plan.nodes[i];
    out += fmt::format(R"({}{{"id":{},"kind":"{}","name":{},"lane":{},"order":{},"accesses":[)", i ? "," : "", n.id,
                       node_kind_name(n.kind), quoted(n.label), n.lane, n.position);
    for (size_t a = 0; a < n.accesses.size(); ++a) {
      const auto& x = n.accesses[a];
      out += fmt::format(R"({}{{"mode":"{}","bytes":["{:#x}","{:#x}"],"memory":"{}","source":"{}"}})", a ? "," : "",
                         access_mode_name(x.mode), x.range.begin, x.range.end, x.device_side ? "device" : "host",
                         formats::access_source_name(x.source));
    }
    out += "]}";
  }
  out += R"(],"edges":[)";
  for (size_t i = 0; i < plan.edges.size(); ++i)
    out += (i ? "," : "") + edge_json(plan.edges[i], i < plan.programmatic.size() && plan.programmatic[i]);
  out += "]";
  out += fmt::format(R"(,"max_in_flight":{})", plan.max_in_flight);
  if (plan.dropped_for_test) out += R"(,"dropped_for_test":)" + edge_json(*plan.dropped_for_test);
  if (plan.test_worst_order) out += R"(,"test_worst_order":true)";
  out += R"(,"sync":[)";
  for (size_t i = 0; i < plan.sync.size(); ++i) {
    const auto& s = plan.sync[i];
    out += fmt::format(R"({}{{"kind":{},)", i ? "," : "", quoted(s.kind));
    if (s.node >= 0) out += fmt::format(R"("node":{},)", s.node);
    out += fmt::format(R"("why":{}}})", quoted(s.detail));
  }
  out += "]";
  if (plan.aql) out += R"(,"aql":)" + aql_plan_to_json(*plan.aql);
  return out + "}";
}

}  // namespace lrrt::rt::graph

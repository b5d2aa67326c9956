// `lrrt plan` results: {"kind": "plan", "meta", "device", "plans": [{"manifest",
// "name", "backend", "steps" [{"node", "step", "kind", "accesses" (kernel
// steps: [{"arg", "buffer", "access", "source"}])}], "buffers", "plan":
// <lr_graph_exec_get_plan>}]}.
// The plan is printed as the runtime wrote it; the view only puts buffer and
// step names on its addresses and node ids.
#include <fmt/format.h>

#include <cstdlib>

#include "tool/printers/views.hpp"

namespace lrrt::tool::printers {

using nlohmann::json;

namespace {

uint64_t hex(const json& v) {
  if (!v.is_string()) return 0;
  return std::strtoull(v.get<std::string>().c_str(), nullptr, 16);
}

std::string join(const json& a, const char* sep = ", ") {
  std::string out;
  if (a.is_array())
    for (const auto& v : a) out += (out.empty() ? "" : sep) + (v.is_string() ? v.get<std::string>() : v.dump());
  return out;
}

// "y" or "y bytes [64, 128)" for an access range.
std::string buffer_of(const json& entry, const json& range) {
  if (!range.is_array() || range.size() != 2) return "?";
  const uint64_t b = hex(range[0]), e = hex(range[1]);
  const json& bufs = member(entry, "buffers");
  if (bufs.is_array())
    for (const auto& buf : bufs) {
      const json& r = member(buf, "bytes");
      if (!r.is_array() || r.size() != 2) continue;
      const uint64_t bb = hex(r[0]), be = hex(r[1]);
      if (b >= bb && b < be) {
        const std::string name = text_of(buf, "name");
        if (b == bb && e == be) return name;
        return fmt::format("{} bytes [{}, {})", name, b - bb, e - bb);
      }
    }
  return fmt::format("[{})", join(range));
}

std::string step_of(const json& entry, const json& node_id) {
  const json& steps = member(entry, "steps");
  if (steps.is_array() && node_id.is_number_unsigned() && node_id.get<size_t>() < steps.size())
    return text_of(steps[node_id.get<size_t>()], "step");
  return node_id.dump();
}

// "read x; write y (actual_access)": each access, and where it came from
// when not declared (docs/access.md): the tool's step entry says for the
// manifest's arguments, the runtime's plan for accesses it derived itself.
std::string accesses_text(const json& entry, const json& node) {
  std::string out;
  const json& acc = member(node, "accesses");
  const json& id = member(node, "id");
  const json& steps = member(entry, "steps");
  const json* sources = nullptr;
  if (steps.is_array() && id.is_number_unsigned() && id.get<size_t>() < steps.size()) {
    const json& s = member(steps[id.get<size_t>()], "accesses");
    if (s.is_array() && acc.is_array() && s.size() == acc.size()) sources = &s;
  }
  if (acc.is_array())
    for (size_t i = 0; i < acc.size(); ++i) {
      out += (out.empty() ? "" : "; ") + text_of(acc[i], "mode") + " " + buffer_of(entry, member(acc[i], "bytes"));
      const std::string source = sources ? text_of((*sources)[i], "source") : text_of(acc[i], "source");
      if (!source.empty() && source != "declared") out += " (" + source + ")";
    }
  return out;
}

// In-edges of every node: "saxpy[0] RAW".
std::vector<std::string> in_edges(const json& entry, const json& plan, size_t nodes) {
  std::vector<std::string> out(nodes);
  const json& edges = member(plan, "edges");
  if (edges.is_array())
    for (const auto& e : edges) {
      const json& to = member(e, "to");
      if (!to.is_number_unsigned() || to.get<size_t>() >= nodes) continue;
      std::string& s = out[to.get<size_t>()];
      s += (s.empty() ? "" : "; ") + step_of(entry, member(e, "from")) + " " + join(member(e, "hazards"), "+");
      if (member(e, "programmatic").is_boolean() && member(e, "programmatic").get<bool>()) s += " programmatic";
    }
  return out;
}

// ", 3 programmatic" when the lowering made edges programmatic.
std::string programmatic_text(const json& plan) {
  size_t n = 0;
  const json& edges = member(plan, "edges");
  if (edges.is_array())
    for (const auto& e : edges)
      if (member(e, "programmatic").is_boolean() && member(e, "programmatic").get<bool>()) ++n;
  return n ? fmt::format(", {} programmatic", n) : std::string();
}

// lr_graph_exec_get_plan's max_in_flight: hsa's bound, 0 = none kept by lrrt.
std::string in_flight_text(const json& plan) {
  const json& k = member(plan, "max_in_flight");
  if (!k.is_number_unsigned()) return "-";
  return k.get<uint64_t>() == 0 ? std::string("not bounded by lrrt (the driver or the launch queue orders them)")
                                : fmt::format("at most {}", k.get<uint64_t>());
}

}  // namespace

void plan_blocks(Layout& out, const json& entry, int depth) {
  const json& plan = member(entry, "plan");
  const json& nodes = member(plan, "nodes");
  const json& edges = member(plan, "edges");
  out.fields({{"lowering", text_of(plan, "lowering")},
              {"lanes", fmt::format("{} (at most {}; widest set of independent steps {})", text_of(plan, "lanes"),
                                    text_of(plan, "max_lanes"), text_of(plan, "width"))},
              {"graph", fmt::format("{} nodes, {} edges ({} derived before the transitive reduction){}",
                                    nodes.is_array() ? nodes.size() : 0, edges.is_array() ? edges.size() : 0,
                                    text_of(plan, "edges_derived"), programmatic_text(plan))},
              {"replays in flight", in_flight_text(plan)}},
             depth);
  if (plan.contains("dropped_for_test"))
    out.text(fmt::format("TEST SWITCH: edge {} -> {} dropped", text_of(member(plan, "dropped_for_test"), "from"),
                         text_of(member(plan, "dropped_for_test"), "to")),
             true, depth);
  Table nt;
  nt.columns = {"node", "step", "kind", "lane", "order", "after (hazard)", "accesses"};
  nt.align = {Align::Right, Align::Left, Align::Left, Align::Right, Align::Right};
  if (nodes.is_array()) {
    const auto ins = in_edges(entry, plan, nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
      const json& n = nodes[i];
      nt.rows.push_back({text_of(n, "id"), step_of(entry, member(n, "id")), text_of(n, "kind"), text_of(n, "lane"),
                         text_of(n, "order"), ins[i], accesses_text(entry, n)});
    }
  }
  out.table(std::move(nt), depth);
  Table st;
  st.columns = {"sync", "node", "why"};
  const json& sync = member(plan, "sync");
  if (sync.is_array())
    for (const auto& s : sync)
      st.rows.push_back({text_of(s, "kind"), s.contains("node") ? step_of(entry, member(s, "node")) : "replay", text_of(s, "why")});
  if (!st.rows.empty()) out.table(std::move(st), depth);
  const json& aql = member(plan, "aql");
  const json& lanes = member(aql, "lanes");
  if (lanes.is_array()) {
    Table at;
    at.columns = {"lane", "packet", "type", "step", "barrier", "acquire", "release", "wait", "why"};
    for (size_t l = 0; l < lanes.size(); ++l)
      if (lanes[l].is_array())
        for (size_t k = 0; k < lanes[l].size(); ++k) {
          const json& p = lanes[l][k];
          at.rows.push_back({std::to_string(l), std::to_string(k), text_of(p, "type"),
                             p.contains("node") ? step_of(entry, member(p, "node")) : "", text_of(p, "barrier"),
                             text_of(p, "acquire"), text_of(p, "release"), join(member(p, "wait")), text_of(p, "why")});
        }
    out.table(std::move(at), depth);
  }
}

Table plan_records(const json& doc) {
  Table t;
  t.columns = {"manifest", "name", "backend", "lowering", "node", "step", "kind", "lane", "order", "after", "accesses"};
  const json& plans = member(doc, "plans");
  if (!plans.is_array()) return t;
  for (const auto& entry : plans) {
    const json& plan = member(entry, "plan");
    const json& nodes = member(plan, "nodes");
    if (!nodes.is_array()) continue;
    const auto ins = in_edges(entry, plan, nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
      const json& n = nodes[i];
      t.rows.push_back({text_of(entry, "manifest"), text_of(entry, "name"), text_of(entry, "backend"),
                        text_of(plan, "lowering"), text_of(n, "id"), step_of(entry, member(n, "id")), text_of(n, "kind"),
                        text_of(n, "lane"), text_of(n, "order"), ins[i], accesses_text(entry, n)});
    }
  }
  return t;
}

Layout plan_layout(const json& doc) {
  Layout out;
  const json& dev = member(doc, "device");
  const json& plans = member(doc, "plans");
  if (!plans.is_array()) return out;
  for (const auto& entry : plans) {
    out.heading(fmt::format("{}: plan on {} ({}, {})", text_of(entry, "name"), text_of(entry, "backend"),
                            text_of(dev, "name"), text_of(dev, "arch")));
    plan_blocks(out, entry, 0);
  }
  return out;
}

namespace {

std::string dot_quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string plan_dot(const json& doc) {
  std::string out = "digraph lrrt_plan {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n";
  const json& plans = member(doc, "plans");
  if (plans.is_array())
    for (size_t p = 0; p < plans.size(); ++p) {
      const json& entry = plans[p];
      const json& plan = member(entry, "plan");
      out += fmt::format("  subgraph cluster_{} {{\n    label={};\n", p,
                         dot_quoted(fmt::format("{} ({}, {} lanes)", text_of(entry, "name"), text_of(plan, "lowering"),
                                                text_of(plan, "lanes"))));
      const json& nodes = member(plan, "nodes");
      if (nodes.is_array())
        for (const auto& n : nodes)
          out += fmt::format("    p{}n{} [label={}];\n", p, text_of(n, "id"),
                             dot_quoted(fmt::format("{}\n{}, lane {}\n{}", step_of(entry, member(n, "id")), text_of(n, "kind"),
                                                    text_of(n, "lane"), accesses_text(entry, n))));
      const json& edges = member(plan, "edges");
      if (edges.is_array())
        for (const auto& e : edges) {
          const std::string hazards = join(member(e, "hazards"), "+");
          const bool only_explicit = hazards == "explicit";
          out += fmt::format("    p{}n{} -> p{}n{} [label={}{}];\n", p, text_of(e, "from"), p, text_of(e, "to"),
                             dot_quoted(hazards), only_explicit ? ", style=dashed" : "");
        }
      out += "  }\n";
    }
  return out + "}\n";
}

}  // namespace lrrt::tool::printers

// Checking and deriving a recorded graph: each step's accesses resolved
// against the allocations (kernel pointer arguments checked, accesses a kernel
// proves derived), the edges their hazards ask for, their transitive
// reduction, and the lanes a replay runs them in. Recording and the graph's
// names are in graph.cpp.
#include <algorithm>
#include <cstring>
#include <queue>
#include <unordered_map>

#include <fmt/format.h>

#include "error.hpp"
#include "graph/graph.hpp"

namespace lrrt::rt::graph {
namespace {

// How a message names access `index` of a node: copies and fills have a
// source and a destination, kernels numbered declarations.
std::string access_role(const Node& node, size_t index) {
  switch (node.kind()) {
    case NodeKind::Kernel: return fmt::format("access {}", index);
    case NodeKind::Copy: return index == 0 ? "source" : "destination";
    case NodeKind::Fill: return "destination";
  }
  return "access";
}

// A pointer-sized argument a kernel may dereference.
struct PointerSlot {
  uint32_t offset = 0;
  bool global_buffer = false;  // the code object says it is a buffer
  std::string name;            // how messages name it
};

std::vector<PointerSlot> pointer_slots(const KernelInfo& info, size_t args_size) {
  std::vector<PointerSlot> slots;
  if (info.has_arg_layout) {
    uint32_t index = 0;
    for (const auto& a : info.args) {
      if (a.kind == formats::ArgKind::Hidden) continue;
      uint32_t i = index++;
      // Pointers are 8 bytes on every backend; a by-value 8-byte argument is
      // checked too (a layout without pointer types, as on cuda), but only
      // when its value lies inside an allocation.
      if (a.kind == formats::ArgKind::DynamicShared || a.size != 8 || a.offset + 8 > args_size) continue;
      std::string name = a.name.empty() ? fmt::format("argument {} (offset {})", i, a.offset)
                                        : fmt::format("argument '{}' (offset {})", a.name, a.offset);
      slots.push_back({a.offset, a.kind == formats::ArgKind::GlobalBuffer, std::move(name)});
    }
  } else {
    // No layout: every aligned 8-byte word that holds an address inside an
    // allocation is taken for a pointer.
    for (uint32_t off = 0; off + 8 <= args_size; off += 8)
      slots.push_back({off, false, fmt::format("the 8 argument bytes at offset {}", off)});
  }
  return slots;
}

struct Record {
  uint32_t node;
  Range range;
  bool read;
  bool write;
};

std::vector<std::vector<uint32_t>> adjacency(uint32_t n, const std::vector<Edge>& edges, bool forward) {
  std::vector<std::vector<uint32_t>> out(n);
  for (const auto& e : edges) out[forward ? e.from : e.to].push_back(forward ? e.to : e.from);
  return out;
}

[[noreturn]] void throw_cycle(const Graph& graph, const std::vector<Edge>& edges,
                              const std::vector<uint32_t>& indegree) {
  // Every node left with an unmet predecessor lies on or after a cycle: walk
  // back through such predecessors until a node repeats.
  const auto& nodes = graph.nodes();
  const uint32_t n = uint32_t(nodes.size());
  auto preds = adjacency(n, edges, false);
  uint32_t start = 0;
  while (start < n && indegree[start] == 0) ++start;
  std::vector<int64_t> seen(n, -1);
  std::vector<uint32_t> walk;
  uint32_t v = start;
  while (seen[v] < 0) {
    seen[v] = int64_t(walk.size());
    walk.push_back(v);
    for (uint32_t p : preds[v])
      if (indegree[p] > 0) {
        v = p;
        break;
      }
  }
  // walk[seen[v]..] is the cycle, walked backwards.
  std::vector<uint32_t> cycle(walk.begin() + seen[v], walk.end());
  std::reverse(cycle.begin(), cycle.end());
  std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());  // from its lowest id
  cycle.push_back(cycle.front());
  std::string text = describe_node(nodes, cycle[0]);
  for (size_t i = 1; i < cycle.size(); ++i) {
    uint8_t h = 0;
    for (const auto& e : edges)
      if (e.from == cycle[i - 1] && e.to == cycle[i]) h |= e.hazards;
    text += fmt::format(" -[{}]-> {}", hazard_names(h), describe_node(nodes, cycle[i]));
  }
  LRRT_THROW(LR_ERROR_INVALID_ARGUMENT,
             "the graph's dependencies form a cycle: {} (an explicit dependency contradicts the order "
             "the steps were recorded in)",
             text);
}

}  // namespace

// ---- Validation -----------------------------------------------------------

void check_kernel_args(const std::vector<Node>& nodes, uint32_t id, std::span<const std::byte> args,
                       const std::vector<ResolvedAccess>& accesses, const AllocationTable& allocations) {
  const auto& step = std::get<KernelStep>(nodes[id].step);
  for (const auto& slot : pointer_slots(step.kernel->info(), args.size())) {
    uint64_t value = 0;
    std::memcpy(&value, args.data() + slot.offset, 8);
    if (value == 0) continue;
    const Range* alloc = allocations.find(uintptr_t(value));
    if (!alloc) {
      if (!slot.global_buffer) continue;  // an 8-byte scalar
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT,
                 "{}: {} is the pointer {:#x}, which is not inside any allocation of the device (lr_malloc or "
                 "lr_host_malloc): a graph can only use memory the runtime allocated or memory registered with "
                 "lr_memory_register",
                 describe_node(nodes, id), slot.name, value);
    }
    bool covered = false;
    for (const auto& a : accesses) covered |= a.device_side && a.range.contains(uintptr_t(value));
    if (!covered)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT,
                 "{}: {} points to {:#x} (in the {}-byte allocation at {:#x}), but no access declaration of the "
                 "node covers it: declare {{pointer, offset, bytes, mode}} with mode read, write or read_write",
                 describe_node(nodes, id), slot.name, value, alloc->size(), alloc->begin);
  }
}

bool touches_pointer_args(const KernelStep& step, size_t offset, size_t size) {
  for (const auto& slot : pointer_slots(step.kernel->info(), step.args.size()))
    if (offset < slot.offset + 8 && slot.offset < offset + size) return true;
  return false;
}

namespace {

// LR_GRAPH_KERNEL_DERIVE_ACCESS: every pointer argument inside an
// allocation that no declaration covers gets the access the kernel proves,
// over the whole allocation (a kernel may index before its pointer: wider is
// safe). An argument the kernel says nothing of is read-write.
void derive_kernel_accesses(const KernelStep& step, const AllocationTable& allocations, std::vector<ResolvedAccess>& out) {
  const size_t declared = out.size();
  for (const auto& slot : pointer_slots(step.kernel->info(), step.args.size())) {
    uint64_t value = 0;
    std::memcpy(&value, step.args.data() + slot.offset, 8);
    const Range* alloc = value ? allocations.find(uintptr_t(value)) : nullptr;
    if (!alloc) continue;  // null, a scalar, or a pointer check_kernel_args rejects
    bool covered = false;
    for (size_t i = 0; i < declared; ++i) covered |= out[i].device_side && out[i].range.contains(uintptr_t(value));
    if (covered) continue;
    const formats::DerivedAccess a = step.kernel->arg_access(slot.offset);
    out.push_back({*alloc, static_cast<AccessMode>(a.mode), true, a.source});
  }
}

std::vector<ResolvedAccess> resolve(const std::vector<Node>& nodes, uint32_t id, const AllocationTable& allocations) {
  const Node& node = nodes[id];
  std::vector<ResolvedAccess> out;
  out.reserve(node.accesses.size());
  for (size_t i = 0; i < node.accesses.size(); ++i) {
    const auto& d = node.accesses[i];
    const uintptr_t begin = d.pointer + d.offset;
    if (!d.device_side) {
      out.push_back({{begin, begin + d.bytes}, d.mode, false});
      continue;
    }
    const Range* alloc = allocations.find(begin);
    if (!alloc)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT,
                 "{}: {} ({}) starts at {:#x}, which is not inside any allocation of the device (lr_malloc or "
                 "lr_host_malloc) or any range registered with lr_memory_register",
                 describe_node(nodes, id), access_role(node, i), access_mode_name(d.mode), begin);
    uintptr_t end = d.bytes ? begin + d.bytes : alloc->end;
    if (end > alloc->end)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT,
                 "{}: {} ({}) covers [{:#x}, {:#x}), {} bytes past the end of its allocation ({} bytes at {:#x})",
                 describe_node(nodes, id), access_role(node, i), access_mode_name(d.mode), begin, end,
                 end - alloc->end, alloc->size(), alloc->begin);
    out.push_back({{begin, end}, d.mode, true});
  }
  if (node.kind() == NodeKind::Kernel && std::get<KernelStep>(node.step).derive_access)
    derive_kernel_accesses(std::get<KernelStep>(node.step), allocations, out);
  return out;
}

}  // namespace

void check_still_allocated(const std::vector<Node>& nodes, const std::vector<std::vector<ResolvedAccess>>& accesses,
                           const AllocationTable& allocations) {
  for (uint32_t id = 0; id < accesses.size(); ++id)
    for (size_t i = 0; i < accesses[id].size(); ++i) {
      const auto& a = accesses[id][i];
      if (!a.device_side) continue;
      const Range* alloc = allocations.find(a.range.begin);
      if (!alloc || !alloc->contains(Range{a.range.begin, a.range.end}))
        LRRT_THROW(LR_ERROR_INVALID_ARGUMENT,
                   "{}: {} [{:#x}, {:#x}) is no longer allocated: a buffer the graph uses was freed (or "
                   "unregistered) after lr_graph_instantiate; instantiate the graph again with live buffers",
                   describe_node(nodes, id), access_role(nodes[id], i), a.range.begin, a.range.end);
    }
}

// ---- Derivation -----------------------------------------------------------

Derived derive(const Graph& graph, const AllocationTable& allocations, const DeriveOptions& options) {
  const auto& nodes = graph.nodes();
  const uint32_t n = uint32_t(nodes.size());
  Derived d;
  d.node_count = n;
  d.accesses.resize(n);
  for (uint32_t v = 0; v < n; ++v) {
    d.accesses[v] = resolve(nodes, v, allocations);
    if (nodes[v].kind() == NodeKind::Kernel)
      check_kernel_args(nodes, v, std::get<KernelStep>(nodes[v].step).args, d.accesses[v], allocations);
  }

  // Hazards in program order. Per allocation (ranges in different
  // allocations never overlap; host-side ranges share one bucket), the
  // accesses that can still conflict with later ones: an access whose range
  // a later write covers completely is dropped, since anything that
  // conflicts with it conflicts with that write, which follows it.
  std::vector<Edge> edges;
  std::unordered_map<uintptr_t, std::vector<Record>> live;
  auto bucket_of = [&](const ResolvedAccess& a) -> uintptr_t {
    if (!a.device_side) return 0;
    const Range* alloc = allocations.find(a.range.begin);
    return alloc ? alloc->begin : 0;
  };
  std::vector<Edge> found;  // this node's incoming hazard edges
  for (uint32_t v = 0; v < n; ++v) {
    found.clear();
    for (const auto& a : d.accesses[v]) {
      if (a.range.empty()) continue;
      auto it = live.find(bucket_of(a));
      if (it == live.end()) continue;
      for (const auto& r : it->second) {
        if (!r.range.overlaps(a.range)) continue;
        uint8_t h = 0;
        if (r.write && reads(a.mode)) h |= kHazardRaw;
        if (r.read && writes(a.mode)) h |= kHazardWar;
        if (r.write && writes(a.mode)) h |= kHazardWaw;
        if (!h) continue;
        auto e = std::find_if(found.begin(), found.end(), [&](const Edge& x) { return x.from == r.node; });
        if (e == found.end())
          found.push_back({r.node, v, h, r.range.intersect(a.range)});
        else
          e->hazards |= h;
      }
    }
    edges.insert(edges.end(), found.begin(), found.end());
    for (const auto& a : d.accesses[v]) {
      if (a.range.empty() || !writes(a.mode)) continue;
      std::erase_if(live[bucket_of(a)], [&](const Record& r) { return a.range.contains(r.range); });
    }
    for (const auto& a : d.accesses[v]) {
      if (a.range.empty()) continue;
      live[bucket_of(a)].push_back({v, a.range, reads(a.mode), writes(a.mode)});
    }
  }
  for (auto [from, to] : graph.dependencies()) edges.push_back({from, to, kHazardExplicit, {}});
  std::sort(edges.begin(), edges.end(),
            [](const Edge& a, const Edge& b) { return a.to != b.to ? a.to < b.to : a.from < b.from; });
  {
    std::vector<Edge> merged;
    for (const auto& e : edges) {
      if (!merged.empty() && merged.back().from == e.from && merged.back().to == e.to) {
        merged.back().hazards |= e.hazards;
        if (merged.back().range.empty()) merged.back().range = e.range;
      } else {
        merged.push_back(e);
      }
    }
    edges = std::move(merged);
  }
  d.edges_derived = uint32_t(edges.size());
  for (const auto& e : edges) {
    if (e.hazards & kHazardRaw) d.raw_pairs.emplace_back(e.from, e.to);
    if (e.hazards & (kHazardRaw | kHazardWar | kHazardWaw)) d.conflicts.push_back(e);
  }

  // Topological order, recording order among ready nodes.
  {
    auto succs = adjacency(n, edges, true);
    std::vector<uint32_t> indegree(n, 0);
    for (const auto& e : edges) ++indegree[e.to];
    std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<>> ready;
    for (uint32_t v = 0; v < n; ++v)
      if (!indegree[v]) ready.push(v);
    while (!ready.empty()) {
      uint32_t v = ready.top();
      ready.pop();
      d.order.push_back(v);
      for (uint32_t s : succs[v])
        if (--indegree[s] == 0) ready.push(s);
    }
    if (d.order.size() != n) throw_cycle(graph, edges, indegree);
    d.position.assign(n, 0);
    for (uint32_t i = 0; i < n; ++i) d.position[d.order[i]] = i;
  }

  // Transitive reduction: edge p -> v is redundant when p is an ancestor of
  // another predecessor of v. Predecessors are visited latest first, so any
  // predecessor that has p as an ancestor was merged into v's row before p
  // is tested.
  if (n <= kMaxReducedNodes) {
    d.reduced = true;
    d.ancestors.reset(n);
    auto preds = adjacency(n, edges, false);
    std::vector<Edge> kept;
    std::vector<uint8_t> keep_edge(n, 0);
    for (uint32_t v : d.order) {
      auto& ps = preds[v];
      std::sort(ps.begin(), ps.end(), [&](uint32_t a, uint32_t b) { return d.position[a] > d.position[b]; });
      for (uint32_t p : ps) {
        bool redundant = d.ancestors.test(v, p);
        d.ancestors.merge_row(v, p);
        d.ancestors.set(v, p);
        keep_edge[p] = redundant ? 0 : 1;
      }
      // edges are sorted by (to, from): v's incoming edges are contiguous.
      auto first = std::lower_bound(edges.begin(), edges.end(), v, [](const Edge& e, uint32_t t) { return e.to < t; });
      for (auto it = first; it != edges.end() && it->to == v; ++it)
        if (keep_edge[it->from]) kept.push_back(*it);
    }
    std::sort(kept.begin(), kept.end(),
              [](const Edge& a, const Edge& b) { return a.to != b.to ? a.to < b.to : a.from < b.from; });
    edges = std::move(kept);
  }

  if (options.drop_edge && *options.drop_edge < edges.size()) {
    // The negative control: the replay must miss this dependency, also
    // through the paths the reduction counted on, so ancestors are rebuilt
    // from the edges that remain and the pair's cache fences go too.
    Edge dropped = edges[*options.drop_edge];
    edges.erase(edges.begin() + *options.drop_edge);
    std::erase(d.raw_pairs, std::make_pair(dropped.from, dropped.to));
    std::erase_if(d.conflicts, [&](const Edge& e) { return e.from == dropped.from && e.to == dropped.to; });
    d.dropped_for_test = dropped;
    if (d.reduced) {
      auto preds = adjacency(n, edges, false);
      d.ancestors.reset(n);
      for (uint32_t v : d.order)
        for (uint32_t p : preds[v]) {
          d.ancestors.merge_row(v, p);
          d.ancestors.set(v, p);
        }
    }
  }

  d.edges = std::move(edges);
  d.preds = adjacency(n, d.edges, false);
  d.succs = adjacency(n, d.edges, true);
  return d;
}

// ---- Lanes ----------------------------------------------------------------

Lanes assign_lanes(const Derived& d, uint32_t max_lanes) {
  const uint32_t n = d.node_count;
  Lanes lanes;
  lanes.of.assign(n, 0);
  if (n == 0) {
    lanes.width = 0;
    return lanes;
  }
  // Independent width: the most nodes at one depth (longest path from a root).
  std::vector<uint32_t> depth(n, 0), per_depth;
  for (uint32_t v : d.order) {
    for (uint32_t p : d.preds[v]) depth[v] = std::max(depth[v], depth[p] + 1);
    if (per_depth.size() <= depth[v]) per_depth.resize(depth[v] + 1, 0);
    ++per_depth[depth[v]];
  }
  lanes.width = *std::max_element(per_depth.begin(), per_depth.end());
  const uint32_t count = std::max<uint32_t>(1, std::min(max_lanes, lanes.width));

  constexpr uint32_t kNone = UINT32_MAX;
  std::vector<uint32_t> tail(count, kNone);
  for (uint32_t v : d.order) {
    uint32_t pick = kNone;
    // 1. Continue a chain: a lane whose last node is a predecessor.
    for (uint32_t l = 0; l < count && pick == kNone; ++l)
      if (tail[l] != kNone && std::find(d.preds[v].begin(), d.preds[v].end(), tail[l]) != d.preds[v].end()) pick = l;
    // 2. A lane whose last node must finish before v anyway.
    for (uint32_t l = 0; l < count && pick == kNone; ++l)
      if (tail[l] != kNone && d.precedes(tail[l], v)) pick = l;
    // 3. An unused lane.
    for (uint32_t l = 0; l < count && pick == kNone; ++l)
      if (tail[l] == kNone) pick = l;
    // 4. The lane whose last node was submitted earliest (on an in-order
    //    queue this orders v after unrelated work).
    if (pick == kNone) {
      pick = 0;
      for (uint32_t l = 1; l < count; ++l)
        if (d.position[tail[l]] < d.position[tail[pick]]) pick = l;
    }
    lanes.of[v] = pick;
    tail[pick] = v;
  }
  // The replay ends on lane 0, the queue it was launched on.
  const uint32_t last_lane = lanes.of[d.order.back()];
  if (last_lane != 0)
    for (auto& l : lanes.of) l = l == last_lane ? 0 : l == 0 ? last_lane : l;
  lanes.count = 1 + *std::max_element(lanes.of.begin(), lanes.of.end());
  return lanes;
}

}  // namespace lrrt::rt::graph

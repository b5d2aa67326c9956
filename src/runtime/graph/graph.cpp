// A recorded graph: its nodes and their names in messages, recording,
// the allocation table and reachability. Checking and deriving the edges:
// derive.cpp.
#include "graph/graph.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "error.hpp"

namespace lrrt::rt::graph {
namespace {

const char* copy_kind_short(CopyKind kind) {
  switch (kind) {
    case CopyKind::HostToDevice: return "H2D";
    case CopyKind::DeviceToHost: return "D2H";
    case CopyKind::DeviceToDevice: return "D2D";
  }
  return "?";
}

}  // namespace

const char* access_mode_name(AccessMode m) {
  switch (m) {
    case AccessMode::Read: return "read";
    case AccessMode::Write: return "write";
    case AccessMode::ReadWrite: return "read_write";
  }
  return "?";
}

const char* node_kind_name(NodeKind kind) {
  switch (kind) {
    case NodeKind::Kernel: return "kernel";
    case NodeKind::Copy: return "copy";
    case NodeKind::Fill: return "fill";
  }
  return "?";
}

std::string Node::label() const {
  switch (kind()) {
    case NodeKind::Kernel: return std::get<KernelStep>(step).kernel->info().name;
    case NodeKind::Copy: {
      const auto& c = std::get<CopyStep>(step);
      return fmt::format("copy {} {} B", copy_kind_short(c.kind), c.size);
    }
    case NodeKind::Fill: {
      const auto& f = std::get<FillStep>(step);
      return fmt::format("fill {} B", f.size);
    }
  }
  return "?";
}

std::string describe_node(const std::vector<Node>& nodes, uint32_t id) {
  if (id >= nodes.size()) return fmt::format("node {}", id);
  const Node& n = nodes[id];
  if (n.kind() == NodeKind::Kernel) return fmt::format("node {} (kernel '{}')", id, n.label());
  return fmt::format("node {} ({})", id, n.label());
}

std::string hazard_names(uint8_t h) {
  std::string out;
  auto add = [&](uint8_t bit, const char* name) {
    if (!(h & bit)) return;
    if (!out.empty()) out += '+';
    out += name;
  };
  add(kHazardRaw, "RAW");
  add(kHazardWar, "WAR");
  add(kHazardWaw, "WAW");
  add(kHazardExplicit, "explicit");
  return out.empty() ? "none" : out;
}

// ---- Recording ------------------------------------------------------------

uint32_t Graph::next_id() const {
  if (nodes_.size() >= UINT32_MAX - 1)
    LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "the graph already has {} nodes, the most it can hold", nodes_.size());
  return uint32_t(nodes_.size());
}

uint32_t Graph::add_kernel(Kernel& kernel, const LaunchConfig& config, std::span<const std::byte> args,
                           std::span<const DeclaredAccess> accesses, bool derive_access) {
  uint32_t id = next_id();
  const KernelInfo& info = kernel.info();
  if (info.has_arg_layout) {
    // Up to the packed struct's size (the explicit size rounded up to 8, or
    // the segment size a backend reports); replays pass the explicit bytes
    // only, which every backend takes.
    const uint32_t need = info.explicit_kernarg_size();
    const uint32_t most = std::max({need, (need + 7) / 8 * 8, info.kernarg_size});
    if (args.size() < need || args.size() > most)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT,
                 "kernel '{}' takes {} bytes of explicit arguments (up to {} with padding), but {} were passed",
                 info.name, need, most, args.size());
  }
  for (size_t i = 0; i < accesses.size(); ++i) {
    const auto& a = accesses[i];
    if (a.mode != AccessMode::Read && a.mode != AccessMode::Write && a.mode != AccessMode::ReadWrite)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "kernel '{}': access {} has mode {}, not read (1), write (2) or read_write (3)",
                 info.name, i, int(a.mode));
    if (!a.pointer) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "kernel '{}': access {} has a null pointer", info.name, i);
    if (a.offset > UINTPTR_MAX - a.pointer || a.bytes > UINTPTR_MAX - a.pointer - a.offset)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "kernel '{}': access {} wraps around the address space", info.name, i);
  }
  Node node;
  node.step = KernelStep{&kernel, config, std::vector<std::byte>(args.begin(), args.end()),
                         (kernel.flags.load(std::memory_order_relaxed) & LR_KERNEL_WAITS_FOR_PRODUCER) != 0,
                         derive_access};
  node.accesses.assign(accesses.begin(), accesses.end());
  for (auto& a : node.accesses) a.device_side = true;
  nodes_.push_back(std::move(node));
  return id;
}

uint32_t Graph::add_copy(void* dst, const void* src, size_t size, CopyKind kind) {
  uint32_t id = next_id();
  if (size == 0) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "copy size is zero");
  if (!dst) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "dst is null");
  if (!src) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "src is null");
  auto s = reinterpret_cast<uintptr_t>(src), d = reinterpret_cast<uintptr_t>(dst);
  if (size > UINTPTR_MAX - s || size > UINTPTR_MAX - d)
    LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "a copy of {} bytes wraps around the address space", size);
  Node node;
  node.step = CopyStep{dst, src, size, kind};
  node.accesses.push_back({s, 0, size, AccessMode::Read, kind != CopyKind::HostToDevice});
  node.accesses.push_back({d, 0, size, AccessMode::Write, kind != CopyKind::DeviceToHost});
  nodes_.push_back(std::move(node));
  return id;
}

uint32_t Graph::add_fill(void* dst, size_t size, std::span<const std::byte> pattern) {
  uint32_t id = next_id();
  if (pattern.size() != 1 && pattern.size() != 2 && pattern.size() != 4)
    LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "fill pattern is {} bytes; it must be 1, 2 or 4", pattern.size());
  if (size == 0) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "fill size is zero");
  if (size % pattern.size())
    LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "fill size {} is not a multiple of the {}-byte pattern", size,
               pattern.size());
  if (!dst) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "dst is null");
  auto d = reinterpret_cast<uintptr_t>(dst);
  if (size > UINTPTR_MAX - d) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "a fill of {} bytes wraps around the address space", size);
  FillStep f{dst, size, 0, uint32_t(pattern.size())};
  std::memcpy(&f.pattern, pattern.data(), pattern.size());
  Node node;
  node.step = f;
  node.accesses.push_back({d, 0, size, AccessMode::Write, true});
  nodes_.push_back(std::move(node));
  return id;
}

void Graph::add_dependency(uint32_t from, uint32_t to) {
  if (from >= nodes_.size() || to >= nodes_.size())
    LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "dependency {} -> {} names a node the graph does not have ({} nodes)",
               from, to, nodes_.size());
  if (from == to) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "{} cannot depend on itself", describe_node(nodes_, from));
  dependencies_.emplace_back(from, to);
}

// ---- Allocations ----------------------------------------------------------

void AllocationTable::add(uintptr_t base, uint64_t size) { ranges_.push_back({base, base + size}); }

void AllocationTable::finish() {
  std::sort(ranges_.begin(), ranges_.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
}

const Range* AllocationTable::find(uintptr_t p) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), p,
                             [](uintptr_t v, const Range& r) { return v < r.begin; });
  if (it == ranges_.begin()) return nullptr;
  --it;
  return it->contains(p) ? &*it : nullptr;
}

// ---- Reachability ---------------------------------------------------------

void Reachability::reset(uint32_t rows, uint32_t bits) {
  if (bits == UINT32_MAX) bits = rows;
  words_ = (size_t(bits) + 63) / 64;
  bits_.assign(words_ * rows, 0);
}

void Reachability::merge_bits(uint32_t row, std::span<const uint64_t> bits) {
  uint64_t* dst = bits_.data() + size_t(row) * words_;
  for (size_t i = 0; i < words_ && i < bits.size(); ++i) dst[i] |= bits[i];
}

void Reachability::merge_row(uint32_t row, uint32_t from) {
  uint64_t* dst = bits_.data() + size_t(row) * words_;
  const uint64_t* src = bits_.data() + size_t(from) * words_;
  for (size_t i = 0; i < words_; ++i) dst[i] |= src[i];
}

bool Derived::precedes(uint32_t a, uint32_t b) const {
  if (!ancestors.empty()) return ancestors.test(b, a);
  return std::find(preds[b].begin(), preds[b].end(), a) != preds[b].end();
}

}  // namespace lrrt::rt::graph

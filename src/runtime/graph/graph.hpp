// Retained replay, backend-independent core: the recording of a graph
// (kernel dispatches, copies, fills, explicit dependencies), its validation
// against the device's live allocations, the dependency edges derived from
// program order and declared access (RAW, WAR, WAW), their transitive
// reduction, and the assignment of nodes to lanes (queues).
//
// Everything here is pure: it touches no device. The runtime (graph_api.cpp)
// feeds it the allocation table; a lowering (exec.hpp) turns the result into
// something a backend replays.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "backend.hpp"

namespace lrrt::rt::graph {

enum class AccessMode : uint8_t { Read = 1, Write = 2, ReadWrite = 3 };
constexpr bool reads(AccessMode m) { return (uint8_t(m) & 1) != 0; }
constexpr bool writes(AccessMode m) { return (uint8_t(m) & 2) != 0; }
const char* access_mode_name(AccessMode m);  // "read", "write", "read_write"

// Bytes [begin, end) of the address space.
struct Range {
  uintptr_t begin = 0;
  uintptr_t end = 0;
  bool empty() const { return end <= begin; }
  uint64_t size() const { return end - begin; }
  bool overlaps(const Range& o) const { return begin < o.end && o.begin < end; }
  bool contains(uintptr_t p) const { return p >= begin && p < end; }
  bool contains(const Range& r) const { return r.begin >= begin && r.end <= end; }
  Range intersect(const Range& o) const {
    return {begin > o.begin ? begin : o.begin, end < o.end ? end : o.end};
  }
};

// An access as the caller declared it; resolved against the allocations at
// instantiation (bytes = 0 reaches to the end of the allocation).
struct DeclaredAccess {
  uintptr_t pointer = 0;
  uint64_t offset = 0;
  uint64_t bytes = 0;
  AccessMode mode = AccessMode::Read;
  // false for the host side of a host-to-device or device-to-host copy:
  // any host memory, not checked against the allocations.
  bool device_side = true;
};

struct KernelStep {
  Kernel* kernel = nullptr;
  LaunchConfig config;
  std::vector<std::byte> args;  // explicit arguments, packed
  // LR_KERNEL_WAITS_FOR_PRODUCER when recorded: the cuda lowering may join
  // two such kernels by a programmatic edge.
  bool waits_for_producer = false;
  // LR_GRAPH_KERNEL_DERIVE_ACCESS: pointer arguments no declaration covers
  // get the access the kernel proves (Kernel::arg_access), over their whole
  // allocation, when the graph is instantiated.
  bool derive_access = false;
};
struct CopyStep {
  void* dst = nullptr;
  const void* src = nullptr;
  size_t size = 0;
  CopyKind kind = CopyKind::DeviceToDevice;
};
struct FillStep {
  void* dst = nullptr;
  size_t size = 0;
  uint32_t pattern = 0;       // the low pattern_size bytes, in memory order
  uint32_t pattern_size = 1;  // 1, 2 or 4
};

enum class NodeKind : uint8_t { Kernel = 0, Copy = 1, Fill = 2 };
const char* node_kind_name(NodeKind kind);  // "kernel", "copy", "fill"

struct Node {
  std::variant<KernelStep, CopyStep, FillStep> step;  // index == NodeKind
  std::vector<DeclaredAccess> accesses;  // declared (kernels) or implied (copies, fills)
  NodeKind kind() const { return NodeKind(step.index()); }
  // "saxpy", "copy H2D 4096 B", "fill 4096 B"
  std::string label() const;
};

// "node 3 (kernel 'saxpy')": how messages name a node.
std::string describe_node(const std::vector<Node>& nodes, uint32_t id);

// The recording. Checks what it can without the device (ids, sizes,
// pattern sizes); pointers are checked at derive().
class Graph {
 public:
  uint32_t add_kernel(Kernel& kernel, const LaunchConfig& config, std::span<const std::byte> args,
                      std::span<const DeclaredAccess> accesses, bool derive_access = false);
  uint32_t add_copy(void* dst, const void* src, size_t size, CopyKind kind);
  uint32_t add_fill(void* dst, size_t size, std::span<const std::byte> pattern);
  // `to` runs after `from`.
  void add_dependency(uint32_t from, uint32_t to);

  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<std::pair<uint32_t, uint32_t>>& dependencies() const { return dependencies_; }

 private:
  uint32_t next_id() const;
  std::vector<Node> nodes_;
  std::vector<std::pair<uint32_t, uint32_t>> dependencies_;
};

// The device's live allocations (lr_malloc and lr_host_malloc), sorted.
class AllocationTable {
 public:
  void add(uintptr_t base, uint64_t size);
  void finish();  // sorts; call once after the last add
  // The allocation holding p, or nullptr.
  const Range* find(uintptr_t p) const;

 private:
  std::vector<Range> ranges_;
};

enum Hazard : uint8_t {
  kHazardRaw = 1,       // read after write: the consumer needs the producer's data
  kHazardWar = 2,       // write after read
  kHazardWaw = 4,       // write after write
  kHazardExplicit = 8,  // lr_graph_add_dependency
};
std::string hazard_names(uint8_t hazards);  // "RAW+WAW", "explicit"

struct Edge {
  uint32_t from = 0;
  uint32_t to = 0;
  uint8_t hazards = 0;
  Range range;  // the first overlapping bytes that made the edge; empty for explicit
};

struct ResolvedAccess {
  Range range;
  AccessMode mode = AccessMode::Read;
  bool device_side = true;
  // Declared by the caller, or derived for a kernel step recorded with
  // LR_GRAPH_KERNEL_DERIVE_ACCESS (lrrt plan shows it).
  formats::AccessSource source = formats::AccessSource::Declared;
};

// Ancestor sets, one bit per node: bit a of row v is set when a must finish
// before v starts.
class Reachability {
 public:
  // rows x bits, all clear (bits defaults to rows: one row per node).
  void reset(uint32_t rows, uint32_t bits = UINT32_MAX);
  bool empty() const { return words_ == 0; }
  bool test(uint32_t row, uint32_t bit) const {
    return (bits_[size_t(row) * words_ + bit / 64] >> (bit % 64)) & 1;
  }
  void set(uint32_t row, uint32_t bit) { bits_[size_t(row) * words_ + bit / 64] |= uint64_t(1) << (bit % 64); }
  void merge_row(uint32_t row, uint32_t from);  // row |= from
  void merge_bits(uint32_t row, std::span<const uint64_t> bits);  // row |= bits (same width)
  std::span<const uint64_t> row(uint32_t r) const { return {bits_.data() + size_t(r) * words_, words_}; }
  size_t words() const { return words_; }

 private:
  size_t words_ = 0;
  std::vector<uint64_t> bits_;
};

// Largest graph whose edges are transitively reduced (n^2 bits of ancestor
// sets: 32 MiB at this size). Larger graphs keep every derived edge (still
// correct, some redundant) and assign lanes without ancestor sets.
constexpr uint32_t kMaxReducedNodes = 16384;

struct DeriveOptions {
  // Test-only negative control (LRRT_TEST_DROP_EDGE): removes this edge of
  // the reduced list, so a replay misses one dependency on purpose.
  std::optional<uint32_t> drop_edge;
};

struct Derived {
  uint32_t node_count = 0;
  std::vector<std::vector<ResolvedAccess>> accesses;  // per node
  std::vector<Edge> edges;  // after reduction, sorted by (to, from)
  std::vector<std::vector<uint32_t>> preds;  // per node, from `edges`
  std::vector<std::vector<uint32_t>> succs;
  std::vector<uint32_t> order;     // topological; recording order among independent nodes
  std::vector<uint32_t> position;  // node -> index in `order`
  // Every true read-after-write pair, also those whose edge the reduction
  // removed: the producer's writes must be made visible to the consumer
  // (cache fences), even when the ordering comes through other nodes.
  std::vector<std::pair<uint32_t, uint32_t>> raw_pairs;
  // Every derived data hazard (RAW, WAR, WAW; not explicit edges), also
  // those the reduction removed, with its hazard bits: a kernel whose data a
  // later copy-engine operation touches, or a later kernel writes, needs a
  // release the ordering alone does not give (graph/aql_plan.hpp).
  std::vector<Edge> conflicts;
  uint32_t edges_derived = 0;  // before the reduction
  bool reduced = false;
  std::optional<Edge> dropped_for_test;
  Reachability ancestors;  // empty when not reduced

  // True when a must finish before b starts (conservatively false without
  // ancestor sets, except for direct edges).
  bool precedes(uint32_t a, uint32_t b) const;
};

// Validates the recording against the allocations and derives its edges.
// Throws LR_ERROR_INVALID_ARGUMENT naming the node (and argument) for a
// pointer outside every allocation, a kernel pointer argument no declared
// range covers, a range past its allocation's end, or a dependency cycle.
Derived derive(const Graph& graph, const AllocationTable& allocations, const DeriveOptions& options = {});

// Checks a kernel node's argument bytes: every non-null pointer argument must
// lie inside an allocation (global buffers) and inside one of the node's
// declared ranges. Also used when arguments are patched between replays.
void check_kernel_args(const std::vector<Node>& nodes, uint32_t id, std::span<const std::byte> args,
                       const std::vector<ResolvedAccess>& accesses, const AllocationTable& allocations);

// True when argument bytes [offset, offset + size) of a kernel step overlap
// an argument check_kernel_args inspects (a patch that needs the check).
bool touches_pointer_args(const KernelStep& step, size_t offset, size_t size);

// Throws when a device-side range is no longer inside a live allocation
// (a buffer freed after instantiation).
void check_still_allocated(const std::vector<Node>& nodes, const std::vector<std::vector<ResolvedAccess>>& accesses,
                           const AllocationTable& allocations);

struct Lanes {
  uint32_t count = 1;              // lanes used
  uint32_t width = 1;              // most nodes at one depth: the independent width
  std::vector<uint32_t> of;        // lane of each node
};

// Spreads independent branches over min(max_lanes, width) lanes, keeping
// chains on one lane. The last node in `order` is on lane 0, so a replay
// ends on the queue it was launched on.
Lanes assign_lanes(const Derived& derived, uint32_t max_lanes);

}  // namespace lrrt::rt::graph

// The graph core without a device: recording checks, hazard derivation
// (RAW, WAR, WAW, ranges, explicit edges), the transitive reduction, cycle,
// undeclared-argument and unknown-pointer errors, lanes, the test-only
// dropped edge.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <string>

#include "error.hpp"
#include "graph/graph.hpp"
#include "graph/plan.hpp"
#include "graph_test_support.hpp"

using namespace lrrt::rt;
using lrrt::Error;
using namespace lrrt::rt::graph;
using namespace lrrt::test;

namespace {

const AccessMode R = AccessMode::Read, W = AccessMode::Write, RW = AccessMode::ReadWrite;

// One kernel node that touches one buffer (its single pointer argument).
uint32_t touch(Graph& g, FakeKernel& k, uintptr_t p, AccessMode mode, uint64_t bytes = 0, uint64_t offset = 0) {
  DeclaredAccess a[] = {access(p, mode, bytes, offset)};
  return g.add_kernel(k, one_group(), pointer_args({p + offset}), a);
}

const Edge* find_edge(const Derived& d, uint32_t from, uint32_t to) {
  for (const auto& e : d.edges)
    if (e.from == from && e.to == to) return &e;
  return nullptr;
}

std::string error_of(const std::function<void()>& f, lr_status_t expected = LR_ERROR_INVALID_ARGUMENT) {
  try {
    f();
  } catch (const Error& e) {
    CHECK(e.status() == expected);
    return e.what();
  }
  FAIL("no error");
  return {};
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("graph derive: each hazard kind, and none for read/read") {
  auto k = buffers_kernel("k", 1);
  auto table = fake_allocations();
  struct Case {
    AccessMode first, second;
    uint8_t hazards;
  } cases[] = {
      {W, R, kHazardRaw}, {R, W, kHazardWar}, {W, W, kHazardWaw}, {R, R, 0},
      {RW, RW, kHazardRaw | kHazardWar | kHazardWaw}, {RW, R, kHazardRaw}, {R, RW, kHazardWar},
  };
  for (const auto& c : cases) {
    Graph g;
    touch(g, k, kBufA, c.first);
    touch(g, k, kBufA, c.second);
    Derived d = derive(g, table);
    CAPTURE(access_mode_name(c.first));
    CAPTURE(access_mode_name(c.second));
    if (c.hazards == 0) {
      CHECK(d.edges.empty());
      continue;
    }
    REQUIRE(d.edges.size() == 1);
    CHECK(d.edges[0].from == 0);
    CHECK(d.edges[0].to == 1);
    CHECK(d.edges[0].hazards == c.hazards);
    CHECK(d.edges[0].range.begin == kBufA);
    CHECK(d.edges[0].range.end == kBufA + kBufBytes);
    CHECK((d.raw_pairs.size() == 1) == bool(c.hazards & kHazardRaw));
  }
  CHECK(hazard_names(kHazardRaw | kHazardWaw) == "RAW+WAW");
  CHECK(hazard_names(kHazardExplicit) == "explicit");
}

TEST_CASE("graph derive: byte ranges of one buffer order only when they overlap") {
  auto k = buffers_kernel("k", 1);
  auto table = fake_allocations();
  Graph g;
  touch(g, k, kBufA, W, 2048, 0);     // 0: [0, 2048)
  touch(g, k, kBufA, W, 2048, 2048);  // 1: [2048, 4096) disjoint from 0
  touch(g, k, kBufA, R, 16, 2040);    // 2: [2040, 2056) reads both
  touch(g, k, kBufA, W, 0, 3000);     // 3: [3000, end) overlaps 1 (WAW) not 2
  Derived d = derive(g, table);
  CHECK(find_edge(d, 0, 1) == nullptr);
  const Edge* e02 = find_edge(d, 0, 2);
  const Edge* e12 = find_edge(d, 1, 2);
  REQUIRE(e02);
  REQUIRE(e12);
  CHECK(e02->hazards == kHazardRaw);
  CHECK(e02->range.begin == kBufA + 2040);
  CHECK(e02->range.end == kBufA + 2048);
  CHECK(e12->range.begin == kBufA + 2048);
  CHECK(e12->range.end == kBufA + 2056);
  const Edge* e13 = find_edge(d, 1, 3);
  REQUIRE(e13);
  CHECK(e13->hazards == kHazardWaw);
  CHECK(find_edge(d, 2, 3) == nullptr);  // [2040, 2056) and [3000, 4096) are disjoint
  CHECK(d.edges.size() == 3);
  // bytes = 0 reached the end of the allocation.
  CHECK(d.accesses[3][0].range.end == kBufA + kBufBytes);
}

TEST_CASE("graph derive: the transitive reduction keeps only needed edges, RAW pairs survive it") {
  auto k1 = buffers_kernel("one", 1);
  auto k2 = buffers_kernel("two", 2);
  auto table = fake_allocations();
  Graph g;
  touch(g, k1, kBufA, W);  // 0: A = ...
  {
    DeclaredAccess a[] = {access(kBufA, R), access(kBufB, W)};  // 1: B = f(A)
    g.add_kernel(k2, one_group(), pointer_args({kBufA, kBufB}), a);
  }
  {
    DeclaredAccess a[] = {access(kBufA, R), access(kBufB, R)};  // 2: reads A and B
    g.add_kernel(k2, one_group(), pointer_args({kBufA, kBufB}), a);
  }
  Derived d = derive(g, table);
  CHECK(d.reduced);
  CHECK(d.edges_derived == 3);
  REQUIRE(d.edges.size() == 2);
  CHECK(find_edge(d, 0, 1));
  CHECK(find_edge(d, 1, 2));
  CHECK(find_edge(d, 0, 2) == nullptr);
  // 0 -> 2 is still a read-after-write: its fences must not be lost.
  CHECK(std::find(d.raw_pairs.begin(), d.raw_pairs.end(), std::make_pair(0u, 2u)) != d.raw_pairs.end());
  CHECK(d.precedes(0, 2));
  CHECK_FALSE(d.precedes(2, 0));

  // A read-modify-write chain keeps exactly one edge per step.
  Graph chain;
  for (int i = 0; i < 100; ++i) touch(chain, k1, kBufC, RW);
  Derived c = derive(chain, table);
  REQUIRE(c.edges.size() == 99);
  for (uint32_t i = 0; i < 99; ++i) {
    CHECK(c.edges[i].from == i);
    CHECK(c.edges[i].to == i + 1);
    CHECK(c.edges[i].hazards == (kHazardRaw | kHazardWar | kHazardWaw));
  }
  CHECK(c.precedes(0, 99));
}

TEST_CASE("graph derive: readers of one buffer are independent, a later writer waits for each") {
  auto k = buffers_kernel("k", 1);
  auto table = fake_allocations();
  Graph g;
  touch(g, k, kBufA, W);
  for (int i = 0; i < 8; ++i) touch(g, k, kBufA, R);
  touch(g, k, kBufA, W);
  Derived d = derive(g, table);
  // 0 -> each reader (RAW), each reader -> 9 (WAR); 0 -> 9 is implied.
  CHECK(d.edges.size() == 16);
  for (uint32_t r = 1; r <= 8; ++r) {
    CHECK(find_edge(d, 0, r));
    REQUIRE(find_edge(d, r, 9));
    CHECK(find_edge(d, r, 9)->hazards == kHazardWar);
    for (uint32_t s = 1; s <= 8; ++s) CHECK(find_edge(d, r, s) == nullptr);
  }
  CHECK(find_edge(d, 0, 9) == nullptr);
}

TEST_CASE("graph derive: explicit edges, merged with hazards, may point backwards in recording order") {
  auto k = buffers_kernel("k", 1);
  auto table = fake_allocations();
  Graph g;
  touch(g, k, kBufA, W);  // 0
  touch(g, k, kBufB, W);  // 1, independent of 0
  touch(g, k, kBufA, R);  // 2, RAW on 0
  g.add_dependency(1, 0);  // 0 after 1
  g.add_dependency(0, 2);  // duplicates the RAW edge
  Derived d = derive(g, table);
  REQUIRE(find_edge(d, 1, 0));
  CHECK(find_edge(d, 1, 0)->hazards == kHazardExplicit);
  REQUIRE(find_edge(d, 0, 2));
  CHECK(find_edge(d, 0, 2)->hazards == (kHazardRaw | kHazardExplicit));
  CHECK(d.order == std::vector<uint32_t>{1, 0, 2});

  CHECK(contains(error_of([&] { g.add_dependency(0, 0); }), "cannot depend on itself"));
  CHECK(contains(error_of([&] { g.add_dependency(0, 7); }), "names a node the graph does not have"));
}

TEST_CASE("graph derive: a cycle through an explicit edge is rejected, naming its nodes") {
  auto k = buffers_kernel("producer", 1);
  auto c = buffers_kernel("consumer", 1);
  auto table = fake_allocations();
  Graph g;
  touch(g, k, kBufA, W);  // 0
  touch(g, c, kBufA, R);  // 1: RAW on 0
  touch(g, k, kBufB, W);  // 2: unrelated
  g.add_dependency(1, 0);
  std::string msg = error_of([&] { derive(g, table); });
  CAPTURE(msg);
  CHECK(contains(msg, "cycle"));
  CHECK(contains(msg, "node 0 (kernel 'producer') -[RAW]-> node 1 (kernel 'consumer') -[explicit]-> node 0"));
  CHECK_FALSE(contains(msg, "node 2"));
}

TEST_CASE("graph derive: undeclared buffer arguments and unknown pointers are named") {
  auto saxpy = make_kernel("saxpy", {{"a", LR_ARG_BY_VALUE, 4},
                                     {"x", LR_ARG_GLOBAL_BUFFER, 8},
                                     {"y", LR_ARG_GLOBAL_BUFFER, 8},
                                     {"n", LR_ARG_BY_VALUE, 4}});
  auto table = fake_allocations();
  auto args = [](uintptr_t x, uintptr_t y) {
    std::vector<std::byte> a(28);
    float s = 2.0f;
    uint32_t n = 1024;
    std::memcpy(a.data(), &s, 4);
    std::memcpy(a.data() + 8, &x, 8);
    std::memcpy(a.data() + 16, &y, 8);
    std::memcpy(a.data() + 24, &n, 4);
    return a;
  };
  {
    Graph g;
    DeclaredAccess a[] = {access(kBufA, R)};
    g.add_kernel(saxpy, one_group(), args(kBufA, kBufB), a);
    std::string msg = error_of([&] { derive(g, table); });
    CHECK(contains(msg, "node 0 (kernel 'saxpy')"));
    CHECK(contains(msg, "argument 'y' (offset 16)"));
    CHECK(contains(msg, "no access declaration"));
  }
  {
    // A pointer to the middle of a declared range is covered; outside it is not.
    Graph g;
    DeclaredAccess a[] = {access(kBufA, R), access(kBufB, RW, 1024, 0)};
    g.add_kernel(saxpy, one_group(), args(kBufA + 100, kBufB + 512), a);
    CHECK_NOTHROW(derive(g, table));
    Graph g2;
    g2.add_kernel(saxpy, one_group(), args(kBufA, kBufB + 2048), a);
    CHECK(contains(error_of([&] { derive(g2, table); }), "argument 'y'"));
  }
  {
    Graph g;
    DeclaredAccess a[] = {access(kBufA, R), access(kBufB, RW)};
    g.add_kernel(saxpy, one_group(), args(0x7777000, kBufB), a);  // x outside every allocation
    std::string msg = error_of([&] { derive(g, table); });
    CHECK(contains(msg, "argument 'x' (offset 8) is the pointer 0x7777000"));
    CHECK(contains(msg, "not inside any allocation"));
  }
  {
    // A null buffer argument is allowed (the kernel may not use it).
    Graph g;
    DeclaredAccess a[] = {access(kBufB, RW)};
    g.add_kernel(saxpy, one_group(), args(0, kBufB), a);
    CHECK_NOTHROW(derive(g, table));
  }
  {
    Graph g;
    DeclaredAccess a[] = {access(kBufA, R), access(0x9990000, W)};
    g.add_kernel(saxpy, one_group(), args(kBufA, kBufB), a);
    std::string msg = error_of([&] { derive(g, table); });
    CHECK(contains(msg, "access 1 (write) starts at 0x9990000"));
    CHECK(contains(msg, "not inside any allocation"));
  }
  {
    Graph g;
    DeclaredAccess a[] = {access(kBufA, R), access(kBufB, W, 4000, 100)};
    g.add_kernel(saxpy, one_group(), args(kBufA, kBufB + 100), a);
    std::string msg = error_of([&] { derive(g, table); });
    CHECK(contains(msg, "access 1 (write)"));
    CHECK(contains(msg, "4 bytes past the end of its allocation"));
  }
  {
    // Copies: the device side must be allocated, the host side may be anything.
    Graph g;
    g.add_copy(reinterpret_cast<void*>(kBufA), reinterpret_cast<const void*>(0x5550000), 64,
               CopyKind::HostToDevice);
    CHECK_NOTHROW(derive(g, table));
    Graph g2;
    g2.add_copy(reinterpret_cast<void*>(0x5550000), reinterpret_cast<const void*>(0x6660000), 64,
                CopyKind::DeviceToDevice);
    std::string msg = error_of([&] { derive(g2, table); });
    CHECK(contains(msg, "node 0 (copy D2D 64 B): source (read) starts at 0x6660000"));
  }
}

TEST_CASE("graph derive: 8-byte values that point into allocations count as buffers") {
  // A layout without pointer types (cuda's parameter info): an 8-byte value
  // inside an allocation must be declared; other 8-byte values are scalars.
  auto k = make_kernel("k", {{"p", LR_ARG_BY_VALUE, 8}, {"count", LR_ARG_BY_VALUE, 8}});
  auto table = fake_allocations();
  Graph g;
  g.add_kernel(k, one_group(), pointer_args({kBufA, 12345}), {});
  CHECK(contains(error_of([&] { derive(g, table); }), "argument 'p' (offset 0)"));
  Graph ok;
  DeclaredAccess a[] = {access(kBufA, R)};
  ok.add_kernel(k, one_group(), pointer_args({kBufA, 12345}), a);
  CHECK_NOTHROW(derive(ok, table));

  // No layout at all: every aligned word is looked at.
  auto opaque = make_kernel("opaque", {}, false);
  Graph g2;
  g2.add_kernel(opaque, one_group(), pointer_args({7, kBufC + 8}), {});
  CHECK(contains(error_of([&] { derive(g2, table); }), "the 8 argument bytes at offset 8"));

  // Patches: only bytes over pointer arguments need the pointer check.
  auto saxpy = make_kernel("saxpy", {{"a", LR_ARG_BY_VALUE, 4},
                                     {"x", LR_ARG_GLOBAL_BUFFER, 8},
                                     {"y", LR_ARG_GLOBAL_BUFFER, 8},
                                     {"n", LR_ARG_BY_VALUE, 4}});
  KernelStep step{&saxpy, {}, std::vector<std::byte>(28)};
  CHECK_FALSE(touches_pointer_args(step, 0, 4));
  CHECK(touches_pointer_args(step, 4, 8));
  CHECK(touches_pointer_args(step, 20, 2));
  CHECK_FALSE(touches_pointer_args(step, 24, 4));
}

TEST_CASE("graph derive: a freed buffer is caught before a replay") {
  auto k = buffers_kernel("k", 1);
  Graph g;
  touch(g, k, kBufB, RW);
  Derived d = derive(g, fake_allocations());
  CHECK_NOTHROW(check_still_allocated(g.nodes(), d.accesses, fake_allocations()));
  AllocationTable without_b;
  without_b.add(kBufA, kBufBytes);
  without_b.finish();
  std::string msg = error_of([&] { check_still_allocated(g.nodes(), d.accesses, without_b); });
  CHECK(contains(msg, "node 0 (kernel 'k'): access 0"));
  CHECK(contains(msg, "no longer allocated"));
}

TEST_CASE("graph recording: bad steps are refused at once") {
  auto k = buffers_kernel("k", 2);
  Graph g;
  CHECK(contains(error_of([&] { g.add_kernel(k, one_group(), pointer_args({kBufA}), {}); }),
                 "takes 16 bytes of explicit arguments"));
  DeclaredAccess bad_mode[] = {{kBufA, 0, 0, AccessMode(7), true}};
  CHECK(contains(error_of([&] { g.add_kernel(k, one_group(), pointer_args({kBufA, kBufB}), bad_mode); }),
                 "access 0 has mode 7"));
  DeclaredAccess null_ptr[] = {{0, 0, 0, AccessMode::Read, true}};
  CHECK(contains(error_of([&] { g.add_kernel(k, one_group(), pointer_args({kBufA, kBufB}), null_ptr); }),
                 "null pointer"));
  std::byte pattern[3] = {};
  CHECK(contains(error_of([&] { g.add_fill(reinterpret_cast<void*>(kBufA), 12, {pattern, 3}); }), "1, 2 or 4"));
  CHECK(contains(error_of([&] { g.add_fill(reinterpret_cast<void*>(kBufA), 6, {pattern, 4}); }),
                 "not a multiple"));
  CHECK(contains(error_of([&] { g.add_copy(reinterpret_cast<void*>(kBufA), reinterpret_cast<void*>(kBufB), 0,
                                           CopyKind::DeviceToDevice); }),
                 "size is zero"));
  CHECK(g.nodes().empty());
}

TEST_CASE("graph lanes: chains stay on one lane, branches spread, the last node is on lane 0") {
  auto k1 = buffers_kernel("k", 1);
  auto k3 = buffers_kernel("join", 3);
  auto table = fake_allocations();
  {
    Graph chain;
    for (int i = 0; i < 10; ++i) touch(chain, k1, kBufA, RW);
    Derived d = derive(chain, table);
    Lanes l = assign_lanes(d, 4);
    CHECK(l.width == 1);
    CHECK(l.count == 1);
    for (uint32_t v = 0; v < 10; ++v) CHECK(l.of[v] == 0);
  }
  {
    // Diamond: P writes A; C1 reads A writes B; C2 reads A writes C; J reads B, C writes D.
    Graph g;
    touch(g, k1, kBufA, W);
    DeclaredAccess c1[] = {access(kBufA, R), access(kBufB, W)};
    DeclaredAccess c2[] = {access(kBufA, R), access(kBufC, W)};
    DeclaredAccess j[] = {access(kBufB, R), access(kBufC, R), access(kBufD, W)};
    auto k2 = buffers_kernel("k2", 2);
    g.add_kernel(k2, one_group(), pointer_args({kBufA, kBufB}), c1);
    g.add_kernel(k2, one_group(), pointer_args({kBufA, kBufC}), c2);
    g.add_kernel(k3, one_group(), pointer_args({kBufB, kBufC, kBufD}), j);
    Derived d = derive(g, table);
    CHECK(d.edges.size() == 4);
    CHECK(find_edge(d, 1, 2) == nullptr);  // the two branches are independent
    Lanes l = assign_lanes(d, 2);
    CHECK(l.width == 2);
    CHECK(l.count == 2);
    CHECK(l.of == std::vector<uint32_t>{0, 0, 1, 0});
    Lanes one = assign_lanes(d, 1);
    CHECK(one.count == 1);
    CHECK(one.of == std::vector<uint32_t>{0, 0, 0, 0});

    // The plan carries it all.
    Plan plan = make_plan(g, d, l, 2);
    std::string json = plan_to_json(plan);
    CHECK(contains(json, R"("lanes":2)"));
    CHECK(contains(json, R"({"from":0,"to":1,"hazards":["RAW"])"));
    CHECK(contains(json, R"("name":"join","lane":0,"order":3)"));
  }
  {
    // Fan-out of 8 independent nodes over 2 lanes, then a sink that must be
    // on lane 0 whichever lane its predecessor was on.
    Graph g;
    for (int i = 0; i < 8; ++i) touch(g, k1, buf(i), W);
    Derived d = derive(g, table);
    CHECK(d.edges.empty());
    Lanes l = assign_lanes(d, 2);
    CHECK(l.width == 8);
    CHECK(l.count == 2);
    CHECK(l.of.back() == 0);
    int on_zero = 0;
    for (auto lane : l.of) on_zero += lane == 0;
    CHECK(on_zero == 4);
  }
}

TEST_CASE("graph derive: the test-only dropped edge really disappears") {
  auto k = buffers_kernel("k", 1);
  auto table = fake_allocations();
  Graph g;
  for (int i = 0; i < 4; ++i) touch(g, k, kBufA, RW);
  DeriveOptions options;
  options.drop_edge = 1;  // 1 -> 2
  Derived d = derive(g, table, options);
  REQUIRE(d.dropped_for_test);
  CHECK(d.dropped_for_test->from == 1);
  CHECK(d.dropped_for_test->to == 2);
  CHECK(d.edges.size() == 2);
  CHECK(find_edge(d, 1, 2) == nullptr);
  CHECK_FALSE(d.precedes(1, 2));
  CHECK_FALSE(d.precedes(0, 3));  // no longer implied through 1 -> 2
  CHECK(std::find(d.raw_pairs.begin(), d.raw_pairs.end(), std::make_pair(1u, 2u)) == d.raw_pairs.end());
  Lanes l = assign_lanes(d, 2);
  std::string json = plan_to_json(make_plan(g, d, l, 2));
  CHECK(contains(json, R"("dropped_for_test":{"from":1,"to":2)"));
}

TEST_CASE("graph derive: graphs beyond the reduction limit keep every derived edge") {
  auto k = buffers_kernel("k", 1);
  auto table = fake_allocations();
  Graph g;
  const uint32_t n = kMaxReducedNodes + 1;
  for (uint32_t i = 0; i < n; ++i) touch(g, k, kBufA, RW);
  Derived d = derive(g, table);
  CHECK_FALSE(d.reduced);
  CHECK(d.ancestors.empty());
  CHECK(d.edges.size() == n - 1);
  CHECK(d.precedes(5, 6));
  Lanes l = assign_lanes(d, 2);
  CHECK(l.count == 1);
}

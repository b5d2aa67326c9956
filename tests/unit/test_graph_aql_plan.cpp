// The AQL fence planner (graph/aql_plan.hpp) pinned: packet headers (type,
// barrier bit, acquire and release scopes), barrier-AND packets and signals
// for a chain, a diamond (two lanes and one), WAR-only and WAW-only pairs,
// disjoint ranges of one buffer, a fan-in wider than 5, the copy engine.
#include <doctest/doctest.h>

#include <string>

#include "graph/aql_plan.hpp"
#include "graph/graph.hpp"
#include "graph/plan.hpp"
#include "graph_test_support.hpp"
#if defined(LRRT_TEST_HSA)
#include "hsa/aql.hpp"
#endif

using namespace lrrt::rt;
using namespace lrrt::rt::graph;
using namespace lrrt::test;

namespace {

const AccessMode R = AccessMode::Read, W = AccessMode::Write, RW = AccessMode::ReadWrite;
constexpr uint16_t kDispatch = 2, kBarrierAnd = 3;  // hsa_packet_type_t

// The 16-bit AQL header of a planned packet: type, barrier (bit 8), acquire
// scope (bits 9-10), release scope (bits 11-12).
uint16_t header(const AqlPacket& p) {
  uint16_t type = p.type == AqlPacket::Type::Dispatch ? kDispatch : kBarrierAnd;
  uint16_t h = uint16_t(type | (p.barrier ? 1 << 8 : 0) | (uint16_t(p.acquire) << 9) | (uint16_t(p.release) << 11));
#if defined(LRRT_TEST_HSA)
  // The hsa lowering encodes with hsa/aql.hpp: the same bits.
  CHECK(h == hsa::packet_header(hsa_packet_type_t(type), p.barrier, hsa_fence_scope_t(p.acquire),
                                hsa_fence_scope_t(p.release)));
#endif
  return h;
}

std::vector<uint16_t> headers(const std::vector<AqlPacket>& lane) {
  std::vector<uint16_t> out;
  for (const auto& p : lane) out.push_back(header(p));
  return out;
}

uint32_t touch(Graph& g, FakeKernel& k, uintptr_t p, AccessMode mode, uint64_t bytes = 0, uint64_t offset = 0) {
  DeclaredAccess a[] = {access(p, mode, bytes, offset)};
  return g.add_kernel(k, one_group(), pointer_args({p + offset}), a);
}

struct Planned {
  Derived derived;
  Lanes lanes;
  AqlPlan plan;
};

Planned plan_for(const Graph& g, uint32_t max_lanes) {
  Planned p{derive(g, fake_allocations()), {}, {}};
  p.lanes = assign_lanes(p.derived, max_lanes);
  p.plan = plan_aql(g, p.derived, p.lanes);
  return p;
}

// Header values used below (barrier B, acquire/release scope n/a/s):
constexpr uint16_t kDispB_AcqS_RelA = 0x0D02;  // dispatch, barrier, acquire system, release agent
constexpr uint16_t kDispB_AcqA_RelA = 0x0B02;
constexpr uint16_t kDispB_AcqA = 0x0302;
constexpr uint16_t kDispB_AcqS = 0x0502;
constexpr uint16_t kDispB = 0x0102;
constexpr uint16_t kDisp = 0x0002;
constexpr uint16_t kDisp_RelA = 0x0802;
constexpr uint16_t kDisp_AcqA_RelA = 0x0A02;
constexpr uint16_t kDisp_AcqA = 0x0202;
constexpr uint16_t kBarB_RelS = 0x1103;   // barrier-AND, barrier, release system (terminal, lane end)
constexpr uint16_t kBarB = 0x0103;        // barrier-AND, barrier, no fence (fork, lane start)
constexpr uint16_t kBar = 0x0003;         // barrier-AND waiting for other lanes
// A lane's first dispatch acquires at system scope, never the barrier-AND
// before it (whose acquire happens before its wait completes).
constexpr uint16_t kDisp_AcqS_RelA = 0x0C02;
constexpr uint16_t kDisp_AcqS = 0x0402;

}  // namespace

TEST_CASE("aql plan: a read-modify-write chain") {
  auto k = buffers_kernel("k", 1);
  Graph g;
  for (int i = 0; i < 3; ++i) touch(g, k, kBufA, RW);
  auto p = plan_for(g, 2);
  REQUIRE(p.plan.lanes.size() == 1);
  // First: barrier (follows earlier work), system acquire, agent release for
  // the next reader; middle: barrier, agent acquire and release; last: no
  // release (the terminal packet releases at system scope).
  CHECK(headers(p.plan.lanes[0]) == std::vector<uint16_t>{kDispB_AcqS_RelA, kDispB_AcqA_RelA, kDispB_AcqA, kBarB_RelS});
  const auto& lane = p.plan.lanes[0];
  CHECK(lane[0].node == 0);
  CHECK(lane[2].node == 2);
  for (int i = 0; i < 3; ++i) CHECK(lane[i].completion == -1);  // nothing waits for a signal
  CHECK(lane[3].wait.empty());
  CHECK(lane[3].completion == int64_t(p.plan.replay_done));
  CHECK(p.plan.signals.size() == 1);
  CHECK(p.plan.signals[p.plan.replay_done].kind == AqlSignal::Kind::ReplayDone);
  CHECK(p.plan.engine_ops.empty());
  CHECK(lane[1].why.find("barrier: depends on nodes 0") != std::string::npos);
  CHECK(lane[1].why.find("acquire agent: reads what nodes 0 wrote (RAW)") != std::string::npos);
}

TEST_CASE("aql plan: a WAR pair orders without a cache fence, a WAW pair releases the first writer at agent scope") {
  auto k = buffers_kernel("k", 1);
  {
    Graph g;
    touch(g, k, kBufA, R);
    touch(g, k, kBufA, W);
    auto p = plan_for(g, 2);
    REQUIRE(p.plan.lanes.size() == 1);
    CHECK(headers(p.plan.lanes[0]) == std::vector<uint16_t>{kDispB_AcqS, kDispB, kBarB_RelS});
  }
  {
    // gfx942 has an L2 per XCD: the first writer's lines must be written
    // back before the second writer's can be (docs/backends/hsa.md).
    Graph g;
    touch(g, k, kBufA, W);
    touch(g, k, kBufA, W);
    auto p = plan_for(g, 2);
    REQUIRE(p.plan.lanes.size() == 1);
    CHECK(headers(p.plan.lanes[0]) == std::vector<uint16_t>{kDispB_AcqS_RelA, kDispB, kBarB_RelS});
    CHECK(p.plan.lanes[0][0].why.find("release agent: nodes 1 write over what it writes (WAW)") != std::string::npos);
  }
}

TEST_CASE("aql plan: a kernel whose data the copy engine touches later releases at system scope") {
  // Issue 24: the copy engine bypasses the agent's L2, so a kernel's dirty
  // lines must reach memory before a fill or copy writes (or reads) the
  // same range, also when the ordering comes through another kernel.
  auto k = buffers_kernel("k", 1);
  const std::byte zero[4] = {};
  constexpr uint16_t kDispB_AcqS_RelS = 0x1502, kDispB_AcqA_RelS = 0x1302, kDisp_RelS = 0x1002;
  SUBCASE("a kernel writes, a fill overwrites (WAW)") {
    Graph g;
    touch(g, k, kBufA, W);                                 // 0
    g.add_fill(reinterpret_cast<void*>(kBufA), 4096, zero);  // 1
    auto p = plan_for(g, 2);
    REQUIRE(p.plan.lanes.size() == 1);
    CHECK(headers(p.plan.lanes[0]) == std::vector<uint16_t>{kDispB_AcqS_RelS, kBarB_RelS});
    CHECK(p.plan.lanes[0][0].why.find("release system: copy-engine nodes 1 touch its data") != std::string::npos);
  }
  SUBCASE("a kernel writes, another reads, a fill overwrites: the reduced WAW pair still fences") {
    Graph g;
    touch(g, k, kBufA, W);                                 // 0
    touch(g, k, kBufA, R);                                 // 1
    g.add_fill(reinterpret_cast<void*>(kBufA), 4096, zero);  // 2
    auto p = plan_for(g, 1);
    // 0 -> 2 (WAW) is implied by 0 -> 1 -> 2 and reduced away.
    CHECK(std::none_of(p.derived.edges.begin(), p.derived.edges.end(),
                       [](const Edge& e) { return e.from == 0 && e.to == 2; }));
    REQUIRE(p.plan.lanes.size() == 1);
    // Node 1 completes a signal the fill waits for: no barrier needed
    // between them, but node 1 has the barrier bit for node 0.
    CHECK(headers(p.plan.lanes[0]) == std::vector<uint16_t>{kDispB_AcqS_RelS, kDispB_AcqA_RelS, kBarB_RelS});
  }
  SUBCASE("a kernel reads, a host-to-device copy overwrites (WAR)") {
    Graph g;
    touch(g, k, kBufA, R);  // 0
    g.add_copy(reinterpret_cast<void*>(kBufA), reinterpret_cast<const void*>(0x5550000), 64,
               CopyKind::HostToDevice);  // 1
    auto p = plan_for(g, 2);
    REQUIRE(p.plan.lanes.size() == 1);
    CHECK(headers(p.plan.lanes[0]) == std::vector<uint16_t>{kDispB_AcqS_RelS, kBarB_RelS});
  }
  SUBCASE("a fill writes, a kernel writes part of it (WAW): system acquire") {
    Graph g;
    g.add_fill(reinterpret_cast<void*>(kBufA), 4096, zero);  // 0
    touch(g, k, kBufA, W, 64);                               // 1
    auto p = plan_for(g, 2);
    REQUIRE(p.plan.lanes.size() == 1);
    // fork, barrier-AND for the fill, the kernel, terminal.
    CHECK(headers(p.plan.lanes[0]) == std::vector<uint16_t>{kBarB, kBar, kDisp_AcqS, kBarB_RelS});
    CHECK(p.plan.lanes[0][2].why.find("acquire system: writes over what copy-engine nodes 0 wrote (WAW") !=
          std::string::npos);
  }
  (void)kDisp_RelS;
}

TEST_CASE("aql plan: disjoint ranges of one buffer need no barrier") {
  auto k = buffers_kernel("k", 1);
  Graph g;
  touch(g, k, kBufA, W, 2048, 0);
  touch(g, k, kBufA, W, 2048, 2048);
  touch(g, k, kBufA, R, 1024, 1024);  // reads only the first half: RAW on node 0 alone
  auto one = plan_for(g, 1);
  REQUIRE(one.plan.lanes.size() == 1);
  // Node 1 starts without waiting for node 0; node 2 needs node 0, which is
  // in the open run (nothing since had the barrier bit).
  CHECK(headers(one.plan.lanes[0]) == std::vector<uint16_t>{kDispB_AcqS_RelA, kDisp, kDispB_AcqA, kBarB_RelS});
  CHECK(one.derived.edges.size() == 1);

  // With two lanes the independent writers go to different queues.
  auto two = plan_for(g, 2);
  CHECK(two.lanes.count == 2);
  CHECK(two.lanes.of[0] != two.lanes.of[1]);
}

TEST_CASE("aql plan: a diamond on two lanes and on one") {
  auto k1 = buffers_kernel("k1", 1);
  auto k2 = buffers_kernel("k2", 2);
  auto k3 = buffers_kernel("k3", 3);
  Graph g;
  touch(g, k1, kBufA, W);  // 0 P
  DeclaredAccess c1[] = {access(kBufA, R), access(kBufB, W)};
  DeclaredAccess c2[] = {access(kBufA, R), access(kBufC, W)};
  DeclaredAccess j[] = {access(kBufB, R), access(kBufC, R), access(kBufD, W)};
  g.add_kernel(k2, one_group(), pointer_args({kBufA, kBufB}), c1);                // 1 C1
  g.add_kernel(k2, one_group(), pointer_args({kBufA, kBufC}), c2);                // 2 C2
  g.add_kernel(k3, one_group(), pointer_args({kBufB, kBufC, kBufD}), j);          // 3 J

  auto two = plan_for(g, 2);
  REQUIRE(two.lanes.of == std::vector<uint32_t>{0, 0, 1, 0});
  const auto& plan = two.plan;
  REQUIRE(plan.lanes.size() == 2);
  // Signals: P done (C2 on lane 1 waits), C2 done (J waits), fork, lane 1
  // done, replay done.
  REQUIRE(plan.signals.size() == 5);
  CHECK(aql_signal_name(plan, 0) == "node 0 done");
  CHECK(aql_signal_name(plan, 1) == "node 2 done");
  CHECK(aql_signal_name(plan, 2) == "replay start");
  CHECK(aql_signal_name(plan, 3) == "lane 1 done");
  CHECK(aql_signal_name(plan, 4) == "replay done");
  // Lane 0: fork, P (no barrier: the fork had it; the lane's first
  // dispatch: system acquire), C1 (barrier: P in the open run), barrier-AND
  // for C2, J (barrier: C1 in the run), terminal.
  CHECK(headers(plan.lanes[0]) ==
        std::vector<uint16_t>{kBarB, kDisp_AcqS_RelA, kDispB_AcqA_RelA, kBar, kDispB_AcqA, kBarB_RelS});
  CHECK(plan.lanes[0][0].completion == 2);
  CHECK(plan.lanes[0][1].node == 0);
  CHECK(plan.lanes[0][1].completion == 0);
  CHECK(plan.lanes[0][2].node == 1);
  CHECK(plan.lanes[0][3].wait == std::vector<uint32_t>{1});
  CHECK(plan.lanes[0][4].node == 3);
  CHECK(plan.lanes[0][5].wait == std::vector<uint32_t>{3});
  CHECK(plan.lanes[0][5].completion == 4);
  // Lane 1: start (waits for the fork), barrier-AND for P, C2 (no barrier;
  // the lane's first dispatch: system acquire, wider than the RAW's agent),
  // lane end.
  CHECK(headers(plan.lanes[1]) == std::vector<uint16_t>{kBarB, kBar, kDisp_AcqS_RelA, kBarB_RelS});
  CHECK(plan.lanes[1][0].wait == std::vector<uint32_t>{2});
  CHECK(plan.lanes[1][1].wait == std::vector<uint32_t>{0});
  CHECK(plan.lanes[1][2].node == 2);
  CHECK(plan.lanes[1][2].completion == 1);
  CHECK(plan.lanes[1][3].completion == 3);

  // One lane: C2 needs no barrier (P finished before C1's barrier let C1 start).
  auto one = plan_for(g, 1);
  REQUIRE(one.plan.lanes.size() == 1);
  CHECK(headers(one.plan.lanes[0]) ==
        std::vector<uint16_t>{kDispB_AcqS_RelA, kDispB_AcqA_RelA, kDisp_AcqA_RelA, kDispB_AcqA, kBarB_RelS});
  CHECK(one.plan.signals.size() == 1);

  std::string json = aql_plan_to_json(plan);
  CHECK(json.find(R"({"type":"barrier_and","barrier":false,"acquire":"none","release":"none","wait":[1],)") !=
        std::string::npos);
}

TEST_CASE("aql plan: a fan-in wider than 5 waits in barrier-AND packets of at most 5 signals") {
  auto k1 = buffers_kernel("producer", 1);
  auto k7 = buffers_kernel("consumer", 7);
  Graph g;
  for (int i = 0; i < 7; ++i) touch(g, k1, buf(i), W);
  std::vector<DeclaredAccess> reads;
  std::vector<std::byte> args;
  for (int i = 0; i < 7; ++i) {
    reads.push_back(access(buf(i), R));
    auto p = pointer_args({buf(i)});
    args.insert(args.end(), p.begin(), p.end());
  }
  g.add_kernel(k7, one_group(), args, reads);
  Derived d = derive(g, fake_allocations());
  CHECK(d.edges.size() == 7);
  // The producers on lane 1, the consumer on lane 0.
  Lanes lanes;
  lanes.count = 2;
  lanes.of = {1, 1, 1, 1, 1, 1, 1, 0};
  AqlPlan plan = plan_aql(g, d, lanes);
  // Signals 0-6: the producers; 7 fork; 8 lane 1 done; 9 replay done.
  REQUIRE(plan.signals.size() == 10);
  CHECK(headers(plan.lanes[0]) == std::vector<uint16_t>{kBarB, kBar, kBar, kDisp_AcqS, kBarB_RelS});
  CHECK(plan.lanes[0][1].wait == std::vector<uint32_t>{0, 1, 2, 3, 4});
  CHECK(plan.lanes[0][2].wait == std::vector<uint32_t>{5, 6});
  CHECK(plan.lanes[0][3].node == 7);
  // Producers: independent, so no barrier bit between them.
  std::vector<uint16_t> lane1 = {kBarB};
  for (int i = 0; i < 7; ++i) lane1.push_back(i == 0 ? kDisp_AcqS_RelA : kDisp_RelA);
  lane1.push_back(kBarB_RelS);
  CHECK(headers(plan.lanes[1]) == lane1);
  for (int i = 0; i < 7; ++i) CHECK(plan.lanes[1][1 + i].completion == i);

  // The same limit, lowered: a limit of 3 splits 7 signals 3 + 3 + 1.
  AqlPlanOptions three;
  three.max_barrier_deps = 3;
  AqlPlan small = plan_aql(g, d, lanes, three);
  CHECK(small.lanes[0][1].wait.size() == 3);
  CHECK(small.lanes[0][2].wait.size() == 3);
  CHECK(small.lanes[0][3].wait.size() == 1);
#if defined(LRRT_TEST_HSA)
  CHECK(AqlPlanOptions{}.max_barrier_deps == hsa::kBarrierAndMaxDeps);
#endif
}

TEST_CASE("aql plan: copies run on the copy engine, fenced at system scope") {
  auto k = buffers_kernel("k", 1);
  Graph g;
  g.add_copy(reinterpret_cast<void*>(kBufA), reinterpret_cast<const void*>(0x5550000), 64,
             CopyKind::HostToDevice);                                       // 0 H2D
  touch(g, k, kBufA, RW);                                                   // 1 kernel
  g.add_copy(reinterpret_cast<void*>(0x6660000), reinterpret_cast<const void*>(kBufA), 64,
             CopyKind::DeviceToHost);                                       // 2 D2H
  auto p = plan_for(g, 2);
  REQUIRE(p.plan.engine_ops.size() == 2);
  // Signals: node 0, node 1 (the D2H copy waits), node 2, fork, replay done.
  CHECK(aql_signal_name(p.plan, 0) == "node 0 done");
  CHECK(aql_signal_name(p.plan, 1) == "node 1 done");
  CHECK(aql_signal_name(p.plan, 2) == "node 2 done");
  CHECK(aql_signal_name(p.plan, 3) == "replay start");
  const auto& ops = p.plan.engine_ops;
  CHECK(ops[0].node == 0);
  CHECK(ops[0].wait == std::vector<uint32_t>{3});  // the H2D copy waits for the replay start
  CHECK(ops[1].node == 2);
  CHECK(ops[1].wait == std::vector<uint32_t>{1});
  // Lane 0: fork, barrier-AND for the H2D copy, the kernel (system acquire
  // and release: the copy engine is outside the agent's caches), terminal
  // waiting for the D2H copy.
  REQUIRE(p.plan.lanes.size() == 1);
  constexpr uint16_t kDisp_AcqS_RelS = 0x1402;
  CHECK(headers(p.plan.lanes[0]) == std::vector<uint16_t>{kBarB, kBar, kDisp_AcqS_RelS, kBarB_RelS});
  CHECK(p.plan.lanes[0][1].wait == std::vector<uint32_t>{0});
  CHECK(p.plan.lanes[0][2].completion == 1);
  CHECK(p.plan.lanes[0][3].wait == std::vector<uint32_t>{2});
}

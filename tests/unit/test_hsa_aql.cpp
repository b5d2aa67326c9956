// AQL packet encoding (src/runtime/hsa/aql.hpp): header bits, setup
// dimensions, grid/workgroup fields, fences, barrier-AND.
#if defined(LRRT_TEST_HSA)
#include <doctest/doctest.h>

#include "hsa/aql.hpp"
#include "hsa/kernargs.hpp"

using namespace lrrt::rt;

TEST_CASE("hsa aql: dispatch header bits") {
  uint16_t h = hsa::kDispatchHeader;
  CHECK((h & 0xff) == HSA_PACKET_TYPE_KERNEL_DISPATCH);      // type, bits 0-7
  CHECK(((h >> 8) & 1) == 1);                                 // barrier bit
  CHECK(((h >> 9) & 3) == HSA_FENCE_SCOPE_SYSTEM);            // acquire scope
  CHECK(((h >> 11) & 3) == HSA_FENCE_SCOPE_SYSTEM);           // release scope
  CHECK(h == 0x1502);
  CHECK(hsa::packet_type(h) == HSA_PACKET_TYPE_KERNEL_DISPATCH);
  CHECK(hsa::packet_header(HSA_PACKET_TYPE_KERNEL_DISPATCH, false, HSA_FENCE_SCOPE_AGENT,
                           HSA_FENCE_SCOPE_NONE) == (2 | (1 << 9)));
}

TEST_CASE("hsa aql: barrier-AND header and dependencies") {
  uint16_t h = hsa::kBarrierAndHeader;
  CHECK((h & 0xff) == HSA_PACKET_TYPE_BARRIER_AND);
  CHECK(((h >> 8) & 1) == 1);
  hsa_barrier_and_packet_t p;
  std::memset(&p, 0xab, sizeof p);
  hsa_signal_t deps[2] = {{11}, {22}};
  hsa::encode_barrier_and(&p, deps, hsa_signal_t{33});
  CHECK(p.dep_signal[0].handle == 11);
  CHECK(p.dep_signal[1].handle == 22);
  for (int i = 2; i < 5; ++i) CHECK(p.dep_signal[i].handle == 0);
  CHECK(p.completion_signal.handle == 33);
  CHECK(p.reserved0 == 0);
  CHECK(p.reserved1 == 0);
  CHECK(p.reserved2 == 0);
  static_assert(sizeof(hsa_barrier_and_packet_t) == hsa::kAqlPacketBytes);
  static_assert(sizeof(hsa_kernel_dispatch_packet_t) == hsa::kAqlPacketBytes);
}

TEST_CASE("hsa aql: dispatch fields, setup dimensions and publication") {
  hsa_kernel_dispatch_packet_t p;
  std::memset(&p, 0xcd, sizeof p);
  LaunchConfig c;
  c.grid = {10, 3, 1};
  c.block = {16, 8, 1};
  int kernarg;
  hsa::encode_dispatch(&p, c, 0x1234, &kernarg, 512, 64, hsa_signal_t{77});
  // Body written, header untouched until publication.
  CHECK(p.header == 0xcdcd);
  CHECK(p.workgroup_size_x == 16);
  CHECK(p.workgroup_size_y == 8);
  CHECK(p.workgroup_size_z == 1);
  CHECK(p.grid_size_x == 160);  // work-items: workgroups x block
  CHECK(p.grid_size_y == 24);
  CHECK(p.grid_size_z == 1);
  CHECK(p.group_segment_size == 512);
  CHECK(p.private_segment_size == 64);
  CHECK(p.kernel_object == 0x1234);
  CHECK(p.kernarg_address == &kernarg);
  CHECK(p.completion_signal.handle == 77);
  CHECK(p.reserved0 == 0);
  CHECK(p.reserved2 == 0);
  uint16_t dims = hsa::grid_dims(c);
  CHECK(dims == 2);
  hsa::publish_packet(&p, hsa::kDispatchHeader, hsa::dispatch_setup(dims));
  CHECK(p.header == hsa::kDispatchHeader);
  CHECK(p.setup == 2);

  LaunchConfig one;
  one.grid = {4, 1, 1};
  one.block = {64, 1, 1};
  CHECK(hsa::grid_dims(one) == 1);
  LaunchConfig three;
  three.grid = {1, 1, 2};
  CHECK(hsa::grid_dims(three) == 3);
}
#endif

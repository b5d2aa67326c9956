// AQL packet encoding (HSA system architecture spec, "Architected Queuing
// Language"). A producer fills every field except the first 32 bits, then
// publishes header | setup << 16 with one atomic release store: the packet
// processor must never see a valid header over stale fields.
#pragma once

#include <hsa/hsa.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <span>

#include "backend.hpp"

namespace lrrt::rt::hsa {

constexpr uint32_t kAqlPacketBytes = 64;
constexpr uint32_t kBarrierAndMaxDeps = 5;

// header: type | barrier | acquire fence scope | release fence scope.
constexpr uint16_t packet_header(hsa_packet_type_t type, bool barrier,
                                 hsa_fence_scope_t acquire, hsa_fence_scope_t release) {
  return uint16_t((uint32_t(type) << HSA_PACKET_HEADER_TYPE) |
                  (uint32_t(barrier ? 1 : 0) << HSA_PACKET_HEADER_BARRIER) |
                  (uint32_t(acquire) << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
                  (uint32_t(release) << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE));
}

// Kernel dispatch: barrier bit set (in-order queue), system-scope fences so
// host-visible memory is coherent before and after.
constexpr uint16_t kDispatchHeader = packet_header(
    HSA_PACKET_TYPE_KERNEL_DISPATCH, true, HSA_FENCE_SCOPE_SYSTEM, HSA_FENCE_SCOPE_SYSTEM);
constexpr uint16_t kBarrierAndHeader = packet_header(
    HSA_PACKET_TYPE_BARRIER_AND, true, HSA_FENCE_SCOPE_SYSTEM, HSA_FENCE_SCOPE_SYSTEM);

constexpr uint16_t dispatch_setup(uint16_t dims) {
  return uint16_t(dims << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS);
}

// Fills a dispatch packet's body (not the header/setup word). grid is in
// work-items per dimension in AQL: lrrt's grid (workgroups) times block.
inline void encode_dispatch(hsa_kernel_dispatch_packet_t* p, const LaunchConfig& c,
                            uint64_t kernel_object, void* kernarg, uint32_t group_segment,
                            uint32_t private_segment, hsa_signal_t completion) {
  p->workgroup_size_x = uint16_t(c.block.x);
  p->workgroup_size_y = uint16_t(c.block.y);
  p->workgroup_size_z = uint16_t(c.block.z);
  p->reserved0 = 0;
  p->grid_size_x = c.grid.x * c.block.x;
  p->grid_size_y = c.grid.y * c.block.y;
  p->grid_size_z = c.grid.z * c.block.z;
  p->private_segment_size = private_segment;
  p->group_segment_size = group_segment;
  p->kernel_object = kernel_object;
  p->kernarg_address = kernarg;
  p->reserved2 = 0;
  p->completion_signal = completion;
}

// Barrier-AND: completes when every dependency signal is 0 (null handles are
// ignored), then decrements completion.
inline void encode_barrier_and(hsa_barrier_and_packet_t* p, std::span<const hsa_signal_t> deps,
                               hsa_signal_t completion) {
  p->reserved0 = 0;
  p->reserved1 = 0;
  for (uint32_t i = 0; i < kBarrierAndMaxDeps; ++i)
    p->dep_signal[i] = i < deps.size() ? deps[i] : hsa_signal_t{0};
  p->reserved2 = 0;
  p->completion_signal = completion;
}

// Publishes the packet: header and setup (or reserved) in one release store.
inline void publish_packet(void* packet, uint16_t header, uint16_t setup) {
  uint32_t word = uint32_t(header) | (uint32_t(setup) << 16);
  std::atomic_ref<uint32_t>(*static_cast<uint32_t*>(packet)).store(word, std::memory_order_release);
}

inline uint16_t packet_type(uint16_t header) {
  return uint16_t((header >> HSA_PACKET_HEADER_TYPE) & ((1u << HSA_PACKET_HEADER_WIDTH_TYPE) - 1));
}

}  // namespace lrrt::rt::hsa

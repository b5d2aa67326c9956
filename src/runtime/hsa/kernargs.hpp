// The kernarg segment of an AMDGPU dispatch: the caller's explicit arguments
// followed by the hidden (implicit) arguments the code object's metadata lists,
// which the runtime fills (block counts, group sizes, remainders, grid dims,
// global offsets = 0, dynamic LDS size, the printf buffer's address; anything
// else zero: services.hpp refuses kernels that list a service lrrt does not
// provide before they are packed). The layout facts
// (where the hidden block starts, how many explicit bytes fit) come from
// lrrt_formats (lrrt/formats/amdgpu.hpp); what needs a launch configuration
// is here. Needs no HSA headers, so unit tests use it too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "backend.hpp"

namespace lrrt::rt::hsa {

// Throws LR_ERROR_INVALID_ARGUMENT naming the kernel and both sizes unless
// explicit_kernarg_size <= args_size <= max_explicit_args_size (the caller
// may include the padding up to the hidden block).
void check_explicit_args(const KernelInfo& info, size_t args_size);

// Number of dimensions a launch uses (1..3): the highest with more than one
// work-item in the grid.
uint16_t grid_dims(const LaunchConfig& config);

// Writes the whole kernarg segment into out (out.size() >= kernarg_size):
// explicit args, zero padding, hidden args from the metadata;
// hidden_printf_buffer gets `printf_buffer`.
void pack_kernargs(const KernelInfo& info, const LaunchConfig& config,
                   std::span<const std::byte> args, std::span<std::byte> out,
                   uint64_t printf_buffer = 0);

}  // namespace lrrt::rt::hsa

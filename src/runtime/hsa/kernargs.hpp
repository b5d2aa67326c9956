// The kernarg segment of an AMDGPU dispatch: the caller's explicit arguments
// followed by the hidden (implicit) arguments the code object's metadata lists,
// which the runtime fills (block counts, group sizes, remainders, grid dims,
// global offsets = 0, dynamic LDS size; anything else zero). Needs no HSA
// headers, so unit tests and the stand-in use it too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "backend.hpp"

namespace lrrt::rt::amdgpu {

// Offset where the hidden arguments begin: the first hidden argument's
// offset, else the kernarg segment size.
uint32_t hidden_args_offset(const KernelInfo& info);

// Throws LR_ERROR_INVALID_ARGUMENT naming the kernel and both sizes unless
// explicit_kernarg_size <= args_size <= hidden_args_offset (the caller may
// include the padding up to the hidden block).
void check_explicit_args(const KernelInfo& info, size_t args_size);

// Number of dimensions a launch uses (1..3): the highest with more than one
// work-item in the grid.
uint16_t grid_dims(const LaunchConfig& config);

// Writes the whole kernarg segment into out (out.size() >= kernarg_size):
// explicit args, zero padding, hidden args from the metadata.
void pack_kernargs(const KernelInfo& info, const LaunchConfig& config,
                   std::span<const std::byte> args, std::span<std::byte> out);

// Reads back one hidden argument by value kind (tests, stand-in); returns
// false when the kernel has no such argument.
bool read_hidden_arg(const KernelInfo& info, std::span<const std::byte> kernargs,
                     std::string_view value_kind, uint64_t* value);

}  // namespace lrrt::rt::amdgpu

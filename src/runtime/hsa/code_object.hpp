// AMDGPU code objects (HSACO): a bounds-checked ELF reader and the
// NT_AMDGPU_METADATA note (msgpack, code object v4/v5/v6) turned into
// KernelInfo. Shared by the hsa backend, `lrrt inspect` and the test stand-in;
// needs only <elf.h> and msgpack-c, no HSA headers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backend.hpp"

namespace lrrt::rt::amdgpu {

// A target ID such as "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-" or
// "gfx90a:xnack-". A feature is '+', '-' or 0 (not specified: "any").
struct TargetId {
  std::string processor;  // gfx90a
  char xnack = 0;
  char sramecc = 0;
  std::string str() const;  // "gfx90a:xnack-" (canonical, sramecc first)
};
TargetId parse_target_id(std::string_view text);
// A code object built for `code` runs on an agent whose ISA is `agent`:
// same processor, and every feature the code object fixes matches the agent.
bool target_compatible(const TargetId& code, const TargetId& agent);
// Higher is a better match (features fixed and equal beat "any").
int target_match_score(const TargetId& code, const TargetId& agent);

struct CodeObjectInfo {
  std::string target;               // amdhsa.target, or built from e_flags
  TargetId target_id;
  uint32_t code_object_version = 0;  // 4, 5, 6 (0 when unknown)
  std::vector<uint64_t> metadata_version;  // amdhsa.version
  std::vector<KernelInfo> kernels;
};

// Throws Error(LR_ERROR_INVALID_IMAGE) on anything malformed, naming what.
CodeObjectInfo parse_code_object(std::span<const std::byte> elf);

// Maps a metadata value kind to the C ABI's argument kind.
lr_arg_kind_t arg_kind_from_value_kind(std::string_view value_kind);

}  // namespace lrrt::rt::amdgpu

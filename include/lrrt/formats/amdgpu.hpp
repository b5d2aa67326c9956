// AMDGPU code objects (HSACO): the NT_AMDGPU_METADATA note (msgpack, code
// object v4/v5/v6) read into KernelInfo, target IDs and their compatibility
// rules, and the kernarg-segment layout facts the metadata implies. Packing
// a kernarg segment for a launch stays in the hsa backend
// (src/runtime/hsa/kernargs.*): it needs a launch configuration.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lrrt/formats/error.hpp"
#include "lrrt/formats/kernel.hpp"

namespace lrrt::formats::amdgpu {

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
// Higher is a better match (features fixed and equal beat "any"); -1 when
// not compatible.
int target_match_score(const TargetId& code, const TargetId& agent);
// The processor named by e_flags' EF_AMDGPU_MACH bits ("gfx90a").
std::string processor_from_e_flags(uint32_t e_flags);

struct CodeObject {
  std::string target;  // amdhsa.target ("amdgcn-amd-amdhsa--gfx90a:xnack+"), or built from e_flags
  TargetId target_id;
  uint32_t code_object_version = 0;        // 4, 5, 6 (0 when unknown)
  std::vector<uint64_t> metadata_version;  // amdhsa.version
  uint32_t e_flags = 0;
  std::vector<KernelInfo> kernels;
  // amdhsa.printf: the OpenCL printf format table, entries verbatim
  // (lrrt/formats/amdgpu_printf.hpp reads them).
  std::vector<std::string> printf_formats;
};

// FormatError("invalid AMDGPU code object: ...") on anything malformed.
CodeObject parse_code_object(std::span<const std::byte> elf);
// False when this build has no msgpack (libmsgpack-dev): parse_code_object
// then says so instead of reading the metadata.
bool can_read_metadata();

// Maps a metadata .value_kind to lrrt's argument kind.
ArgKind arg_kind_from_value_kind(std::string_view value_kind);

// Offset where the hidden arguments begin: the first hidden argument's
// offset, else the kernarg segment size.
uint32_t hidden_args_offset(const KernelInfo& kernel);
// The most explicit-argument bytes a caller may pass: up to the hidden
// block, or the explicit size rounded up to the segment's alignment (a packed
// struct's sizeof) when there is no hidden block.
uint32_t max_explicit_args_size(const KernelInfo& kernel);
// Reads one argument by value kind from a packed kernarg segment (tests,
// stand-in); false when the kernel has no such argument or it lies outside.
bool read_hidden_arg(const KernelInfo& kernel, std::span<const std::byte> kernargs,
                     std::string_view value_kind, uint64_t* value);

}  // namespace lrrt::formats::amdgpu

// Which code object of a file runs on a device, and why: the one rule the
// runtime's backends follow and `lrrt run` reports ("code_object_entry" in
// its results). A plain code object is its own choice, once checked against
// the device; a container's entries are ranked:
//  - AMD: the ISA must match the agent's processor, and every feature the
//    entry fixes (xnack, sramecc) must match the agent's; an entry fixing a
//    feature beats one that leaves it "any".
//  - NVIDIA: exact SASS (the device's SM; an arch-specific sm_90a first),
//    then compatible SASS (same major version, highest minor no higher than
//    the device's; never another SM's arch-specific code), then PTX for the
//    driver to JIT (the highest target the device runs).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lrrt/formats/amdgpu.hpp"
#include "lrrt/formats/container.hpp"

namespace lrrt::formats {

struct Selection {
  CodeObjectEntry entry;  // decoded: entry.bytes is the code object to load
  // "entry 'sm_90 cubin' of fatbin 0 in section .nv_fatbin: exact SASS for
  // sm_90", or "the whole file: a cubin for sm_90".
  std::string description;
};

// FormatError naming the device and the targets present when nothing in the
// file runs there (or the file is malformed).
Selection select_for_amdgpu(std::span<const std::byte> image, const amdgpu::TargetId& agent);
// A host binary's .hip_fatbin holds one bundle per translation unit: the
// best entry of every bundle that has kernels for the agent (at least one).
std::vector<Selection> select_parts_for_amdgpu(std::span<const std::byte> image, const amdgpu::TargetId& agent);
// The sentence for what was loaded: one part's description, or "3 fatbins
// with kernels, each from its best entry for the device: ..." (container:
// "fatbins", "bundles").
std::string describe_parts(const std::vector<Selection>& parts, std::string_view container);
// A device as `lrrt inspect --runs-on` names it: an NVIDIA device's SM
// ("sm_90") or an AMD agent's target ID ("gfx90a", "gfx90a:sramecc+:xnack-";
// a feature left out matches either setting).
struct DeviceTarget {
  std::string name;                    // as given
  uint32_t cuda_sm = 0;                // NVIDIA: 90 for sm_90 (0 for AMD)
  std::optional<amdgpu::TargetId> agent;  // AMD
};
// FormatError saying what it takes when `text` names no device.
DeviceTarget parse_device_target(std::string_view text);
// Whether the entry choice above could take code of this format and target
// ("sm_90a", "compute_90", "gfx90a:xnack+") for the device: the same rules,
// entry by entry (select_for_amdgpu / select_parts_for_cuda use it). Host
// code never runs on a GPU device.
bool runs_on(Format format, std::string_view target, const DeviceTarget& device);

// The first part select_parts_for_cuda chooses.
Selection select_for_cuda(std::span<const std::byte> image, uint32_t device_sm, std::string_view device);
// A library holds one fatbin per translation unit, each with its own
// kernels: the best entry of every fatbin that has kernels for the device
// (at least one part; FormatError when nothing runs).
std::vector<Selection> select_parts_for_cuda(std::span<const std::byte> image, uint32_t device_sm,
                                             std::string_view device);

}  // namespace lrrt::formats
